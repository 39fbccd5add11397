"""The adaptive pace's chart and decisions table: per broker the throttle rate over
time (step lines) and the produce p99 the controller saw, the objective as a horizontal line,
every decision marked with its cause on hover, the spans new submissions were paused shaded.
From ``figures_pace.pace_series`` (already bounded); the panel, the postmortem notebook and
``reassign-kit report --html`` draw the same figure."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .figures_pace import MAX_MARKERS, PaceSeries, decision_rows
from .theme import COLORWAY, TEMPLATE

MIB = 1024 * 1024
ACTIONS = {  # marker per decision kind: symbol, colour, legend name
    "increase": ("triangle-up", "#555555", "rate raised"),
    "decrease": ("triangle-down", "#111111", "rate lowered"),
}
OBJECTIVE_COLOR = "#222222"  # apart from every broker's colour
ROW_TITLES = ("throttle rate per broker", "produce p99 the controller saw, and the objective")


def _unit(series: PaceSeries) -> tuple[float, str]:
    top = max([max(ys, default=0.0) for _, ys in series.rates.values()] or [0.0])
    return (MIB, "MiB/s") if top >= 0.5 * MIB else (1024.0, "KiB/s")


def _color(i: int) -> str:
    return COLORWAY[i % len(COLORWAY)]


def _hover(d: Any, unit: float, uname: str) -> str:
    before = "?" if d.old_rate is None else f"{d.old_rate / unit:.2f}"
    after = "?" if d.new_rate is None else f"{d.new_rate / unit:.2f}"
    return (
        f"broker {d.broker}: {before} → {after} {uname}<br><b>{html.escape(d.cause)}</b>"
        f"<br>{html.escape(d.reason[:140])}"
    )


def pace_figure(series: PaceSeries, title: str = "") -> go.Figure:
    """The pace of one adaptive run (two panes sharing the time axis)."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.14,
        row_heights=[0.55, 0.45],
        subplot_titles=ROW_TITLES,
    )
    unit, uname = _unit(series)
    brokers = sorted(set(series.rates) | set(series.p99))
    _add_broker_lines(fig, series, brokers, unit, uname)
    _add_decision_markers(fig, series, unit, uname)
    _add_objective(fig, series, brokers)
    _lay_out(fig, series, title, uname)
    return fig


def _add_broker_lines(
    fig: go.Figure, series: PaceSeries, brokers: list[int], unit: float, uname: str
) -> None:
    """Each broker's throttle rate (top pane) and produce p99 (bottom pane), in its colour."""
    n = len(brokers)
    for i, b in enumerate(brokers):
        color = _color(i)
        # brokers at the same rate draw one over the other: the first ones wider, so each
        # stays visible beside those on top of it
        wide = n <= 6
        xs, ys = series.rates.get(b, ([], []))
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[y / unit for y in ys],
                mode="lines",
                line={"shape": "hv", "color": color, "width": 2 + 1.5 * (n - 1 - i) * wide},
                name=f"broker {b}",
                legendgroup=f"b{b}",
                hovertemplate=f"broker {b}: %{{y:.2f}} {uname} at %{{x:.0f}} s<extra></extra>",
            ),
            row=1,
            col=1,
        )
        px, py = series.p99.get(b, ([], []))
        fig.add_trace(
            go.Scatter(
                x=px,
                y=py,
                mode="lines+markers",
                marker={"size": 4},
                line={"color": color, "width": 1.5 + 0.6 * (n - 1 - i) * wide},
                name=f"broker {b} p99",
                legendgroup=f"b{b}",
                showlegend=False,
                hovertemplate=f"broker {b}: p99 %{{y:.1f}} ms at %{{x:.0f}} s<extra></extra>",
            ),
            row=2,
            col=1,
        )


