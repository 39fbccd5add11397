"""The panel's pacing controls as widgets, in human units (issue 25 item 1).

Built from the one declaration of the execute options (``engine.options``): the label, the
widget kind, the "none" value. Here only the presentation is added: the throttle in MiB/s
(``0 = no throttle``), the meaning of 0 said in every label that has one, labels never cut
(``description_width: initial``), and a control that cannot change while a run goes on shown
locked ("(locked)", greyed) with the reason on hover (``controls.LOCK_REASONS``).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as W

from ..engine.options import Declared, panel_options

MIB = 1024 * 1024
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
    if name == "throttle":
        return 0.0 if value is None or value <= 0 else round(value / MIB, 3)
    return OPTIONS[name].to_widget(value)


def from_widget(name: str, value: Any) -> Any:
    """A control's value as the ExecuteOptions value ("none" -> None; MiB/s -> bytes/s)."""
    if name == "throttle":
        return None if value is None or value <= 0 else int(round(float(value) * MIB))
    return OPTIONS[name].from_widget(value)


def show(name: str, value: Any) -> str:
    """An ExecuteOptions value as a person reads it."""
    if name == "throttle":
        return "no throttle" if value is None else f"{value / MIB:g} MiB/s"
    if value is None:
        return "whole move at once" if name == "parallel_replica_count" else "no cap"
    return str(value)


def make(name: str, value: Any) -> W.Widget:
    """One control, its label whole (never cut), its help on hover."""
    opt = OPTIONS[name]
    o = opt.option
    tip = o.widget_help or o.help
    style = {"description_width": "initial"}
    layout = W.Layout(width="300px")
    desc = label(name)
    if o.widget == "bool":
        return W.Checkbox(
            value=bool(value), description=desc, tooltip=tip, style=style, indent=False,
            layout=layout,
        )  # fmt: skip
    if o.widget == "choice":
        return W.Dropdown(
            options=list(o.choices), value=value, description=desc, tooltip=tip, style=style,
            layout=layout,
        )  # fmt: skip
    if name == "throttle":
        return W.BoundedFloatText(
            value=value, min=0.0, max=1e6, step=0.5, description=desc, tooltip=tip,
            style=style, layout=layout,
        )  # fmt: skip
    cls = W.IntText if o.widget == "int" else W.FloatText
    return cls(value=value, description=desc, tooltip=tip, style=style, layout=layout)


def build(defaults: dict[str, Any]) -> dict[str, W.Widget]:
    """Every control, pre-set from ``defaults`` (ExecuteOptions names and values)."""
    return {
        o.name: make(o.name, to_widget(o.name, defaults.get(o.name, o.default))) for o in PACING
    }


def boxes(ws: dict[str, W.Widget]) -> dict[str, W.Box]:
    """Each control in a box that carries its hover text: ipywidgets puts a described
    widget's tooltip on its (hidden, for an un-indented checkbox) description label, so the
    reason a control is locked would never show; a box without a description shows it."""
    return {
        name: W.Box([w], layout=W.Layout(width="310px"), tooltip=w.tooltip)
        for name, w in ws.items()
    }


def lock(
    ws: dict[str, W.Widget],
    editable: frozenset[str],
    reasons: dict[str, str],
    boxes_: dict[str, W.Box] | None = None,
) -> None:
    """Enable the ``editable`` controls; the others disabled, marked "(locked)", the reason
    on hover (on the control's box)."""
    for name, w in ws.items():
        base = label(name)
        tip = OPTIONS[name].option.widget_help or OPTIONS[name].option.help
        why = reasons.get(name, "")
        if name in editable:
            w.disabled, w.description, text = False, base, tip
        else:
            w.disabled = True
            w.description = f"{base} (locked)" if why else base
            text = f"locked: {why}" if why else tip
        w.tooltip = text
        if boxes_ is not None:
            boxes_[name].tooltip = text


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
    adv.set_title(0, "advanced: poll interval, order, deadlines (fixed for a run)")
    return grid, adv
