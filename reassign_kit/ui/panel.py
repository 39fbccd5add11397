"""The notebook panel: one call in a cell shows a plan, its pacing controls, Execute / Pause /
Resume / Stop / Cancel / Verify buttons, a live Plotly chart, the partitions furthest behind and a
log. The caps stay changeable while a run goes on (``Run.set_caps``: effective at the executor's
next scheduling decision), and a run that was stopped, cancelled or killed is continued with
"Resume from journal" (``Run(..., resume=True)``: the journal plus the cluster are the state).

No logic of its own: the run is ``execute.Run`` (the CLI's controller) in its worker thread,
Verify is ``ops.verify``; this module only wires widgets to them. The run's events arrive on
the worker thread and are only appended to a list there; a refresher thread redraws at most
once per ``refresh_s`` from the pure, bounded shaping in ``figures``, so the kernel stays
responsive and a 10,000-partition plan does not flood the browser.
"""

from __future__ import annotations

import html
import json
import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import ipywidgets as W

from ..cluster.views import cluster_view, partition_sizes, require_permissions
from ..engine.journal import read_events
from ..engine.options import ExecuteOptions
from ..engine.preflight import preflight
from ..engine.progress import behind_from_events
from ..engine.resume import set_aside, unfinished_run
from ..errors import ReassignKitError, UsageError
from ..model import Plan
from . import cancel_view, charts, controls, figures, status
from . import control_widgets as cw

# the what-if (the CLI's --execute --dry-run, ``whatif.what_if``) is computed when the panel
# opens and again when a pacing control changes before a run, up to this many moves (above
# it, ``Panel.what_if()`` computes it on demand: the executor runs once per policy)
WHATIF_AUTO_MOVES = 2000
# the panel's run samples its progress at least this often (the status refreshes with it)
PANEL_SAMPLE_S = 1.0

PACING = cw.PACING
OPTIONS = cw.OPTIONS


# --------------------------------------------------------------------------- the panel


