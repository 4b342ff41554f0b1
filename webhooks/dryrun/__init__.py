"""The offline engine behind ``check``, ``mutate``, ``test`` and ``audit``: objects in, report out.

Why a package of its own: it turns manifests into admission requests and renders what came
back, yet must run exactly the core the server runs; it neither reads files nor exits.
"""
