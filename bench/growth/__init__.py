"""The growth bench's surfaces: one module per input surface, each with a ``SURFACES`` list.

Why a package of modules found by name: every surface (HTTP heads, reviews per plugin,
quantities, config files, manifests, CEL, the probe, the certificate sidecar, reloads) is
built and measured beside the code it exercises, and ``bench.growth_bench`` picks up
whatever modules are here, so adding a surface never edits a shared list.
"""