class Panel:
    """The widget tree plus its state; display it by leaving it last in a cell.

    Execute and Resume go through ``engine.preflight`` (the CLI's checks, messages and rollback
    file); ``run_kwargs`` go to the ``Run`` it builds (tests pass a ``sleep`` on the
    simulator's clock); ``verify_fn(gateway, plan)`` is ``ops.verify``."""

    def __init__(
        self,
        plan: Plan,
        gateway: Any,
        *,
        journal_path: str | None = None,
        output_dir: str | None = None,
        refresh_s: float = 1.0,
        run_kwargs: Mapping[str, Any] | None = None,
        verify_fn: Callable[[Any, Plan], Any] | None = None,
        clock: Callable[[], float] = time.time,
        calibration: Any = None,
        **defaults: Any,
    ):
        self.plan = plan
        self.gateway = gateway
        self.output_dir = output_dir
        if output_dir:
            try:
                os.makedirs(output_dir, exist_ok=True)
            except OSError as e:
                raise UsageError(
                    f"output_dir {output_dir}: cannot create it: {e.strerror or e}"
                ) from None
        self.journal_path = journal_path or (
            os.path.join(output_dir, "journal.jsonl") if output_dir else None
        )
        self.artefacts: dict[str, str] = {}
        self.refresh_s = float(refresh_s)
        self._run_kwargs = dict(run_kwargs or {})
        self._verify_fn = verify_fn or self._verify_electing
        self._clock = clock
        self._calibration = calibration
        self.whatif: Any = None  # whatif.WhatIf of the options the controls hold
        self.run: Any = None
        self.result: Any = None
        self.verify_result: Any = None
        self.events: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._watcher: threading.Thread | None = None
        self._asked: str | None = None  # "stop" | "cancel": the button that ended the run
        self._reverting = False
        self.phase = "ready"

        known = {o.name for o in PACING}
        bad = sorted(k for k in defaults if k not in known)
        if bad:
            raise ReassignKitError(
                f"unknown panel option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}"
            )
        self.controls: dict[str, W.Widget] = cw.build(defaults)
        for name in controls.LIVE_CONTROLS:
            self.controls[name].observe(partial(self._on_live_change, name), names="value")
        for w in self.controls.values():
            w.observe(self._on_option_change, names="value")
        self.buttons: dict[str, W.Button] = {
            "execute": W.Button(
                description="Execute",
                button_style="primary",
                icon="play",
                tooltip="start a new run of the plan",
            ),
            "resume_run": W.Button(
                description="Resume from journal",
                button_style="primary",
                icon="history",
                tooltip="continue the journaled run: adopt moves in flight, "
                "submit what is left, with the run's own options",
            ),
            "pause": W.Button(
                description="Pause",
                icon="pause",
                tooltip="submit nothing new; moves in flight go on",
            ),
            "resume": W.Button(
                description="Resume", icon="play", tooltip="submit again after a pause"
            ),
            "stop": W.Button(
                description="Stop",
                button_style="warning",
                icon="hand-paper-o",
                tooltip="stop (drain): submit nothing more and end the run; moves in flight "
                "go on (throttled); Resume from journal continues the run",
            ),
            "cancel": W.Button(
                description="Cancel",
                button_style="danger",
                icon="stop",
                tooltip="cancel (roll back): end the run and bring every move not complete, "
                "stepped moves between steps included, back to its original replicas",
            ),
            "verify": W.Button(
                description="Verify",
                button_style="info",
                icon="check",
                tooltip="compare the cluster with the plan (--verify)",
            ),
        }
        for name, b in self.buttons.items():
            b.layout = W.Layout(
                width="auto", min_width="96px", padding="0 14px"
            )  # labels never cut
            b.on_click(getattr(self, f"_on_{name}"))
        self.confirm, confirm_buttons = cancel_view.confirm_box(
            self._on_confirm_cancel, self._on_keep_running
        )
        self.confirm_buttons = confirm_buttons
        self.outcome: Any = None  # outcome.CancelReport after a cancel
        self.outcome_html = W.HTML()
        self.resumable = self._resumable_run()
        self.status = W.HTML()
        self.message = W.HTML()
        self.summary_html = W.HTML()
        self.behind_html = W.HTML()
        self.log_html = W.HTML()
        self.eta_html = W.HTML()  # the progress line: only what holds in the run's state
        self.whatif_html = W.HTML()
        self.whatif_figure = charts.whatif_widget()
        self.figure = charts.new_figure(widget=True)

        self.summary = self._summarise()
        if not self.summary.valid:
            self._set_phase("invalid")
        self._render_summary()
        grid, advanced = cw.layout(self.controls)
        self.whatif_box = W.Accordion(
            [W.VBox([self.whatif_html, self.whatif_figure])], selected_index=None
        )
        self.whatif_box.set_title(0, "what-if: predicted makespan per pacing policy")
        self.widget = W.VBox(
            [
                self.summary_html,
                grid,
                advanced,
                self.whatif_box,
                W.HBox(list(self.buttons.values()), layout=W.Layout(flex_flow="row wrap")),
                self.status,
                self.eta_html,
                self.message,
                self.confirm,
                self.outcome_html,
                self.figure,
                W.HTML("<b>partitions furthest behind</b>"),
                self.behind_html,
                W.HTML("<b>events</b>"),
                self.log_html,
            ]
        )
        self.widget.add_class("rk-panel")
        self._set_phase(self.phase)
        if self.summary.valid and len(self.plan) <= WHATIF_AUTO_MOVES:
            self.what_if()
        elif self.summary.valid:
            self.whatif_html.value = (
                f"<b>what-if</b>: {len(self.plan)} moves; <code>panel.what_if()</code> "
                "predicts the makespan per pacing policy (the executor runs once per policy)"
            )
        if self.resumable is not None and self.phase == "ready":
            self._say(
                f"the journal {self.journal_path} holds an unfinished run of this plan "
                f"({self.resumable.get('run_id')}): Resume from journal continues it; "
                "Execute starts a new run (the old journal is kept beside it)"
            )
        self.refresh()

    # ---------------------------------------------------------------- display / state

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def enabled(self) -> frozenset[str]:
        return frozenset(n for n, b in self.buttons.items() if not b.disabled)

    def options(self) -> dict[str, Any]:
        """The ExecuteOptions values the controls hold now."""
        return {o.name: cw.from_widget(o.name, self.controls[o.name].value) for o in PACING}

    def _set_phase(self, phase: str) -> None:
        """The one place the panel's state is shown: buttons, controls (locked ones with their
        reason on hover), the state line and the progress line all follow ``phase``."""
        self.phase = phase
        on = controls.enabled_buttons(phase, resumable=self.resumable is not None)
        for name, b in self.buttons.items():
            b.disabled = name not in on
        run = self.run
        throttled = bool(run is not None and getattr(run.options, "throttle", None))
        batched = bool(run is not None and getattr(run.options, "batch_size", 0))
        editable = controls.editable_controls(phase, list(self.controls), throttled, batched)
        cw.lock(self.controls, editable, controls.lock_reasons(phase))
        if phase not in ("running", "paused", "pausing", "starting"):
            self.confirm.layout.display = "none"
        live = " (the unlocked controls apply to this run now)" if phase in controls.RUNNING else ""
        self.status.value = f"<b>state:</b> {html.escape(phase)}{live}"

    def _note(self, text: str) -> None:
        """A line in the event log for something the user did (the journal has the rest)."""
        with self._lock:
            ts = float(self.events[-1].get("ts") or 0.0) if self.events else self._clock()
            self.events.append({"ts": ts, "event": "note", "message": text})
        self._dirty.set()

    def _say(self, text: str, error: bool = False) -> None:
        self._said = text
        color = "#b00020" if error else "#1b5e20"
        self.message.value = (
            f'<pre style="color:{color};white-space:pre-wrap;margin:0">{html.escape(text)}</pre>'
        )
        if error:
            self.errors.append(text)

    # ---------------------------------------------------------------- plan summary

    def _summarise(self) -> figures.PlanSummary:
        """Current replicas and sizes from the gateway, validated with the CLI's rules."""
        from ..validate import plan_problems

        tps = [m.tp for m in self.plan]
        problems: list[str] = []
        try:  # a principal that may not DESCRIBE would see every topic "missing": say why
            require_permissions(self.gateway, "panel", ["DESCRIBE"])
            view = cluster_view(self.gateway, self.plan)
            states = dict(view.states)
            sizes = partition_sizes(self.gateway, tps, view.brokers)  # the one definition
            problems = [str(p) for p in plan_problems(self.plan, view)]
        except ReassignKitError as e:
            states, sizes, problems = {}, {}, [f"cannot read the cluster: {e}"]
        self.states = states
        self._sizes = dict(sizes)
        self.current = {tp: tuple(s.replicas) for tp, s in states.items()}
        self.leaders = {tp: s.leader for tp, s in states.items() if s.leader is not None}
        rows = [
            (m.tp, states[m.tp].replicas if m.tp in states else (), m.replicas) for m in self.plan
        ]
        return figures.plan_summary(rows, sizes, problems)

    def _render_summary(self) -> None:
        s = self.summary
        verdict = (
            '<span style="color:#1b5e20">valid</span>'
            if s.valid
            else '<span style="color:#b00020">INVALID: nothing will be sent</span>'
        )
        probs = "".join(f"<li>{html.escape(p)}</li>" for p in s.problems[:20])
        more = f"<li>… {len(s.problems) - 20} more</li>" if len(s.problems) > 20 else ""
        self.summary_html.value = (
            f"<b>plan</b> {s.moves} partition moves, {s.replica_moves} replicas to copy "
            f"({figures.human_bytes(s.bytes_to_move)}), {s.leader_changes} leader changes, "
            f"brokers touched: {', '.join(map(str, s.brokers_touched)) or 'none'}; validation: {verdict}"
            + (f"<ul>{probs}{more}</ul>" if probs else "")
        )

    # ---------------------------------------------------------------- what-if

    def what_if(self) -> Any:
        """The plan's makespan predicted per pacing policy for the options the controls hold
        (``whatif.what_if``, what ``--execute --dry-run`` prints): shown as a table and a
        chart above the buttons; returned (``.to_pandas()``). Nothing is sent."""
        from ..whatif import calibration_beside, what_if

        cal = self._calibration or calibration_beside(self.journal_path)
        try:
            opts = ExecuteOptions(**{**self.options(), "wait": True})
            self.whatif = what_if(self.gateway, self.plan, opts, cal)
        except (ReassignKitError, OSError) as e:
            self.whatif = None
            self.whatif_html.value = (
                f"<b>what-if</b>: <span style='color:#b00020'>{html.escape(str(e))}</span>"
            )
            return None
        self.whatif_html.value = charts.whatif_table_html(self.whatif.rows, self.whatif.calibration)
        charts.set_whatif(self.whatif_figure, self.whatif.rows)
        if hasattr(self, "whatif_box") and self.whatif.rows:
            first = self.whatif.rows[0]
            thr = cw.show("throttle", self.options().get("throttle"))
            self.whatif_box.set_title(
                0,
                f"what-if: {status.duration(float(first['seconds']))} predicted with these "
                f"options ({thr}); open for the other pacing policies",
            )
        return self.whatif

    def _on_option_change(self, _change: Mapping[str, Any]) -> None:
        """A pacing control changed before a run: the what-if follows it (small plans)."""
        if self._reverting or self.run_active() or self.phase == "invalid":
            return
        if len(self.plan) <= WHATIF_AUTO_MOVES and hasattr(self, "whatif_figure"):
            self.what_if()

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
            prepared = preflight(
                self.gateway,
                self.plan,
                opts,
                self.journal_path,
                rollback_path=self._rollback_target(),
                **self._run_kwargs,
            )
            if self.journal_path:
                aside = set_aside(self.journal_path)
                if aside:
                    self.artefacts["previous_journal"] = aside
                self.resumable = None
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
        for name in OPTIONS:
            if name in journaled:
                self._set_control(name, cw.to_widget(name, journaled[name]))
        try:
            opts = ExecuteOptions.from_json_obj(
                {**journaled, **self.options(), **self._panel_run_options()}
            )
            prepared = preflight(
                self.gateway,
                self.plan,
                opts,
                self.journal_path,
                resume=True,
                rollback_path=None,
                **self._run_kwargs,
            )
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
        from .. import ops

        return ops.verify(gateway, plan, elect_leaders=bool(self.controls["elect_leaders"].value))

    def _on_verify(self, _b: Any = None) -> None:
        if not self._allowed("verify"):
            return
        before = self.phase
        self._set_phase("verifying")
        try:
            self.verify_result = self._verify_fn(self.gateway, self.plan)
            self._say(_describe_verify(self.verify_result))
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
        lifecycle and the status, charts and tables redrawn (FigureWidget updates from a
        thread are fine, batched); the kernel is never blocked."""
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
        err = _result_error(self.result)
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
            self._say(_describe_result(self.result) + hint)
        if self.phase == "cancelled" or self._asked == "cancel":
            self._report_cancel()
        self._safe_refresh()
        self._save_artefacts_or_say()

    def _report_cancel(self) -> None:
        """Where each partition ended, read from the cluster (``outcome.cancel_report``, the
        report ``--cancel`` prints); the elections kept moves owe carried out when "elect
        preferred leaders" is on, else listed as owed."""
        from ..outcome import cancel_report

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

    # ---------------------------------------------------------------- artefacts

    def _save_start_artefacts(self) -> None:
        """plan.json beside the rollback file the preflight wrote, before anything moves."""
        if not self.output_dir:
            return
        path = os.path.join(self.output_dir, "plan.json")
        self.plan.write(path)
        self.artefacts["plan"] = path
        if self.journal_path:
            self.artefacts["journal"] = self.journal_path

    def report(self) -> dict[str, Any]:
        """What the run did, as plain JSON values (no client config, so no secret)."""
        data = self.chart_data()
        s = self.summary
        return {
            "phase": self.phase,
            "plan": {
                "moves": s.moves,
                "replica_moves": s.replica_moves,
                "bytes_to_move": s.bytes_to_move,
                "leader_changes": s.leader_changes,
                "brokers_touched": list(s.brokers_touched),
                "problems": list(s.problems),
            },
            "options": self.options(),
            "progress": {
                "total": data.progress.total,
                "done": data.progress.done[-1] if data.progress.done else 0,
                "cancelled": data.progress.cancelled[-1] if data.progress.cancelled else 0,
                "percent_done": data.progress.percent_done,
                "seconds": data.progress.t[-1] if data.progress.t else 0.0,
            },
            "run": _describe_result(self.result) if self.result is not None else None,
            "verify": _describe_verify(self.verify_result)
            if self.verify_result is not None
            else None,
            "verify_complete": verify_complete(self.verify_result),
            "status": self.current_status().line,
            "cancel": self.outcome.to_json_obj() if self.outcome is not None else None,
            "errors": list(self.errors),
            "changes": self._notes(),  # caps changed during the run, resumes: what the user did
            "artefacts": dict(self.artefacts),
        }

    def _save_artefacts_or_say(self) -> None:
        """``save_artefacts`` from a button or the watcher thread: a failure to write (disk
        full, folder removed, no permission) is shown in the panel, after what it says already,
        instead of landing in the widget's callback log."""
        try:
            self.save_artefacts()
        except OSError as e:
            shown = getattr(self, "_said", "")
            shown = shown + "\n" if shown else ""
            self._say(
                f"{shown}cannot write the panel's artefacts in {self.output_dir}: "
                f"{e.strerror or e} ({e.filename or ''})",
                error=True,
            )

    def save_artefacts(self) -> dict[str, str]:
        """report.json and the chart as standalone HTML in ``output_dir`` (if one was given)."""
        if not self.output_dir:
            return {}
        fig = charts.new_figure(widget=False)
        charts.apply(fig, self.chart_data())
        chart = charts.write_html(
            os.path.join(self.output_dir, "execute_chart.html"),
            {"progress": fig},
            title=self._run_title(),
        )
        self.artefacts["chart"] = chart
        self.artefacts["report"] = os.path.join(self.output_dir, "execute_report.json")
        with open(self.artefacts["report"], "w", encoding="utf-8") as f:
            json.dump(self.report(), f, indent=2, default=str)
        return dict(self.artefacts)

    def _notes(self) -> list[str]:
        with self._lock:
            return [str(e.get("message")) for e in self.events if e.get("event") == "note"]

    def _run_title(self) -> str:
        run_id = getattr(self.run, "run_id", "") if self.run is not None else ""
        return f"reassign_kit run {run_id or '(not started)'}: {self.summary.moves} moves, {self.phase}"

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the current run has finished and the panel shows its outcome."""
        if self._watcher is not None:
            self._watcher.join(timeout)
        return self.result

    def _safe_refresh(self) -> None:
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - a drawing bug must not kill the watcher
            self._say("could not redraw the chart:\n" + traceback.format_exc(limit=3), error=True)

    def current_status(self) -> status.Status:
        """The one status the header, the progress line and the charts share."""
        with self._lock:
            evs = list(self.events)
        state = self.phase
        if self.run is None and state == "ready":
            state = _state_from_events(evs) or state
        err = getattr(self.result, "error", None) if self.result is not None else None
        return status.status_of(
            state, evs, self.summary.bytes_to_move, self.summary.moves, self._clock(), err
        )

    def chart_data(self) -> charts.ChartData:
        with self._lock:
            evs = list(self.events)
        st = self.current_status()
        started = any(e.get("event") == "run_started" for e in evs)
        now = self._clock() if st.state in status.ACTIVE else None
        progress = _up_to(figures.progress_series(evs, total=self.summary.moves), now)
        bars, hidden = figures.move_bars(evs, now=now)
        live = figures.broker_bytes(evs, self.leaders)
        title = (
            "bytes per broker: so far vs what the plan needs"
            if started
            else "bytes per broker the plan needs (nothing copied yet)"
        )
        return charts.ChartData(
            progress,
            live,
            title,
            bars,
            hidden,
            plan=self._broker_needs(),
            header=st.header,
            started=started,
        )

    def _broker_needs(self) -> dict[int, dict[str, float]]:
        """What the plan needs of each broker: bytes its new replicas receive, and bytes it
        sends as the leader the new replicas fetch from (the current leader)."""
        out: dict[int, dict[str, float]] = {}
        sizes = getattr(self.summary, "sizes", None) or self._sizes
        for m in self.plan:
            cur = self.current.get(m.tp, ())
            new = [b for b in m.replicas if b not in cur]
            size = float(sizes.get(m.tp, 0))
            for b in new:
                out.setdefault(b, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_in"] += size
            src = self.leaders.get(m.tp, cur[0] if cur else None)
            if src is not None and new:
                out.setdefault(src, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_out"] += size * len(
                    new
                )
        return dict(sorted(out.items()))

    def refresh(self) -> None:
        """Redraw status, chart, table and log from the events so far (bounded data only)."""
        data = self.chart_data()
        charts.apply(self.figure, data)
        line = self.current_status().line
        self.eta_html.value = f"<b class='rk-progress'>{html.escape(line)}</b>"
        with self._lock:
            evs = list(self.events)
        rows = behind_from_events(evs) or self._status_rows()
        self.behind_html.value = _table_html(figures.behind_rows(rows))
        with self._lock:
            lines = figures.log_lines(self.events, limit=figures.MAX_LOG_LINES)
        self.log_html.value = (
            '<pre style="max-height:14em;overflow:auto;font-size:11px;margin:0">'
            + html.escape("\n".join(reversed(lines)) or "(no events yet)")
            + "</pre>"
        )

    def _status_rows(self) -> list[Any]:
        """Before the first sample: the run's own status rows (moving, no measure yet)."""
        if self.run is None:
            return []
        try:
            return list(self.run.status().rows)
        except Exception:  # noqa: BLE001 - status is best effort while the run moves on
            return []


