"""HTTP heads and bodies: what the worker's request reader costs per byte, and per request
through a real server.

Why these: the reader (:mod:`webhooks.server.reader`) is the one code every client's bytes
reach before anything is checked, so its cost must follow the bytes whatever their shape.
A head grows by its number of header lines and by the length of one line, and arrives in
reads of any size (a byte at a time is the worst for finding its end); past ``MAX_HEAD``
or ``MAX_HEADERS`` it is refused, and those surfaces are flat or linear up to the refusal.
A review body is buffered whole (``MAX_BODY``), and a larger one drained without being
kept (``DRAIN_LIMIT``): linear time, flat memory. The in-process surfaces feed many
requests per sample, each new, so one sample lasts long enough to time.

The end-to-end surfaces start a real server (``python -m bench.serve wsgi``: the worker
over TLS, one worker, a bare WSGI app so that nothing but HTTP is measured) for each
sample and send requests over one keep-alive connection: the time is the client's wall
time, the memory the worker's peak RSS (``VmHWM``) over its RSS before the requests.
"""

from __future__ import annotations

import atexit
import http.client
import itertools
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.growth.measure import Sample, Surface, in_process
from bench.servers import memory_mib, start, stop, workers
from webhooks.server.framing import MAX_BODY, MAX_HEAD, MAX_HEADERS
from webhooks.server.reader import NEED_DATA, PAUSED, Refusal, Request, RequestReader

_fresh = itertools.count()
#: A TCP segment's payload on a typical link: how a head arrives in the worker's reads.
SEGMENT = 1460
#: What one read of a TLS socket returns at most (one TLS record).
RECORD = 16 * 1024
#: What the worker asks of a socket per read.
READ = 65536

Feed = list[list[bytes]]


def _outcome(pieces: list[bytes]) -> str:
    """Feed one request's pieces to a new reader, as the worker does; what it made of them."""
    reader = RequestReader()
    for piece in pieces:
        reader.receive_data(piece)
        while (event := reader.next_event()) is not NEED_DATA:
            if isinstance(event, Request):
                return "request"
            if isinstance(event, Refusal):
                return f"refusal {event.status}"
            if event is PAUSED:
                return "paused"
    return "waiting"


def _run(expected: str) -> Callable[[Feed], object]:
    def run(requests: Feed) -> object:
        for pieces in requests:
            got = _outcome(pieces)
            if got != expected:
                raise AssertionError(f"expected {expected}, got {got}")
        return None

    return run


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _head(lines: list[bytes], body: int = 0) -> bytes:
    start = [b"POST /mutate?timeout=10s HTTP/1.1", b"Host: svc.ns.svc:443"]
    framing = [b"Content-Type: application/json", b"Content-Length: %d" % body]
    return b"\r\n".join(start + lines + framing) + b"\r\n\r\n"


def _header_lines(count: int) -> Callable[[int], Feed]:
    """``count`` requests, each a head of ``n`` header lines in segment-sized reads."""

    def build(n: int) -> Feed:
        out = []
        for _ in range(count):
            tag = next(_fresh)
            lines = [b"X-Header-%d: value-%d-%d" % (i, tag, i) for i in range(n)]
            out.append(_cut(_head(lines), SEGMENT))
        return out

    return build


def _line_length(count: int, piece: int, distinct: bool = True) -> Callable[[int], Feed]:
    """``count`` requests, each a head with one header value ``n`` bytes long, in ``piece``s
    (each head its own, or the same reads each time: the reader keeps nothing between them)."""

    def build(n: int) -> Feed:
        out = []
        for _ in range(count if distinct else 1):
            value = b"%d-" % next(_fresh) + b"v" * n
            out.append(_cut(_head([b"X-Long: " + value[:n]]), piece))
        return out if distinct else out * count

    return build


def _body(count: int) -> Callable[[int], Feed]:
    """``count`` requests of a review body of ``n`` bytes arriving in the worker's reads.

    The same reads each time (the reader keeps nothing between requests, and never changes
    what it is given), so the input of a sample is one body, not ``count`` of them.
    """

    def build(n: int) -> Feed:
        body = b"%d" % next(_fresh) + b"x" * n
        return [_cut(_head([], n) + body[:n], READ)] * count

    return build


