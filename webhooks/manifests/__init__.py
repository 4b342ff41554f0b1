"""The one reader of YAML and JSON manifests: files, directories, stdin, Lists, lines.

Why one: ``check`` PATHS, ``--objects`` and ``--nodes`` must accept and refuse the same input,
the way kubectl does, and every object must know its file and line.
"""
