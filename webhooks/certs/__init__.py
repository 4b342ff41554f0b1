"""Certificates: the serving chain's material, its rotation plan, and the Secret that keeps it.

One room for everything TLS the suite makes or renews, so the rules about keys, lifetimes and
bundles live together: :mod:`~webhooks.certs.pki` makes and inspects a chain,
:mod:`~webhooks.certs.rotation` decides what a stored chain needs next, and
:mod:`~webhooks.certs.managed` keeps that chain in a Secret and the caBundles in step.
"""
