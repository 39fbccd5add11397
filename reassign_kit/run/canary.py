"""The probe's canary topics in a run (a part of ``PacePart``, run/pace.py): named
on disk before they are made, deleted at the run's end, and what a killed run left deleted by
its resume (``run.begin``) or ``--cancel --journal`` (``ops_cancel``).

Only the run's close deleted the canary (``_reassign_kit_canary_*``, a partition on every
broker), so a run SIGKILLed with its probe up left one for good. The probe now calls back
with the name before it makes the topic (``Probe.before_create``): journaled there
(``probe_canary``, fsynced before the CreateTopics), and each one deleted is journaled
(``probe_canary_deleted``; ``orphan`` when a resume deleted what a killed run left;
``pace_memory.orphan_canaries`` reads them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .shared import RunParts, RunState


class Canaries:
    """The canary bookkeeping of a run (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    # the probes opened and the canary topics they journaled (``_canary_made``), replaced
    # whole under ``_lock`` (never a list shared by the class)
    _probes: tuple[Any, ...] = ()
    _canaries: tuple[str, ...] = ()

    def probe_opened(self, probe: Any) -> Any:
        """A probe (or the simulator's no-health source) the pace opened, kept for its end."""
        with self.shared.lock:
            self._probes = (*self._probes, probe)
        return probe

    def canary_made(self, topic: str) -> None:
        """Before the probe makes its canary topic (on the opener's thread): its name on disk
        (``probe_canary``), so that a run killed with its probe up leaves a name its resume
        or ``--cancel --journal`` deletes (``orphan_canaries``). A journal that cannot be
        written raises here, and the probe makes nothing."""
        with self.shared.lock:
            self.parts.loop.emit("probe_canary", canary=topic)
            self.parts.loop.commit_before_change()
            self._canaries = (*self._canaries, topic)

    def delete_canaries(self, topics: list[str], orphan: bool) -> None:
        """Delete canary topics (``probe.delete_canaries``; never raising) and journal each one
        gone; one that could not be deleted is named in a warning (the next resume or
        ``--cancel --journal`` tries again)."""
        from ..cluster.probe import delete_canaries

        try:
            res = delete_canaries(self.shared.gw.wrapped, topics)
        except Exception as e:  # noqa: BLE001 - the run's start or end must go on
            res = dict.fromkeys(topics, str(e))
        for topic, err in res.items():
            if err is None:
                self.parts.loop.emit("probe_canary_deleted", canary=topic, orphan=orphan)
            else:
                self.parts.loop.emit(
                    "warning",
                    message=f"the probe's canary topic {topic} could not be deleted ({err}): "
                    "resume the run or --cancel --journal to delete it, or delete it by hand",
                )

    def canaries_closed(self) -> None:
        """At the run's end, after the sources closed: each canary this run made journaled as
        deleted, one its probe could not delete tried once more."""
        with self.shared.lock:
            probes, made = list(self._probes), list(self._canaries)
        gone = {p.topic for p in probes if getattr(p, "gone", False)}
        for topic in made:
            if topic in gone:
                self.parts.loop.emit("probe_canary_deleted", canary=topic, orphan=False)
        left = [t for t in made if t not in gone]  # its close could not: tried once more
        if left:
            self.delete_canaries(left, orphan=False)
