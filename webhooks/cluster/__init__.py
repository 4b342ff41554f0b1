"""Where cluster objects come from: files (``files``) or the API server (``api``).

Why two modules: the offline CLI reads files and must never load the ``kubernetes`` client,
which only the API source imports.
"""
