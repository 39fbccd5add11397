"""The probe's canary topic outlives a run killed with its probe up (found on the
way): only the run's close deleted it. The run journals the name before making it; what the
journal names as made and not deleted is what its resume and ``--cancel --journal`` delete
(on the sandbox: test_pace_sandbox's SIGKILL test). Here, the pure parts."""

from __future__ import annotations

from reassign_kit.cluster.probe import CANARY_PREFIX, delete_canaries
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.model import TopicPartition
from reassign_kit.operations.cancel import CancelResult
from reassign_kit.pacing.memory import orphan_canaries

A, B = f"{CANARY_PREFIX}aaa", f"{CANARY_PREFIX}bbb"


def test_orphans_are_the_canaries_made_and_not_seen_deleted():
    ev = [
        {"event": "probe_canary", "canary": A},
        {"event": "probe_canary_deleted", "canary": A, "orphan": False},
        {"event": "probe_canary", "canary": B},  # a run killed with this one up
    ]
    assert orphan_canaries(ev) == [B]
    assert orphan_canaries([*ev, {"event": "probe_canary_deleted", "canary": B}]) == []
    assert orphan_canaries([]) == []


def test_a_simulator_has_no_canary_to_delete():
    assert delete_canaries(SimCluster(3), [A, "payments"]) == {}
    assert delete_canaries(SimCluster(3), ["payments"]) == {}


def test_the_cancel_says_which_canary_it_deleted_and_which_it_could_not():
    res = CancelResult(
        [], [TopicPartition("t", 0)], {}, [], None, canaries={A: None, B: "timed out"}
    )
    text = "\n".join(res.lines())
    assert f"Deleted the probe's canary topic {A} the journaled run left." in text
    assert f"Could not delete the probe's canary topic {B}" in text and "timed out" in text
    assert res.exit_code == 0  # the moves' cancel decides the exit, not a canary


def test_a_journal_naming_another_topic_never_gets_it_deleted():
    """The journal is not trusted to name a topic to delete: on the Admin gateway only names
    with the canary prefix reach DeleteTopics (a hand-edited or hostile journal naming
    'payments' deletes nothing), and an answer of 'unknown topic' is 'gone'."""
    from concurrent.futures import Future

    from reassign_kit.cluster.admin import AdminGateway

    asked: list[list[str]] = []

    class Admin:
        def delete_topics(self, names, operation_timeout=None):
            asked.append(list(names))
            out = {}
            for n in names:
                f: Future = Future()
                if n == B:
                    f.set_exception(RuntimeError("UNKNOWN_TOPIC_OR_PART"))
                else:
                    f.set_result(None)
                out[n] = f
            return out

    gw = AdminGateway.__new__(AdminGateway)
    gw._ck = Admin()
    assert delete_canaries(gw, ["payments", A, B]) == {A: None, B: None}
    assert asked == [[A, B]]
    assert delete_canaries(gw, ["payments"]) == {} and len(asked) == 1


def test_a_cancel_while_the_run_is_alive_leaves_its_canary(tmp_path):
    """``--cancel --journal`` from another terminal while the run still writes its journal:
    the canary the journal names is the live run's own (its probe measures through it, its
    end deletes it), not one a killed run left. Before, the cancel deleted it from under the
    live probe. Once the writer is gone it is an orphan again."""
    from reassign_kit.model import Move, Plan
    from reassign_kit.moves.journal import Journal, read_events, writer_alive
    from reassign_kit.operations.cancel import CANARY_LIVE, cancel
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(4)
    sim.add_topic("t", [[0, 1]], 1 << 20)
    path = tmp_path / "run.jsonl"
    plan = Plan.of([Move(TopicPartition("t", 0), (2, 3))])
    Run(
        sim, plan, ExecuteOptions(throttle=1 << 20), str(path), clock=sim.now, sleep=sim.sleep
    ).run()
    run_id = read_events(path)[0]["run_id"]  # a journal holds one run's lines
    live = Journal(path, run_id)  # the run, alive (resumed): it made its canary
    live.write("probe_canary", canary=A)
    live.commit()
    try:
        assert writer_alive(path)
        res = cancel(sim, None, journal=str(path))
        assert res.canaries == {A: CANARY_LIVE}
        assert f"Left the probe's canary topic {A}: {CANARY_LIVE}." in res.lines()
    finally:
        live.close()
    assert not writer_alive(path) and not writer_alive(tmp_path / "none.jsonl")
    assert cancel(sim, None, journal=str(path)).canaries == {}  # the simulator: none to delete
