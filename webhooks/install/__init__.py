"""Installing into a cluster: the webhook configurations, the probe, and the checks on both.

What the API server is told (:mod:`~webhooks.install.webhookconfig`) and whether what it was
told works (:mod:`~webhooks.install.probe`) are one concern seen from two sides: both read the
same configurations, Services and caBundles, so they sit together.
"""