#: Requests per sample of each in-process surface: enough that a sample at 2N lasts 0.1 s
#: or more here.
SURFACES_IN_PROCESS = [
    Surface(
        "http head: header lines, read by segment (x2000 heads)",
        "header lines",
        (MAX_HEADERS - 3) // 2,  # 2N and the three framing headers stay within the limit
        in_process(_header_lines(2000), _run("request")),
    ),
    Surface(
        "http head: past MAX_HEADERS, refused 431 (x600 heads)",
        "header lines",
        1_000,  # 2N lines stay within MAX_HEAD: the count refuses them, not the size
        in_process(_header_lines(600), _run("refusal 431")),
    ),
    Surface(
        "http head: one header's length, read by segment (x1000 heads)",
        "bytes",
        MAX_HEAD // 4,
        in_process(_line_length(1000, SEGMENT), _run("request")),
    ),
    Surface(
        "http head: one header's length, a byte per read (x8 heads)",
        "bytes",
        MAX_HEAD // 8,
        in_process(_line_length(8, 1), _run("request")),
    ),
    Surface(
        "http head: past MAX_HEAD, by TLS record, refused 431 (x1000)",
        "bytes",
        2 * MAX_HEAD,
        in_process(_line_length(1000, RECORD, distinct=False), _run("refusal 431")),
    ),
    Surface(
        "http body: a review body through the reader (x500 bodies)",
        "bytes",
        MAX_BODY // 4,
        in_process(_body(500), _run("request")),
    ),
    Surface(
        "http body: past MAX_BODY, drained and dropped (x500 bodies)",
        "bytes",
        4 * MAX_BODY // 3,
        in_process(_body(500), _run("request")),
    ),
]


# --------------------------------------------------------------------------- end to end

_certs: list[Path] = []


def certificates() -> Path:
    """A CA and serving certificate for localhost, made once per bench run."""
    if not _certs:
        from webhooks.certs.pki import generate

        directory = Path(tempfile.mkdtemp(prefix="growth-http-"))
        generate(directory, hosts=["localhost", "127.0.0.1"])
        _certs.append(directory)
        atexit.register(cleanup)
    return _certs[0]


def _worker_kib(master: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the one worker of ``master``, in KiB."""
    (pid,) = workers(master)
    rss, hwm = memory_mib(pid)
    return rss * 1024, hwm * 1024


def end_to_end(
    count: int, request: Callable[[int], tuple[bytes, dict[str, str]]]
) -> Callable[[int], Sample]:
    """A sampler: a fresh server, ``count`` requests of size ``n`` on one connection.

    ``request(n)`` gives a body and extra headers; every answer must be 200.
    """

    def sample(n: int) -> Sample:
        certs = certificates()
        proc, port = start("wsgi", certs, workers=1)
        try:
            ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
            conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=60)
            body, headers = request(n)
            conn.request("POST", "/mutate", body=body, headers=headers)  # warm-up
            conn.getresponse().read()
            before, _ = _worker_kib(proc.pid)
            started = time.perf_counter()
            for _ in range(count):
                conn.request("POST", "/mutate", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    raise AssertionError(f"HTTP {response.status}")
            seconds = time.perf_counter() - started
            _, peak = _worker_kib(proc.pid)
            conn.close()
        finally:
            stop(proc)
        return Sample(seconds, int(max(peak - before, 0) * 1024))

    return sample


def _review(n: int) -> bytes:
    pad = b"p" * max(n - 80, 0)
    return b'{"request":{"uid":"growth","pad":"' + pad + b'"},"kind":"AdmissionReview"}'


def _review_body(n: int) -> tuple[bytes, dict[str, str]]:
    return _review(n), {"Content-Type": "application/json"}


def _long_header(n: int) -> tuple[bytes, dict[str, str]]:
    return _review(100), {"Content-Type": "application/json", "X-Long": "v" * n}


SURFACES_END_TO_END = [
    Surface(
        "http body over TLS, end to end (bare app, x20 reviews)",
        "bytes",
        MAX_BODY // 8,
        end_to_end(20, _review_body),
    ),
    Surface(
        "http head over TLS, end to end: one header's length (x500)",
        "bytes",
        MAX_HEAD // 4,
        end_to_end(500, _long_header),
    ),
]

SURFACES = SURFACES_IN_PROCESS + SURFACES_END_TO_END


def cleanup() -> None:
    """Remove the certificates made for the end-to-end surfaces."""
    for directory in _certs:
        shutil.rmtree(directory, ignore_errors=True)
    _certs.clear()
