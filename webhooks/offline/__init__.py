"""The offline engine behind ``check`` and ``mutate``: manifests in, admission's answer out.

Why a package of its own: it reads files and YAML (which the core must not), yet it must run
exactly the core the server runs, so it only turns manifests into admission requests, calls
:class:`~webhooks.core.admission.Admission`, and renders what came back.
"""
