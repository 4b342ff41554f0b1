"""The fleet-scale bench on the real control plane: modes, storms, cost, faults."""
