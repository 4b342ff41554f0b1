"""The one reader of YAML and JSON manifests: files, directories, stdin, Lists, lines.

Why one: ``check`` PATHS, ``--objects`` and ``--nodes`` must accept and refuse the same input,
the way kubectl does, and every object must know its file and line.

- :mod:`.reader`: ``load(paths, stdin, stdin_name) -> Manifests`` (documents, problems,
  files), ``Document`` (``obj``, ``line``, ``line_of(field)``), and the lower steps
  ``read`` (files to ``Source``) and ``split`` (a ``Source`` to documents);
- :mod:`.files`: ``read_file`` (one named file: regular files only, at most a limit), which
  config files share; the reader's own limits are in :mod:`.limits`;
- :mod:`.errors`: ``ManifestError`` (``file:line: reason``), ``Refused`` (a line and a reason,
  from the decoders), ``show`` (a value in a message);
- :mod:`.decode`: text to values with kubectl's rules and limits, the one entry point, built
  from :mod:`.encoding` (bytes to text), :mod:`.jsonstream` and :mod:`.yamlstream` (the two
  stream forms), :mod:`.scalars` (go-yaml v2's scalars), :mod:`.limits` (file size, depth,
  aliasing), :mod:`.parser` (libyaml's event parser, and the pure-Python one behind it,
  which reads with go-yaml's rules where libyaml's differ) and
  :mod:`.syntax` (YAML syntax errors in our words); :mod:`.raw` is a decoded document;
- :mod:`.lines`: the line of a field path; :mod:`.writer`: ``dump_all`` for ``mutate``;
- :mod:`.tree`: ``copy_tree`` and ``depth`` for trees too deep to recurse on.
"""
