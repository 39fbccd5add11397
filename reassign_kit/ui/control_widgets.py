"""The panel's pacing controls as widgets, in human units.

Built from the one declaration of the execute options (``run.options``): the label, the
widget kind, the "none" value. Here only the presentation is added: the throttle in MiB/s
(``0 = no throttle``), the meaning of 0 said in every label that has one, labels never cut
(our own label beside each input, no fixed width), and a control that cannot change while a run goes on shown
locked ("(locked)", greyed) with the reason on hover (``controls.LOCK_REASONS``).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from ..run.options import Declared, panel_options

MIB = 1024 * 1024
MIB_CONTROLS = ("throttle", "throttle_floor")  # bytes/s in the options, MiB/s on screen
PACING: tuple[Declared, ...] = panel_options()
OPTIONS = {o.name: o for o in PACING}

# the controls shown first; the rest (set once per run, rarely) go under "advanced"
MAIN = (
    "throttle",
    "batch_size",
    "incremental",
    "max_moves_per_broker",
    "max_leader_moves",
    "cluster_max_reassignments",
    "parallel_replica_count",
    "max_elections_per_poll",
    "elect_leaders",
    "additional",
)

# labels in the panel's units, with what 0 means said in the label
LABELS = {
    "throttle": "throttle (MiB/s, 0 = no throttle)",
    "throttle_floor": "pace floor (MiB/s, 0 = throttle / 20)",
    "batch_size": "batch size (0 = one request)",
    "max_moves_per_broker": "max moves / broker (0 = no cap)",
    "max_leader_moves": "max leader moves (0 = no cap)",
    "cluster_max_reassignments": "cluster-wide cap (0 = no cap)",
    "parallel_replica_count": "parallel replicas (0 = whole move)",
    "move_deadline": "deadline per move (s, 0 = none)",
    "run_deadline": "deadline for the run (s, 0 = none)",
    "stuck_after": "stuck after (s, 0 = off)",
    "additional": "additional (others' moves in flight)",
}


def label(name: str) -> str:
    return LABELS.get(name, OPTIONS[name].option.label)


def short(name: str) -> str:
    """The control's name in messages and the event log ("throttle", "cluster-wide cap")."""
    return "throttle" if name == "throttle" else OPTIONS[name].option.label


def to_widget(name: str, value: Any) -> Any:
    """An ExecuteOptions value as its control holds it (None -> the "none" value; the
    throttle in MiB/s)."""
    if name in MIB_CONTROLS:
        return 0.0 if value is None or value <= 0 else round(value / MIB, 3)
    return OPTIONS[name].to_widget(value)


def from_widget(name: str, value: Any) -> Any:
    """A control's value as the ExecuteOptions value ("none" -> None; MiB/s -> bytes/s)."""
    if name in MIB_CONTROLS:
        return None if value is None or value <= 0 else int(round(float(value) * MIB))
    return OPTIONS[name].from_widget(value)


def show(name: str, value: Any) -> str:
    """An ExecuteOptions value as a person reads it."""
    if name == "throttle":
        return "no throttle" if value is None else f"{value / MIB:g} MiB/s"
    if name == "throttle_floor":
        return "throttle / 20" if value is None else f"{value / MIB:g} MiB/s"
    if value is None:
        return "whole move at once" if name == "parallel_replica_count" else "no cap"
    return str(value)


