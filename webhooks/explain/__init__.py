"""The scheduler-filter and node-lifecycle simulator behind ``explain``.

Why apart from the dry-run: it answers a different question (where can this run, what
happens when nodes fail) from the dry-run's admitted objects, and grows on its own.
"""
