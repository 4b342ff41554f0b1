"""``doctor``: look at a live installation and say, check by check, what is wrong and the fix.

Why: every fault it looks for (an expired caBundle, a Service with no endpoints, the in-tree
twin of a plugin also on, a fail-closed rule that would deadlock Nodes, replicas below the
PDB) otherwise shows itself as failing pod creates. Each check is a function of what was
read from the cluster (:class:`~webhooks.install.doctor.findings.Installation`) to one or
more :class:`~webhooks.install.doctor.findings.Finding`; the CLI prints them and exits by
the worst.
"""
