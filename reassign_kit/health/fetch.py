"""One bounded HTTP GET for the health sources: a whole-request deadline (a server that trickles
bytes is as slow as one that never answers), a size bound, and every failure as one
``FetchError`` whose text says what went wrong — never an exception of another kind, never a
partial body."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request

MAX_BYTES = 16 * 1024 * 1024  # an exporter's page or a query's answer; more is garbage


class FetchError(Exception):
    """The endpoint is down, slow, or answered something unusable (the message says which)."""


def get(url: str, timeout: float, max_bytes: int = MAX_BYTES) -> bytes:
    """The body of ``url`` within ``timeout`` seconds in all, or FetchError."""
    deadline = time.monotonic() + timeout
    try:
        req = urllib.request.Request(url, headers={"Accept": "text/plain, application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            if resp.status != 200:
                raise FetchError(f"HTTP {resp.status}")
            chunks: list[bytes] = []
            size = 0
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise FetchError(f"timeout: no complete answer within {timeout:g}s")
                sock = _socket_of(resp)
                if sock is not None:
                    sock.settimeout(left)
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise FetchError(f"answer larger than {max_bytes} bytes")
                chunks.append(chunk)
            if time.monotonic() > deadline:
                raise FetchError(f"timeout: no complete answer within {timeout:g}s")
            return b"".join(chunks)
    except FetchError:
        raise
    except urllib.error.HTTPError as e:
        raise FetchError(f"HTTP {e.code}") from None
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise FetchError(f"timeout: no answer within {timeout:g}s") from None
        raise FetchError(f"unreachable: {reason}") from None
    except TimeoutError:
        raise FetchError(f"timeout: no complete answer within {timeout:g}s") from None
    except (OSError, ValueError) as e:  # reset, bad status line, malformed URL ...
        raise FetchError(f"{type(e).__name__}: {e}") from None
    except Exception as e:  # noqa: BLE001 - http.client's odd errors (IncompleteRead, ...)
        raise FetchError(f"{type(e).__name__}: {e}") from None


def _socket_of(resp: object) -> socket.socket | None:
    fp = getattr(resp, "fp", None)
    raw = getattr(fp, "raw", None)
    return getattr(raw, "_sock", None)
