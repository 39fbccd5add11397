"""The network goals of a plan as one chart a person reads at a glance: per broker, network in
and network out before and after the plan (MB/s, grouped bars), each broker's target (the
tolerance above its share) and capacity where set as markers, and in the title whether the
goals are met. Drawn from the report's ``network_goal`` section (``planner.network_report``),
so the notebook, the plan's HTML and any reader of ``report.json`` show the same figure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .theme import TEMPLATE

RESOURCES = (("network_in", "network in"), ("network_out", "network out"))
BEFORE, AFTER = "#9ecae1", "#1f77b4"


def network_figure(ng: Mapping[str, Any]) -> go.Figure:
    """The chart of a report's ``network_goal`` (bytes/s in the report, MB/s drawn)."""
    brokers = list(ng["brokers"])
    x = [str(r["broker"]) for r in brokers]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t + " (MB/s)" for _, t in RESOURCES])
    for col, (res, _title) in enumerate(RESOURCES, 1):
        first = col == 1
        for when, color in (("before", BEFORE), ("after", AFTER)):
            fig.add_bar(
                name=when,
                x=x,
                y=[r[f"{res}_{when}"] / 1e6 for r in brokers],
                marker_color=color,
                legendgroup=when,
                showlegend=first,
                row=1,
                col=col,
            )
        for what, symbol in (("target", "line-ew-open"), ("capacity", "x-thin-open")):
            key = f"{res}_{what}"
            ys = [r[key] / 1e6 if r.get(key) is not None else None for r in brokers]
            if any(y is not None for y in ys):
                fig.add_scatter(
                    name=what,
                    x=x,
                    y=ys,
                    mode="markers",
                    marker={"symbol": symbol, "size": 26, "line": {"width": 3}},
                    legendgroup=what,
                    showlegend=first,
                    row=1,
                    col=col,
                )
        fig.update_xaxes(title_text="broker", type="category", row=1, col=col)
    state = "met" if ng.get("met") else "NOT met: " + "; ".join(ng.get("unmet", []))[:200]
    fig.update_layout(
        title=f"Network in and out per broker, before and after the plan (goals {state})",
        barmode="group",
        template=TEMPLATE,
        height=420,
    )
    return fig
