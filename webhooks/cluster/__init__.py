"""Where cluster objects come from: files (``files``) or the API server (``api``, ``listing``).

Why three modules: the offline CLI reads files and must never load the ``kubernetes``
client, which only the API sources import; the server keeps small watched caches
(``api``), while ``audit`` and ``explain`` read whole collections once, in pages
(``listing``). ``failures`` names a failed request the same way for all of them.
"""
