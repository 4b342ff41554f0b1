"""A small fake Kubernetes API server on 127.0.0.1 that speaks the API's real JSON shapes.

Why one fake: the cluster source and ``webhook-config --inject`` both go through the real
``kubernetes`` client (kubeconfig loading, bearer token, content types, query parameters),
and the only way to see what they put on the wire is to be the server. Why it lives in
``bench/``: the benchmarks serve their clusters with it (the audit's pods, the Namespaces
whose annotations change under a running server) and must not import the tests, while the
tests may use what the benchmarks use; the product package carries no test stand-ins.
The tests' ``tests/fakeapi.py`` adds the OpenReports CRD schema check
(:attr:`~bench.fakeapi.verbs.Verbs.schema`).

One concern per module, each imported from where it lives (nothing is re-exported here):

- :mod:`~bench.fakeapi.resources`: what is served, at which paths, and the route to it;
- :mod:`~bench.fakeapi.objects`: the API's object shapes (``Status``, sample objects,
  what creation adds);
- :mod:`~bench.fakeapi.kubeconfig`: the token the fake accepts and the kubeconfig with it;
- :mod:`~bench.fakeapi.ports`: holding a port without listening on it;
- :mod:`~bench.fakeapi.store`: the objects at their resourceVersions and the watch history;
- :mod:`~bench.fakeapi.faults`: the switches that make the fake misbehave;
- :mod:`~bench.fakeapi.verbs`: what the API answers to each verb;
- :mod:`~bench.fakeapi.transport`: HTTP, requests in and answers and watch streams out;
- :mod:`~bench.fakeapi.server`: :class:`~bench.fakeapi.server.FakeApiServer`, its start,
  stop and the requests it received, and :func:`~bench.fakeapi.server.running`.
"""