def _state_from_events(events: list[dict[str, Any]]) -> str | None:
    """A run's state from its journal alone (a panel shown beside a run it did not start)."""
    state = None
    for e in events:
        kind = e.get("event")
        if kind == "run_started":
            state = "running"
        elif kind == "paused" and state:
            state = "paused"
        elif kind == "resumed" and state:
            state = "running"
        elif kind == "run_finished":
            state = status.final_state(e.get("state"))
    return state


def _up_to(p: figures.ProgressSeries, now: float | None) -> figures.ProgressSeries:
    """The moves-over-time series drawn up to ``now`` (the run goes on: the last counts hold
    until the next event)."""
    if now is None or not p.t or p.t0 is None or now - p.t0 <= p.t[-1]:
        return p
    return figures.ProgressSeries(
        t=[*p.t, now - p.t0],
        done=[*p.done, p.done[-1]],
        moving=[*p.moving, p.moving[-1]],
        pending=[*p.pending, p.pending[-1]],
        cancelled=[*p.cancelled, p.cancelled[-1]],
        total=p.total,
        t0=p.t0,
    )


def _table_html(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<i>no partition is behind</i>"
    head = "<tr><th>partition</th><th>state</th><th>behind</th><th>%</th><th>detail</th></tr>"
    body = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            html.escape(r["partition"]),
            html.escape(r["state"]),
            figures.human_bytes(r["behind_bytes"]) if r["behind_bytes"] is not None else "?",
            f"{r['percent']:.0f}" if r["percent"] is not None else "",
            html.escape(str(r["detail"])[:80]),
        )
        for r in rows
    )
    return f'<table style="font-size:12px">{head}{body}</table>'


