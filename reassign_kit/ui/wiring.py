"""The panel's buttons and live controls wired to the run: Execute / Resume from journal
through the one preflight, Pause / Resume / Stop, Cancel behind its confirmation, Verify, a
control changed mid-run handed to the run (``Run.set_throttle`` / ``Run.set_caps``), and the
refresher thread that follows the run's lifecycle. A mixin of ``Panel``."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from .. import api
from ..errors import ReassignKitError, UsageError
from ..model import Plan
from ..moves.journal import read_events
from ..run.options import ExecuteOptions
from ..run.resume import set_aside, unfinished_run
from . import cancel_view, controls, describe, status
from . import control_widgets as cw

# the panel's run samples its progress at least this often (the status refreshes with it)
PANEL_SAMPLE_S = 1.0


class RunWiring:
    """The run side of a ``Panel`` (its state is the panel's)."""

    plan: Plan
    gateway: Any
    run: Any
    phase: str
    state_dir: str | None
    _fixed_journal: str | None
    plan_path: str | None
    approval: Any  # plan_record.Approval
    approval_lines: list[str]

    # ---------------------------------------------------------------- buttons

    def _allowed(self, button: str) -> bool:
        return button in controls.enabled_buttons(self.phase, resumable=self.resumable is not None)

    def _on_execute(self, _b: Any = None) -> None:
        """A new run of the plan, through the one preflight (validation, others' moves refused
        unless "additional", rollback file that never replaces an earlier one); an earlier
        journal at the same path is kept beside it."""
        if not self._allowed("execute"):
            return
        try:
            # the panel stays until every move is complete (the CLI's --wait), so the chart
            # reaches the end and the throttles are cleared by the run itself
            opts = ExecuteOptions(**{**self.options(), **self._panel_run_options()})
            # the run's home (as the CLI's): its originals, priors and journal are found by
            # --verify / --cancel with the plan; the output folder's paths are recorded there
            started = api.start_run(
                self.gateway,
                self.plan,
                opts,
                journal=self._fixed_journal,
                rollback_path=self._rollback_target() or "",
                state_dir=self.state_dir,
                source="the panel's plan",
                plan_path=self.plan_path,
                approval=self.approval,
                **self._run_kwargs,
            )
            prepared, home, journal = started.prepared, started.home, started.journal
            self.approval_lines = list(prepared.approval)  # shown in report()
            if self._fixed_journal:
                aside = set_aside(self._fixed_journal)
                if aside:
                    self.artefacts["previous_journal"] = aside
            self.journal_path = journal  # Resume after a Stop goes on from it
            self.resumable = None
            self._home = home  # marked finished when the run is done (as the CLI's)
        except (ReassignKitError, OSError) as e:
            self._say(str(e), error=True)
            return
        self._keep_rollback(prepared.rollback_path)
        try:  # plan.json beside the rollback file, before anything moves
            self._save_start_artefacts()
        except OSError as e:
            self._say(
                f"cannot write the panel's artefacts in {self.output_dir}: "
                f"{e.strerror or e} ({e.filename or ''}); nothing was sent to the cluster",
                error=True,
            )
            return
        with self._lock:
            self.events = []
        self._launch(prepared.run)

    def _panel_run_options(self) -> dict[str, Any]:
        """What the panel's run always has: it stays until every move is complete (the CLI's
        --wait, so the charts reach the end and the run clears its throttles) and samples its
        progress at least every PANEL_SAMPLE_S (the status line refreshes with it)."""
        default = ExecuteOptions().sample_interval
        return {"wait": True, "sample_interval": min(default, PANEL_SAMPLE_S)}

    def _rollback_target(self) -> str | None:
        return os.path.join(self.output_dir, "rollback.json") if self.output_dir else None

    def _keep_rollback(self, path: str | None) -> None:
        """The first rollback file of the output folder stays ``rollback``; later ones (a new
        Execute after a stop, cancel or failure) are listed beside it."""
        if not path:
            return
        if "rollback" not in self.artefacts:
            self.artefacts["rollback"] = path
        elif path != self.artefacts["rollback"]:
            n = sum(k.startswith("rollback") for k in self.artefacts) + 1
            self.artefacts[f"rollback_{n}"] = path

    def _on_resume_run(self, _b: Any = None) -> None:
        """Continue the journaled run with its own options (as ``--resume`` does): moves still
        in flight are adopted, complete ones are not resubmitted, the rest is scheduled."""
        if not self._allowed("resume_run") or self.resumable is None:
            return
        first = self.resumable
        journaled = {k: v for k, v in (first.get("options") or {}).items() if k != "wait"}
        for name in cw.OPTIONS:
            if name in journaled:
                self._set_control(name, cw.to_widget(name, journaled[name]))
        try:
            opts = ExecuteOptions.from_json_obj(
                {**journaled, **self.options(), **self._panel_run_options()}
            )
            prepared = api.start_run(
                self.gateway,
                self.plan,
                opts,
                journal=self.journal_path,
                resume=True,
                rollback_path=None,
                plan_path=self.plan_path,
                approval=self.approval,
                **self._run_kwargs,
            ).prepared
        except ReassignKitError as e:
            self._say(str(e), error=True)
            return
        with self._lock:  # the chart goes on from where the journal left it
            self.events = read_events(self.journal_path) if self.journal_path else []
        self._launch(prepared.run)
        self._note(f"resuming run {first.get('run_id')} from {self.journal_path} with its options")

    def _launch(self, run: Any) -> None:
        self.run, self.result, self.verify_result, self._asked = run, None, None, None
        self.outcome, self.outcome_html.value = None, ""
        run.subscribe(self._on_event)
        self._say("")
        self._set_phase("running")
        try:
            run.start()
        except ReassignKitError as e:
            self._say(str(e), error=True)
            self._set_phase("failed")
            return
        self._watcher = threading.Thread(target=self._watch, name="reassign-kit-panel", daemon=True)
        self._watcher.start()

    def _resumable_run(self) -> dict[str, Any] | None:
        """The ``run_started`` event of an unfinished run of this plan in the panel's journal."""
        return unfinished_run(self.journal_path, self.plan) if self.journal_path else None

    def _set_control(self, name: str, value: Any) -> None:
        self._reverting = True
        try:
            self.controls[name].value = value
        finally:
            self._reverting = False

    def run_active(self) -> bool:
        return self.run is not None and self.phase in controls.RUNNING

    def _on_live_change(self, name: str, change: Mapping[str, Any]) -> None:
        """A control changed while the run goes on: handed to the run through the call the
        API uses (``Run.set_throttle``, journaled ``throttle_changed``; ``Run.set_caps``,
        journaled ``caps_changed``), effective at its next poll / scheduling decision; a value
        the run refuses is named and the control put back."""
        if self._reverting or not self.run_active():
            return
        label = cw.short(name)
        old, new = cw.from_widget(name, change["old"]), cw.from_widget(name, change["new"])
        try:
            if name == "throttle":
                if new is None:
                    raise UsageError(
                        "a run's throttle cannot be removed while it runs (0 = no throttle is "
                        "for a new run); give a rate in MiB/s"
                    )
                self.run.set_throttle(new)
            else:
                if (
                    name == "parallel_replica_count"
                    and new is not None
                    and (not isinstance(new, int) or new < 1)
                ):
                    raise UsageError(
                        f"parallel replica count must be >= 1 (0 = whole move at once), got {new}"
                    )
                self.run.set_caps(**{name: new})
        except ReassignKitError as e:
            self._set_control(name, change["old"])
            self._say(f"{label}: {e}", error=True)
            self._note(f"{label} not changed: {e}")
            return
        where = {
            "parallel_replica_count": "moves not started and the next step of moves part-way",
            "throttle": "the brokers of the moves in flight at the next poll",
        }.get(name, "the next scheduling decision")
        self._note(
            f"{label}: {cw.show(name, old)} -> {cw.show(name, new)} (takes effect at {where})"
        )
        self._say(f"{label} is now {cw.show(name, new)}")

    def _on_stop(self, _b: Any = None) -> None:
        if self.run is not None and self.phase in ("running", "paused"):
            self._asked = "stop"
            self._set_phase("stopping")
            self._say(
                "stopping (drain): nothing new is submitted; the moves in flight go on "
                "(throttled). Resume from journal continues the run later"
            )
            self.run.stop(cancel_inflight=False)

    def _on_pause(self, _b: Any = None) -> None:
        if self.run is not None and self.phase in ("running", "starting"):
            self.run.pause()
            self._set_phase("paused")
            self._say("paused: no new move is submitted; moves in flight go on (throttled)")
            self._dirty.set()

    def _on_resume(self, _b: Any = None) -> None:
        if self.run is not None and self.phase in ("paused", "pausing"):
            self.run.resume()
            self._set_phase("running")
            self._say("")
            self._dirty.set()

    def _on_cancel(self, _b: Any = None) -> None:
        """Cancel asks first: the confirmation says what will happen."""
        if self.run is not None and self.phase in controls.RUNNING:
            self.confirm.layout.display = "flex"

    def _on_keep_running(self, _b: Any = None) -> None:
        self.confirm.layout.display = "none"

    def _on_confirm_cancel(self, _b: Any = None) -> None:
        self.confirm.layout.display = "none"
        if self.run is not None and self.phase in controls.RUNNING:
            self._asked = "cancel"
            self._set_phase("cancelling")
            self._say(
                "cancelling (rollback): every move not complete, stepped moves between steps "
                "included, goes back to its original replicas; the panel waits for it and "
                "reports each partition"
            )
            self.run.cancel()
            self._dirty.set()

    def cancel(self) -> None:
        """Cancel without the confirmation (scripts, papermill): as Confirm cancel."""
        self._on_confirm_cancel()

    def _verify_electing(self, gateway: Any, plan: Plan) -> Any:
        """The default Verify: ``ops.verify``, electing the preferred leaders of the complete
        partitions when the "elect preferred leaders" box is ticked (the CLI's ``--verify
        --elect-leaders``)."""
        from ..api import verify

        # the run's recorded throttle priors (found by the plan): the operator's values back
        return verify(
            gateway,
            plan,
            elect_leaders=bool(self.controls["elect_leaders"].value),
            state_dir=self.state_dir,
        )

    def _on_verify(self, _b: Any = None) -> None:
        if not self._allowed("verify"):
            return
        before = self.phase
        self._set_phase("verifying")
        try:
            self.verify_result = self._verify_fn(self.gateway, self.plan)
            self._say(describe.describe_verify(self.verify_result))
        except ReassignKitError as e:
            self._say(str(e), error=True)
        except Exception as e:  # noqa: BLE001 - shown to the user, never a silent stop
            self._say(f"verify failed: {type(e).__name__}: {e}", error=True)
        finally:
            self._set_phase(before)
        self._save_artefacts_or_say()

    # ---------------------------------------------------------------- run wiring

    def _on_event(self, event: Mapping[str, Any]) -> None:
        """Called on the run's worker thread: record and mark dirty, nothing more."""
        with self._lock:
            self.events.append(dict(event))
        self._dirty.set()

    def _watch(self) -> None:
        """The panel's refresher thread: every ``refresh_s`` the state is read from the run's
        lifecycle and the status, charts and tables redrawn (each a whole-state trait
        assignment from this thread: charts.show); the kernel is never blocked."""
        run = self.run
        while True:
            finished = run.wait(self.refresh_s) is not None
            self._dirty.clear()
            if finished:
                break
            state = status.run_lifecycle(run, self._asked)
            if state != self.phase and state in controls.PHASES:
                self._set_phase(state)
            self._safe_refresh()
        self.result = run.wait(0)
        self.resumable = self._resumable_run()
        home, self._home = getattr(self, "_home", None), None
        if home is not None and getattr(self.result, "state", None) == "done":
            home.mark_finished("done")  # a later --verify / --cancel does not call it unfinished
        err = describe.result_error(self.result)
        if err is not None:
            msg = (
                str(err)
                if isinstance(err, ReassignKitError | str)
                else f"{type(err).__name__}: {err}"
            )
            self._say(f"the run stopped with an error: {msg}", error=True)
            self._set_phase("failed")
        else:
            self._set_phase(status.run_lifecycle(run, self._asked))
            hint = (
                "; Resume from journal continues it"
                if self.resumable is not None and self.phase in ("stopped", "cancelled")
                else ""
            )
            self._say(describe.describe_result(self.result) + hint)
        if self.phase == "cancelled" or self._asked == "cancel":
            self._report_cancel()
        self._safe_refresh()
        self._save_artefacts_or_say()

    def _report_cancel(self) -> None:
        """Where each partition ended, read from the cluster (``outcome.cancel_report``, the
        report ``--cancel`` prints); the elections kept moves owe carried out when "elect
        preferred leaders" is on, else listed as owed."""
        from ..operations.outcome import cancel_report

        with self._lock:
            evs = list(self.events)
        try:
            self.outcome = cancel_report(
                self.gateway,
                self.plan,
                evs,
                originals=self.current,
                elect=bool(self.controls["elect_leaders"].value),
            )
        except ReassignKitError as e:
            self._say(f"cannot read where the partitions ended: {e}", error=True)
            return
        self.outcome_html.value = cancel_view.outcome_html(self.outcome)