def make(name: str, value: Any) -> W.Widget:
    """One control's input (its label is ``label_html``, beside it), its help on hover."""
    o = OPTIONS[name].option
    tip = o.widget_help or o.help
    if o.widget == "bool":
        return W.Checkbox(
            value=bool(value), description="", tooltip=tip, indent=False,
            layout=W.Layout(width="28px"),
        )  # fmt: skip
    if o.widget == "choice":
        return W.Dropdown(
            options=list(o.choices), value=value, description="", tooltip=tip,
            layout=W.Layout(width="130px"),
        )  # fmt: skip
    if o.widget == "text":
        return W.Text(
            value=value, description="", tooltip=tip, placeholder="none",
            layout=W.Layout(width="90px"),
        )  # fmt: skip
    layout = W.Layout(width="90px")
    if name in MIB_CONTROLS:
        return W.BoundedFloatText(
            value=value, min=0.0, max=1e6, step=0.5, description="", tooltip=tip, layout=layout
        )
    cls = W.IntText if o.widget == "int" else W.FloatText
    return cls(value=value, description="", tooltip=tip, layout=layout)


def label_html(name: str, why_locked: str | None = None) -> str:
    """A control's label, whole (never cut), with its help — or why it is locked — on hover.
    Our own HTML, since ipywidgets puts a described widget's tooltip on a label it hides for
    an un-indented checkbox."""
    o = OPTIONS[name].option
    text = label(name) + (" (locked)" if why_locked else "")
    tip = f"locked: {why_locked}" if why_locked else (o.widget_help or o.help)
    color = "#888" if why_locked else "inherit"
    return (
        f'<span class="rk-label" title="{html.escape(tip, quote=True)}" '
        f'style="color:{color};white-space:nowrap">{html.escape(text)}</span>'
    )


def build(defaults: dict[str, Any]) -> dict[str, W.Widget]:
    """Every control's input, pre-set from ``defaults`` (ExecuteOptions names and values)."""
    return {
        o.name: make(o.name, to_widget(o.name, defaults.get(o.name, o.default))) for o in PACING
    }


def boxes(ws: dict[str, W.Widget]) -> tuple[dict[str, W.Box], dict[str, W.HTML]]:
    """Each control as one row: the input and its label (checkbox first, as usual)."""
    labels = {name: W.HTML(label_html(name)) for name in ws}
    rows = {}
    for name, w in ws.items():
        kids = [w, labels[name]] if isinstance(w, W.Checkbox) else [labels[name], w]
        row = W.HBox(kids, layout=W.Layout(width="310px", align_items="center"))
        row.add_class("rk-control")
        rows[name] = row
    return rows, labels


def lock(
    ws: dict[str, W.Widget],
    editable: frozenset[str],
    reasons: dict[str, str],
    labels: dict[str, W.HTML] | None = None,
) -> None:
    """Enable the ``editable`` controls; the others disabled, their label marked "(locked)"
    and greyed, the reason on hover."""
    for name, w in ws.items():
        o = OPTIONS[name].option
        why = None if name in editable else (reasons.get(name) or None)
        w.disabled = name not in editable
        w.tooltip = f"locked: {why}" if why else (o.widget_help or o.help)
        if labels is not None:
            labels[name].value = label_html(name, why)


def layout(ws: dict[str, W.Widget]) -> tuple[W.Widget, W.Widget]:
    """The main controls (their boxes) as a grid and the advanced ones in a closed
    Accordion."""
    main = [ws[n] for n in MAIN if n in ws]
    rest = [w for n, w in ws.items() if n not in MAIN]
    grid = W.GridBox(
        main, layout=W.Layout(grid_template_columns="repeat(3, 310px)", grid_gap="0 6px")
    )
    adv = W.Accordion(
        [W.GridBox(rest, layout=W.Layout(grid_template_columns="repeat(3, 310px)"))],
        selected_index=None,
    )
    adv.set_title(0, "advanced: pace, poll interval, order, deadlines (fixed for a run)")
    return grid, adv


def run_buttons() -> dict[str, W.Button]:
    """The run's buttons by name (the panel wires each to its ``_on_<name>``)."""
    buttons: dict[str, W.Button] = {
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
        "resume": W.Button(description="Resume", icon="play", tooltip="submit again after a pause"),
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
    for b in buttons.values():
        b.layout = W.Layout(width="auto", min_width="96px", padding="0 14px")  # labels never cut
    return buttons