def _result_state(result: Any) -> str:
    if result is None:
        return "failed"
    for attr in ("state", "status", "outcome"):
        v = getattr(result, attr, None)
        if isinstance(v, str):
            return v
    return "failed"


def _result_error(result: Any) -> Any:
    return getattr(result, "error", None) if result is not None else None


def _describe_result(result: Any) -> str:
    state = _result_state(result)
    msg = getattr(result, "message", None) or getattr(result, "summary", None)
    text = f"run {state}" + (f": {msg}" if isinstance(msg, str) and msg else "")
    cancelled = list(getattr(result, "cancelled", None) or [])
    rolling = list(getattr(result, "rolling_back", None) or [])
    if cancelled or rolling:  # a cancel: what came back, per partition
        text += "; rolled back to their original replicas: " + (
            ", ".join(map(str, cancelled[:20])) or "none"
        )
        if rolling:
            text += "; NOT back yet (rollback in flight, throttled): " + ", ".join(
                map(str, rolling[:20])
            )
    el = getattr(result, "elections", None) or {}
    if el:  # preferred leader elections (engine/elections.py) and the check after them
        text += (
            f"; preferred leaders: {el.get('elected', 0)} elected, {el.get('not_needed', 0)} "
            f"not needed, {el.get('failed', 0)} failed"
        )
        off = getattr(result, "leaders_not_preferred", None) or {}
        if off:
            text += "; NOT led by their preferred replica: " + ", ".join(
                f"{tp} ({why})" for tp, why in list(off.items())[:10]
            )
    return text


