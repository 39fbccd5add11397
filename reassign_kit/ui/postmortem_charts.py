"""The postmortem's Plotly charts, from the pandas tables that ``spark.postmortem`` builds
(figures live in the UI layer; the Spark tables know nothing of them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import charts_pace, figures, figures_pace
from .charts import COLORS, eta_figure
from .theme import TEMPLATE

LABEL_EVERY_MOVE = 300


def timeline_figure(moves: Any, max_moves: int = 2000) -> Any:
    import plotly.graph_objects as go

    df = moves.copy()
    shown = df.sort_values("start").head(max_moves)
    t0 = df["start"].min() if len(df) else 0.0
    end = shown["end"].fillna(df[["start", "end"]].max().max())
    colors = {
        "completed": COLORS["done"],
        "cancelled": COLORS["cancelled"],
        "failed": COLORS["cancelled"],
        "running": COLORS["moving"],
    }
    label = shown["topic"] + "-" + shown["partition"].astype(str)
    if df["run_id"].nunique() > 1:  # several runs: say which one each bar belongs to
        label = shown["run_id"].str[-6:] + " " + label
    fig = go.Figure(
        go.Bar(
            y=label,
            base=shown["start"] - t0,
            x=(end - shown["start"]).clip(lower=0.05),
            orientation="h",
            marker_color=[colors.get(s, COLORS["moving"]) for s in shown["state"]],
            customdata=shown["state"],
            hovertemplate="%{y}: %{base:.1f}s + %{x:.1f}s (%{customdata})<extra></extra>",
        )
    )
    more = f" (first {max_moves} of {len(df)})" if len(df) > max_moves else ""
    fig.update_layout(
        title=f"every move{more}",
        xaxis_title="seconds since the first move",
        height=max(300, 140 + 20 * len(shown)),
        template=TEMPLATE,
        # every move labelled up to LABEL_EVERY_MOVE rows (Plotly's auto ticks skipped every
        # other one at 16 px a row); beyond, Plotly picks
        yaxis={"autorange": "reversed", "type": "category", "tickfont": {"size": 11}}
        | ({"dtick": 1} if len(shown) <= LABEL_EVERY_MOVE else {}),
    )
    return fig


def concurrency_figure(conc: Any, caps: Any) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    t0 = conc["ts"].min() if len(conc) else 0.0
    for run_id, g in conc.groupby("run_id"):
        fig.add_trace(
            go.Scatter(
                x=g["ts"] - t0,
                y=g["in_flight"],
                mode="lines",
                line_shape="hv",
                name=f"in flight ({str(run_id)[-6:]})",
                showlegend=True,
            )
        )
    for _, r in caps.iterrows() if len(caps) else ():
        for cap, name in (
            ("batch_size", "batch size / in-flight cap"),
            ("cluster_max_reassignments", "cluster cap"),
        ):
            v = r.get(cap)
            if v is not None and v == v and v > 0:
                fig.add_hline(y=float(v), line_dash="dash", annotation_text=f"{name} = {int(v)}")
    fig.update_layout(
        title="moves in flight over time, against the caps",
        xaxis_title="seconds since the first move",
        yaxis_title="moves in flight",
        template=TEMPLATE,
    )
    peak = int(conc["in_flight"].max()) if len(conc) else 0
    fig.update_yaxes(tickformat=",d", rangemode="tozero", dtick=1 if peak <= 10 else None)
    return fig


def throughput_figure(thr: Any) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    names = {
        "in": ("in (new replicas)", COLORS["bytes_in"]),
        "out": ("out (sending leaders)", COLORS["bytes_out"]),
    }
    for direction, g in thr.groupby("direction"):
        name, color = names.get(direction, (str(direction), None))
        fig.add_trace(
            go.Bar(
                x=g["broker"].astype(str),
                y=g["mb_per_s"],
                name=name,
                marker_color=color,
                customdata=g["bytes"],
                hovertemplate="broker %{x}: %{y:.2f} MB/s (%{customdata} bytes)",
            )
        )
    fig.update_layout(
        title="throughput per broker (bytes of completed moves over their span)",
        xaxis_title="broker",
        yaxis_title="MB/s",
        barmode="group",
        template=TEMPLATE,
    )
    fig.update_xaxes(type="category")
    return fig


def batch_wait_figure(batches: Any) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    if len(batches):
        x = batches["run_id"].str[-6:] + " #" + batches["batch"].astype(str)
        fig.add_trace(
            go.Bar(
                x=x,
                y=batches["duration_s"] - batches["waiting_for_slowest_s"],
                name="until the median move finished",
            )
        )
        fig.add_trace(
            go.Bar(x=x, y=batches["waiting_for_slowest_s"], name="waiting for the slowest move")
        )
    fig.update_layout(
        title="time per batch", barmode="stack", yaxis_title="seconds", template=TEMPLATE
    )
    if not len(batches):  # say so instead of drawing empty axes
        fig.update_layout(height=220, xaxis_visible=False, yaxis_visible=False)
        fig.add_annotation(
            text="no batch-mode run: incremental and legacy pacing have no batches to wait for",
            showarrow=False,
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
            font={"size": 14},
        )
    return fig


# ---- from the journal's events: the adaptive pace, the ETA ----------------------------------

ETA_HEIGHT = 360


def eta_figure_of(events: Sequence[Mapping[str, Any]]) -> Any:
    """How the ETA moved over the run beside the time really left (the truth once the run
    finished done; the estimate and its range so far before): None without an estimate."""
    s = figures.eta_series(events)
    if not any(e is not None for e in s.eta):
        return None
    fig = eta_figure(s, "" if s.finish_t is not None else "The ETA so far (its range shaded)")
    fig.update_layout(
        height=ETA_HEIGHT,
        autosize=True,
        margin={"l": 70, "r": 20, "t": 60, "b": 50},
        legend={"x": 1.02, "y": 1.0, "xanchor": "left", "yanchor": "top"},
    )
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(rangemode="tozero")
    return fig


def pace_figure_of(events: Sequence[Mapping[str, Any]], now: float | None = None) -> Any:
    """The adaptive pace's figure and its series; (None, None) for a run not adaptive."""
    if not figures_pace.is_adaptive(events):
        return None, None
    s = figures_pace.pace_series(events, now=now)
    return charts_pace.pace_figure(s), s


def journal_figures(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures a journal's events give beyond the Spark tables' (the panel's artefacts,
    notebook 04, ``report --html``): ``pace`` for an adaptive run, ``eta`` for a run with
    estimates. Several runs in one list: each run's own, keyed ``pace <run_id>``."""
    runs: dict[str, list[Mapping[str, Any]]] = {}
    for e in events:
        runs.setdefault(str(e.get("run_id") or ""), []).append(e)
    out: dict[str, Any] = {}
    for run_id, evs in runs.items():
        suffix = f" {run_id}" if len(runs) > 1 else ""
        pace, _ = pace_figure_of(evs)
        if pace is not None:
            out["pace" + suffix] = pace
        eta = eta_figure_of(evs)
        if eta is not None:
            out["eta" + suffix] = eta
    return out
