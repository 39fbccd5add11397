"""``--notify URL``: a small JSON document POSTed on a run's start, a stuck move,
failure, cancel and finish — Slack-compatible (``text``), with the fields a bot can read::

    {"text": "reassign-kit: run r-1 started: 12 moves (paced)", "event": "started",
     "run_id": "r-1", "plan": "plan.json", ...}

Posts go out from one background thread through a bounded queue (a slow or dead webhook never
slows a run: a full queue drops the post, and the end waits at most ``close_timeout_s``); a
failed post is said once on stderr and never fails the run. The URL is a secret (a Slack
webhook's path is its token): it is never journaled, logged or echoed — messages name only
its host."""

from __future__ import annotations

import json
import queue
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

EVENTS = ("started", "stuck", "failed", "cancelled", "finished")
MAX_STUCK_POSTS = 20  # per run: a wide stall is one alert storm at most this big


def host_of(url: str) -> str:
    """What a message may say of the URL: its scheme and host (the path and query, where a
    webhook keeps its token, and any user info are never shown)."""
    try:
        parts = urllib.parse.urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}" if parts.hostname else "?"
    except ValueError:
        return "?"


def check_url(url: str) -> str:
    """An http(s) URL with a host and a valid port, or ValueError naming the problem (never
    the URL: its path is a secret). Checked up front because http.client refuses such URLs
    only when the first post goes out, on the notifier's thread."""
    # urlsplit silently drops tabs and newlines, and http.client refuses spaces and control
    # characters later: every character must be printable ASCII
    if not url or any(not 0x21 <= ord(c) <= 0x7E for c in url):
        raise ValueError(
            "--notify takes an http:// or https:// URL without spaces or control characters "
            "(percent-encode them)"
        )
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError: not a number, or out of range
    except ValueError:
        raise ValueError("--notify takes an http:// or https:// URL with a valid port") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("--notify takes an http:// or https:// URL")
    if port is not None and not 0 < port < 65536:
        raise ValueError("--notify: the URL's port must be 1-65535")
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is a failed delivery: following it would re-send (or drop, as a GET) the post to
    wherever the answer points, another host or scheme included."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        return None


def failure_reason(e: BaseException) -> str:
    """Why a post failed, without the URL (urllib's and http.client's messages may quote it)."""
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code}" + (": redirects are not followed" if 300 <= e.code < 400 else "")
    reason = getattr(e, "reason", None) if isinstance(e, urllib.error.URLError) else e
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    if isinstance(reason, TimeoutError):
        return "timed out"
    return type(reason if isinstance(reason, BaseException) else e).__name__


class Notifier:
    """POSTs notifications to ``url`` from a background thread (``post`` never blocks)."""

    def __init__(self, url: str, *, timeout_s: float = 5.0, close_timeout_s: float = 10.0):
        self.url = check_url(url)
        self.timeout_s = timeout_s
        self.close_timeout_s = close_timeout_s
        self.sent: list[dict[str, Any]] = []  # what was delivered (2xx), for the caller
        self.failed = 0
        self._stuck = 0
        self._warned = False
        self._q: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=100)
        self._opener = urllib.request.build_opener(_NoRedirect)
        self._thread = threading.Thread(target=self._loop, name="rk-notify", daemon=True)
        self._thread.start()

    def post(self, event: str, text: str, **fields: Any) -> None:
        if event == "stuck":
            self._stuck += 1
            if self._stuck > MAX_STUCK_POSTS:
                return
        doc = {"text": f"reassign-kit: {text}", "event": event, **fields}
        try:
            self._q.put_nowait(doc)
        except queue.Full:
            self.failed += 1

    def close(self) -> None:
        """Deliver what is queued (bounded by ``close_timeout_s``), then stop."""
        try:
            self._q.put(None, timeout=self.close_timeout_s)
        except queue.Full:
            return
        self._thread.join(self.close_timeout_s)

    def _loop(self) -> None:
        while True:
            doc = self._q.get()
            if doc is None:
                return
            body = json.dumps(doc, default=str).encode()
            req = urllib.request.Request(
                self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
            )
            try:
                with self._opener.open(req, timeout=self.timeout_s) as resp:
                    resp.read()
                self.sent.append(doc)
            except Exception as e:  # noqa: BLE001 - a thread's error would print a traceback
                self.failed += 1
                if not self._warned:
                    self._warned = True
                    print(
                        f"reassign-kit: --notify to {host_of(self.url)} failed "
                        f"({failure_reason(e)}); the run goes on",
                        file=sys.stderr,
                    )

    # -- a paced run's journal events -> notifications ------------------------------------
    def on_event(self, e: Mapping[str, Any]) -> None:
        """``Run.subscribe`` hook: run_started, stuck and run_finished become posts."""
        name = e.get("event")
        run_id = e.get("run_id", "")
        if name == "run_started":
            n = e.get("moves")
            self.post(
                "started",
                f"run {run_id} started" + (f": {n} moves" if n is not None else ""),
                run_id=run_id,
            )
        elif name == "stuck":
            tp = f"{e.get('topic')}-{e.get('partition')}"
            why = e.get("reason") or f"no progress for {e.get('no_progress_s')} s"
            self.post(
                "stuck",
                f"run {run_id}: {tp} is stuck ({why})",
                run_id=run_id,
                partition=tp,
                no_progress_s=e.get("no_progress_s"),
                reason=why,
            )
        elif name == "run_finished":
            event, text = finished_text(e)
            self.post(
                event,
                f"run {run_id} {text}",
                run_id=run_id,
                state=e.get("state"),
                **{k: e.get(k) for k in ("completed", "failed", "cancelled", "pending")},
            )


def finished_text(e: Mapping[str, Any]) -> tuple[str, str]:
    """(event, words) for a run_finished journal event."""
    state = e.get("state")
    counts = (
        f"{e.get('completed', 0)} completed, {e.get('failed', 0)} failed, "
        f"{e.get('cancelled', 0)} cancelled, {e.get('pending', 0)} not submitted"
    )
    if state in ("failed", "deadline") or e.get("error"):
        return "failed", f"failed: {e.get('error') or state} ({counts})"
    if e.get("cancelled") or e.get("rolling_back"):
        return "cancelled", f"was cancelled ({counts})"
    return "finished", f"finished ({state}: {counts})"
