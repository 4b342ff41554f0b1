"""The scale bed's benchmarks: the webhooks beside their peers on a simulated fleet."""
