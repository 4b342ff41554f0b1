"""The live cluster against the placement policy: the scan, its results, and the reports.

Why a package of its own: ``audit`` reads a whole cluster in pages and admits each object
through the dry-run library, which neither the server nor ``check`` does; it must stay
usable as a library (the CLI only parses options, prints and exits).

- :mod:`.scan`: ``scan(source, config, namespaces) -> Audit``, the objects admitted one page
  at a time, pods reported on their controller;
- :mod:`.recreate`: an object as stored turned back into the CREATE admission saw (not
  "live": across the packages that word means the cluster as a command's input,
  :mod:`webhooks.cli.live`);
- :mod:`.results`: ``Audit``, ``Result`` (merged per subject, policy, rule and outcome),
  ``Ref`` (not "model", which names the export's CEL merge model);
- :mod:`.render`: ``text``, ``json`` and ``junit`` (a renderer is called ``render`` in
  every package);
- :mod:`.reports`: OpenReports (or wgpolicyk8s) reports, one per namespace and one for the
  cluster; :mod:`.publish`: server-side apply of them and deletion of stale ones.
"""