def _describe_verify(result: Any) -> str:
    lines = getattr(result, "lines", None)
    if callable(lines):
        text = list(lines())
        verdict = {
            True: "verify: done, every move of the plan is complete",
            False: "verify: NOT complete",
        }.get(verify_complete(result), "verify:")
        return "\n".join(
            [verdict, *text[:30], *([f"... {len(text) - 30} more lines"] if len(text) > 30 else [])]
        )
    for attr in ("message", "summary", "text"):
        v = getattr(result, attr, None)
        if isinstance(v, str) and v:
            return v
    return str(result)


def verify_complete(result: Any) -> bool | None:
    """Whether a verify result says every move of the plan is complete (None: not verified)."""
    if result is None:
        return None
    for attr in ("complete", "done", "ok", "is_complete"):
        v = getattr(result, attr, None)
        if isinstance(v, bool):
            return v
        if callable(v):
            try:
                out = v()
            except TypeError:
                continue
            if isinstance(out, bool):
                return out
    code = getattr(result, "exit_code", None)
    return code == 0 if isinstance(code, int) else None


def panel(
    plan: Plan | str,
    bootstrap_servers: str | None = None,
    *,
    gateway: Any = None,
    command_config: Mapping[str, str] | str | None = None,
    journal_path: str | None = None,
    output_dir: str | None = None,
    **defaults: Any,
) -> Panel:
    """Show ``plan`` (a Plan or the path of a reassignment JSON file) with pacing controls
    pre-set from ``defaults`` (the ExecuteOptions names: batch_size, incremental, ...)."""
    if isinstance(plan, str):
        plan = Plan.read(plan)
    if gateway is None:
        if not bootstrap_servers:
            raise ReassignKitError("panel() needs bootstrap_servers=... (or gateway=...)")
        from ..ops import connect, load_command_config

        if isinstance(command_config, str):
            command_config = load_command_config(command_config)
        gateway = connect(bootstrap_servers, command_config)
    return Panel(plan, gateway, journal_path=journal_path, output_dir=output_dir, **defaults)
