"""The live cluster against the placement policy: the scan, its results, and the reports.

Why a package of its own: ``audit`` reads a whole cluster in pages and admits each object
through the dry-run library, which neither the server nor ``check`` does; it must stay
usable as a library (the CLI only parses options, prints and exits).

- :mod:`.scan`: ``scan(source, config, namespaces) -> Audit``, the objects admitted one page
  at a time, pods reported on their controller;
- :mod:`.live`: an object as stored turned back into the CREATE admission saw;
- :mod:`.model`: ``Audit``, ``Result`` (merged per subject, policy, rule and outcome), ``Ref``;
- :mod:`.render`: ``text``, ``json`` and ``junit``;
- :mod:`.reports`: OpenReports (or wgpolicyk8s) reports, one per namespace and one for the
  cluster; :mod:`.publish`: server-side apply of them and deletion of stale ones.
"""
