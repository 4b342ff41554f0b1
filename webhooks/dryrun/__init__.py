"""The offline engine behind ``check``, ``mutate``, ``test`` and ``audit``: objects in, report out.

Why a package of its own: it turns manifests into admission requests and renders what came
back, yet must run exactly the core the server runs. It never exits. The engine reads no
files: documents and cluster objects come in already read. The one exception is the policy
tests (:mod:`.suites`), whose suite files name further files (config, objects,
resources); it reads them all through the one manifest reader (:mod:`webhooks.manifests`,
its directory walk included) and the config file reader, never with a reader of its own.
"""
