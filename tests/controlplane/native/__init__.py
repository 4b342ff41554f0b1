"""Native admission policy on the real API server: install what ``export`` printed, send the
same requests to a native and a webhook API server, and compare what each stored and said.

Test infrastructure, like the harness beside it: :mod:`.rest` speaks to an API server and
keeps the ``Warning`` headers; :mod:`.install` applies exported objects and waits until the
API server runs them; :mod:`.observe` sends one case and records the answer; the
``test_native_*`` modules decide what must agree.
"""
