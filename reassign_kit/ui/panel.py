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
import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import ipywidgets as W

from ..cluster.views import cluster_view, partition_sizes, require_permissions
from ..errors import ReassignKitError, UsageError
from ..model import Plan
from ..planner.record import Approval
from ..run.options import ExecuteOptions
from ..snapshot.tier import copied_sizes
from ..watch.from_journal import behind_from_events
from . import cancel_view, charts, controls, describe, figures, figures_bytes, status
from . import control_widgets as cw
from . import figures_bytes as figures_bytes_mod
from .artefacts import Artefacts
from .run_views import RunViews
from .wiring import RunWiring

# the what-if (the CLI's --execute --dry-run, ``whatif.what_if``) is computed when the panel
# opens and again when a pacing control changes before a run, up to this many moves (above
# it, ``Panel.what_if()`` computes it on demand: the model plays the plan once per policy)
WHATIF_AUTO_MOVES = 2000

# the least time between two redraws of the chart while a run moves (the progress line is
# refreshed every ``refresh_s``)
CHART_EVERY_S = 2.0

PACING = cw.PACING
OPTIONS = cw.OPTIONS


# --------------------------------------------------------------------------- the panel


class Panel(RunWiring, Artefacts):
    """The widget tree plus its state; display it by leaving it last in a cell.

    Execute and Resume go through ``run.preflight`` (the CLI's checks, messages and rollback
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
        state_dir: str | None = None,
        plan_path: str | None = None,
        expect_plan_hash: str | None = None,
        allow_drift: bool = False,
        plan_record: str | None = None,
        **defaults: Any,
    ):
        self.plan = plan
        # plans as approved: checked by the preflight of Execute / Resume
        self.plan_path = os.path.abspath(plan_path) if plan_path else None
        self.approval = Approval(expect_plan_hash or None, bool(allow_drift), plan_record)
        self.approval_lines: list[str] = []
        self.gateway = gateway
        self.state_dir = state_dir  # the runs' home (reassign_kit.run.home): None = the default
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
        # the journal path asked for (else each Execute journals in its run's home)
        self._fixed_journal = self.journal_path
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

        self._build_widgets(defaults)
        self.summary = self._summarise()
        if not self.summary.valid:
            self._set_phase("invalid")
        self._render_summary()
        self.widget = self._lay_out()
        self._set_phase(self.phase)
        self._opening_messages()
        self.refresh()

    def _build_widgets(self, defaults: dict[str, Any]) -> None:
        """The controls (``defaults`` their values), the buttons, and the views the run
        fills (status, log, what-if, the charts)."""
        known = {o.name for o in PACING}
        bad = sorted(k for k in defaults if k not in known)
        if bad:
            raise ReassignKitError(
                f"unknown panel option(s) {', '.join(bad)}; known: {', '.join(sorted(known))}"
            )
        self.controls: dict[str, W.Widget] = cw.build(defaults)
        for name in controls.RUN_CONTROLS:
            self.controls[name].observe(partial(self._on_live_change, name), names="value")
        for w in self.controls.values():
            w.observe(self._on_option_change, names="value")
        self.buttons = cw.run_buttons()
        for name, b in self.buttons.items():
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
        # the figures (plain plotly Figures) and the views that show them (charts.figure_view:
        # the whole figure as state, never a FigureWidget: its model can miss its figure)
        self.whatif_figure = charts.whatif_widget()
        self.whatif_chart = charts.figure_view(160, "rk-whatif-chart")
        self.figure = charts.new_figure(widget=False)
        self.chart = charts.figure_view(520)
        # the adaptive pace (an adaptive run only) and the ETA over the run (issues 22, 21)
        self.views = RunViews()

    def _lay_out(self) -> W.VBox:
        """The controls in a grid (the advanced ones folded), the what-if folded, the buttons,
        then what the run shows."""
        self.control_boxes, self.control_labels = cw.boxes(self.controls)
        grid, advanced = cw.layout(self.control_boxes)
        self.whatif_box = W.Accordion(
            [W.VBox([self.whatif_html, self.whatif_chart])], selected_index=None
        )
        self.whatif_box.set_title(0, "what-if: predicted makespan per pacing policy")
        widget = W.VBox(
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
                self.chart,
                *self.views.children,
                W.HTML("<b>partitions furthest behind</b>"),
                self.behind_html,
                W.HTML("<b>events</b>"),
                self.log_html,
            ]
        )
        widget.add_class("rk-panel")
        return widget

    def _opening_messages(self) -> None:
        """The what-if (computed now for a plan small enough) and a run the journal can
        resume."""
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
        cw.lock(
            self.controls,
            editable,
            controls.lock_reasons(phase),
            getattr(self, "control_labels", None),
        )
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
            sizes = copied_sizes(self.gateway, partition_sizes(self.gateway, tps, view.brokers))
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
        self.summary_html.value = describe.summary_html(self.summary)

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
        if hasattr(self, "whatif_chart"):
            charts.show(self.whatif_chart, self.whatif_figure)
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
            state = describe.state_from_events(evs) or state
        err = getattr(self.result, "error", None) if self.result is not None else None
        return status.status_of(
            state, evs, self.summary.bytes_to_move, self.summary.moves, self._clock(), err
        )

    def chart_data(self, st: status.Status | None = None) -> charts.ChartData:
        with self._lock:
            evs = list(self.events)
        st = st or self.current_status()
        started = any(e.get("event") == "run_started" for e in evs)
        now = self._clock() if st.state in status.ACTIVE else None
        progress = describe.up_to(figures.progress_series(evs, total=self.summary.moves), now)
        bars, hidden = figures.move_bars(evs, now=now)
        live = figures_bytes.broker_bytes(evs, self.leaders)
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
        # one Status for the line and the chart's title, the line sent first: the page never
        # shows a chart newer than the line under it (seen: "49%" above a "58% done" chart)
        st = self.current_status()
        self.eta_html.value = f"<b class='rk-progress'>{html.escape(st.line)}</b>"
        # the chart is redrawn whole in the page (charts.show): at most every CHART_EVERY_S
        # while the run moves (a loaded browser spent its main thread on redraws), at once
        # when the state changes or the run ends
        now = time.monotonic()
        if (
            st.state not in status.ACTIVE
            or st.state != getattr(self, "_chart_state", None)
            or now - getattr(self, "_chart_at", 0.0) >= CHART_EVERY_S
        ):
            charts.apply(self.figure, self.chart_data(st))
            charts.show(self.chart, self.figure)
            with self._lock:
                evs = list(self.events)
            self.views.refresh(
                evs,
                self._clock() if st.state in status.ACTIVE else None,
                eta=st.state not in ("paused", "pausing"),
            )
            self._chart_state, self._chart_at = st.state, now
        with self._lock:
            evs = list(self.events)
        rows = behind_from_events(evs) or self._status_rows()
        self.behind_html.value = describe.table_html(figures_bytes_mod.behind_rows(rows))
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


def panel(
    plan: Plan | str,
    bootstrap_servers: str | None = None,
    *,
    gateway: Any = None,
    command_config: Mapping[str, str] | str | None = None,
    journal_path: str | None = None,
    output_dir: str | None = None,
    state_dir: str | None = None,
    **defaults: Any,
) -> Panel:
    """Show ``plan`` (a Plan or the path of a reassignment JSON file) with pacing controls
    pre-set from ``defaults`` (the ExecuteOptions names: batch_size, incremental, ...;
    and ``expect_plan_hash`` / ``allow_drift`` / ``plan_record``: plans as approved, with
    ``plan_path`` when ``plan`` is a Plan read from a file)."""
    if isinstance(plan, str):
        defaults.setdefault("plan_path", plan)
        plan = Plan.read(plan)
    if gateway is None:
        if not bootstrap_servers:
            raise ReassignKitError("panel() needs bootstrap_servers=... (or gateway=...)")
        from ..operations.execute import connect, load_command_config

        if isinstance(command_config, str):
            command_config = load_command_config(command_config)
        gateway = connect(bootstrap_servers, command_config)
    return Panel(
        plan,
        gateway,
        journal_path=journal_path,
        output_dir=output_dir,
        state_dir=state_dir,
        **defaults,
    )
