"""The scale bed's benchmarks: a kwok fleet on the real control plane, and admission there."""
