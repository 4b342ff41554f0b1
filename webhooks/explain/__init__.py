"""The scheduler-filter and node-lifecycle simulator behind ``explain``.

Why apart from the dry-run: it answers a different question (where can this run, what
happens when nodes fail) from the dry-run's admitted objects, and grows on its own.

Operators who taint and dedicate nodes need the answer before they deploy, and the rules
are easy to get wrong: several taints act together as a filter, NoExecute evicts running
pods (at once, after ``tolerationSeconds``, or never), PreferNoSchedule is only a
preference, and the node lifecycle controller stops evicting altogether in some disrupted
zones. One module per concern, all on plain dicts, after each pod has gone through the
admission chain exactly as ``check`` admits it:

* :mod:`.nodes` — the node inventory; :mod:`.templates` — nodes that do not exist yet
  (NodePools, node groups, Kueue ResourceFlavors); :mod:`.queues` — which flavors Kueue
  may give a pod; :mod:`.pods` — the admitted pod;
* :mod:`.fit` — a pod against a node (:mod:`.reasons` is what it answers with;
  :mod:`.requirements` the label algebra for NodePools);
* :mod:`.failure` — what the node lifecycle controller does when nodes fail;
* :mod:`.coverage` — which DaemonSets run on tainted nodes and templates;
* :mod:`.explanation` puts the answers together, :mod:`.inventory` reads them from
  documents, :mod:`.render` renders them; :mod:`webhooks.cli.explain` is the command.
"""
