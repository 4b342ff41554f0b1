"""The real control plane, built from the pinned release and run by hand, by tests and by benches.

It lives beside ``webhooks``, ``tests`` and ``bench`` rather than under ``tests`` because the
measurements in ``bench/`` run on the same API servers the suite asks, and ``make cluster``
starts one for a person. It is not part of the installed package: it needs Go, the module
proxy and the source tree.
"""