def _add_decision_markers(fig: go.Figure, series: PaceSeries, unit: float, uname: str) -> None:
    """The decisions (the newest MAX_MARKERS), on the rate line at the rate they set."""
    marked = [d for d in series.broker_decisions if d.new_rate is not None][-MAX_MARKERS:]
    for action, (symbol, color, name) in ACTIONS.items():
        ds = [d for d in marked if d.action == action]
        fig.add_trace(
            go.Scatter(
                x=[d.t for d in ds],
                y=[(d.new_rate or 0.0) / unit for d in ds],
                mode="markers",
                marker={"symbol": symbol, "size": 9, "color": color,
                        "line": {"width": 1, "color": "white"}},
                name=name,
                text=[_hover(d, unit, uname) for d in ds],
                hovertemplate="%{text}<extra>%{x:.0f} s</extra>",
                visible=True if ds else "legendonly",
            ),
            row=1,
            col=1,
        )  # fmt: skip


def _add_objective(fig: go.Figure, series: PaceSeries, brokers: list[int]) -> None:
    """The objective: one line when every broker has the same limit, else one per broker."""
    limits = sorted(set(series.limits.values()))
    end = max(series.end, 1.0)
    objective = series.objective or ""
    if len(limits) == 1:
        fig.add_trace(
            go.Scatter(
                x=[0.0, end],
                y=[limits[0], limits[0]],
                mode="lines",
                line={"dash": "dash", "color": OBJECTIVE_COLOR, "width": 2},
                name=f"objective {limits[0]:g} ms"
                + (f" ({objective})" if "+" in objective else ""),
                hovertemplate="objective: p99 ≤ %{y:.1f} ms<extra></extra>",
            ),
            row=2,
            col=1,
        )
    else:
        for i, b in enumerate(brokers):
            if b not in series.limits:
                continue
            lim = series.limits[b]
            fig.add_trace(
                go.Scatter(
                    x=[0.0, end],
                    y=[lim, lim],
                    mode="lines",
                    line={"dash": "dash", "color": _color(i), "width": 1},
                    name=f"objective {objective}",
                    legendgroup="objective",
                    showlegend=i == 0,
                    hovertemplate=f"broker {b}: p99 ≤ %{{y:.1f}} ms<extra></extra>",
                ),
                row=2,
                col=1,
            )


def _lay_out(fig: go.Figure, series: PaceSeries, title: str, uname: str) -> None:
    """The paused spans shaded, the title (decisions, objective, brokers not shown), axes."""
    objective = series.objective or ""
    for x0, x1 in series.pauses:
        fig.add_vrect(
            x0=x0, x1=max(x1, x0 + 0.5), fillcolor="#ff7f0e", opacity=0.15, line_width=0,
            annotation_text="paused", annotation_position="top left",
            annotation_font_size=10, row=1, col=1,
        )  # fmt: skip
    n = len(series.decisions)
    hidden = f", {series.brokers_hidden} brokers not shown" if series.brokers_hidden else ""
    head = title or (
        f"adaptive pace: {n} decision{'s' if n != 1 else ''}"
        + (f", objective produce p99 {objective}" if objective else "")
        + hidden
    )
    fig.update_layout(
        # left, clear of the modebar the panel's views show at the top right
        title={"text": head, "y": 0.97, "x": 0.0, "xref": "paper", "xanchor": "left"},
        height=460,
        autosize=True,
        margin={"l": 70, "r": 20, "t": 70, "b": 50},
        legend={"x": 1.02, "y": 1.0, "xanchor": "left", "yanchor": "top"},
        hovermode="closest",
        template=TEMPLATE,
    )
    fig.update_yaxes(title_text=uname, rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="ms", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="seconds since start", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(rangemode="tozero", row=1, col=1)


def pace_table_html(series: PaceSeries) -> str:
    """The decisions, newest first, at most ``figures_pace.PACE_ROWS`` of them."""
    rows, older = decision_rows(series)
    if not rows:
        return "<i>no pace decision yet</i>"
    head = "".join(
        f"<th style='text-align:left'>{h}</th>"
        for h in ("time (UTC)", "broker", "rate before → after", "cause", "signal")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(r[k])}</td>" for k in ("time", "broker", "rate", "cause", "signal")
        )
        + "</tr>"
        for r in rows
    )
    more = f"<div style='font-size:11px'>… {older} older decisions</div>" if older else ""
    return (
        "<style>.rk-pace-table td,.rk-pace-table th{padding:1px 12px 1px 0}</style>"
        f"<table class='rk-pace-table' style='font-size:12px'><tr>{head}</tr>{body}</table>{more}"
    )
