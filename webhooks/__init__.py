"""placement-webhooks: Kubernetes admission webhooks for where pods may run."""

__version__ = "0.1.0"
