"""The fleet-scale bench: the webhooks beside the in-tree plugins, native policies and Kyverno on
a real control plane with a simulated fleet (``make scale``; docs/scale.md)."""
