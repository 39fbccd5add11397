"""Full garbage collections between polls, not in the middle of one; once after a bulk step,
not at every quarter of growth during it.

CPython collects its oldest generation — every container object of the process, a plan's
moves included — when enough young collections happened and the long-lived objects grew by a
quarter since the last full collection. With a large plan in memory that is a pause of a
tenth of a second per 100,000 partitions, wherever the allocation that triggers it happens:
in a poll that turns 2,000 moves over, it was most of that poll (the poll's p99).

``deferred()`` (``between_polls()``) wraps one poll: inside it, the automatic full collection
waits (the
oldest generation's threshold is set out of reach; the young generations are collected as
always); when the last poll in progress ends, the thresholds are put back and CPython's own
rule is asked at once (``_collect_if_due``): a full collection runs there, before the loop
sleeps, exactly when it would have run in the poll. Nothing is collected less often and
nothing is forced. ``defer_full_collections`` does the same around one call that builds
objects for the whole plan (the preflight, the legacy request): the full collections that
its growth would have started, each walking everything built so far (at 100,000 partitions,
two fifths of the legacy request), come down to at most one, at its end.

``freeze_heap()`` / ``thaw_heap()`` bracket a paced run's loop: what exists when the loop
starts (the plan, the run's moves, a simulated cluster) is left out of the full collections
while it runs (``gc.freeze``) and put back at its end (``gc.unfreeze``): it lives for the
whole run, so walking it at every full collection found nothing (at 100,000 partitions a
quarter of the collector's time). Freed as always when no longer referenced; only a cycle
among those objects waits for the run's end. Left alone when something else froze objects
already (a pre-fork server's heap stays frozen). Process-wide (the collector is): runs in several threads nest, the
thresholds go back when the last poll ends, and a process whose collector is disabled (or
whose thresholds say never) is left as it is.
"""

from __future__ import annotations

import functools
import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

NEVER = 2**31 - 1  # an oldest-generation threshold never reached
_lock = threading.Lock()
_depth = 0  # polls in progress (threads)
_saved: tuple[int, ...] | None = None  # the thresholds to put back


@contextmanager
def deferred() -> Iterator[None]:
    """Defer the automatic full collection until the poll (or call) this wraps ends; then run
    it if it is due (see the module docstring)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            t = gc.get_threshold()
            if gc.isenabled() and t[0] > 0 and len(t) == 3 and t[2] < NEVER:
                _saved = t
                gc.set_threshold(t[0], t[1], NEVER)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            saved = _saved if _depth == 0 else None
            if saved is not None:
                _saved = None
                gc.set_threshold(*saved)
        if saved is not None:
            _collect_if_due(saved)


class _Allocation:
    """A container object made fresh each time (lists and dicts may come from free lists,
    which the collector does not count)."""


@contextmanager
def between_polls(owner: object | None = None) -> Iterator[None]:
    """One poll of ``owner``'s loop inside ``deferred()``. When the full collection due ran at
    its end and ``owner`` froze the heap (``freeze_heap``), what survived it joins the frozen
    objects: it was walked and found alive, and the next full collections walk only what came
    since (the run's moves done and the simulated partitions they changed grow the heap by a
    few objects each: at 200,000 partitions a third of the run's CPU time went to walking
    them again at every full collection). Freed by reference counting as always; a cycle
    among them waits for the run's end (``thaw_heap``), like the plan's."""
    full = gc.get_stats()[-1]["collections"]
    with deferred():
        yield
    if gc.get_stats()[-1]["collections"] != full:
        with _lock:
            if owner is not None and owner in _frozen_by:
                gc.freeze()


# the runs whose loop froze the heap (threads); weak: a run that never finished (killed in a
# test) does not keep the heap frozen, nor itself alive
_frozen_by: weakref.WeakSet = weakref.WeakSet()


def freeze_heap(owner: object) -> None:
    """``owner``'s loop starts: freeze the heap unless frozen already (see the module)."""
    global _frozen_by
    with _lock:
        if not gc.isenabled():
            return
        if gc.get_freeze_count() == 0:  # nothing frozen (any earlier owner's was thawed)
            gc.freeze()
            _frozen_by = weakref.WeakSet()
        elif not _frozen_by:
            return  # someone else's frozen objects: not ours to thaw later
        _frozen_by.add(owner)


def thaw_heap(owner: object) -> None:
    """``owner``'s loop ended: the last one to end puts the frozen objects back."""
    with _lock:
        if owner not in _frozen_by:
            return
        _frozen_by.discard(owner)
        if not _frozen_by:
            gc.unfreeze()


def defer_full_collections(fn: F) -> F:
    """``fn`` run inside ``deferred()``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with deferred():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _collect_if_due(thresholds: tuple[int, ...]) -> None:
    """Let CPython's own rule decide now: an allocation past the youngest generation's
    threshold starts the automatic collection, which takes the oldest generation whose
    count is over its threshold (the oldest only when it grew by a quarter since it was last
    collected). A threshold of 1 and two allocations make that allocation happen here."""
    gc.set_threshold(1, *thresholds[1:])
    try:
        _trigger = (_Allocation(), _Allocation())  # noqa: F841 - the allocations are the point
    finally:
        gc.set_threshold(*thresholds)
