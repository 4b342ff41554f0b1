"""The chart and the suite's safety promises, proved on the real control plane."""
