"""The offline engine behind ``check``, ``mutate``, ``test`` and ``audit``: objects in, report out.

Why a package of its own: it turns manifests into admission requests and renders what came
back, yet must run exactly the core the server runs. It never exits. Its words: a
:mod:`.report` of findings, :mod:`.render` for the check renderers and
:mod:`.policytest_render` for the policy tests' (the ``test`` command's feature is called
``policytest`` here), ``admit`` for running the chain over one object.

The engine reads no files: documents and cluster objects come in already read. The one
exception is the policy tests (:mod:`.suites`), whose suite files name further files
(config, objects, resources); it reads them all through the one manifest reader
(:mod:`webhooks.manifests`, its directory walk included) and the config file reader, never
with a reader of its own.
"""
