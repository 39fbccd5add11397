"""The Plotly figure of the panel and of the notebooks' standalone HTML charts.

One figure, three panes: plan progress over time (done / moving / pending / cancelled), bytes in
and out per broker, and a Gantt-like timeline of partition moves. Data comes from
``figures`` already bounded; this module only maps it onto traces.
"""

from __future__ import annotations

import functools
import html
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .figures import EtaSeries, MoveBar, ProgressSeries, duration
from .theme import TEMPLATE, themed

COLORS = {
    "done": "#2ca02c",
    "moving": "#1f77b4",
    "pending": "#c7c7c7",
    "cancelled": "#d62728",
    "stuck": "#ff7f0e",
    "bytes_in": "#17becf",
    "bytes_out": "#9467bd",
    "plan_in": "rgba(23,190,207,0.22)",
    "plan_out": "rgba(148,103,189,0.22)",
}

# trace indexes, fixed at construction so updates never add or remove traces
T_DONE, T_MOVING, T_PENDING, T_CANCELLED, T_PLAN_IN, T_IN, T_PLAN_OUT, T_OUT, T_GANTT = range(9)
ROW_TITLES = ("moves over time (seconds since start)", "bytes per broker", "partition moves")
SUBPLOTS = {"rows": 3, "cols": 1, "row_heights": [0.34, 0.22, 0.44], "vertical_spacing": 0.13}
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass
class ChartData:
    """Everything one redraw needs (already bounded by ``figures``). ``plan`` is what the plan
    needs of each broker (bytes to receive / to send), ``brokers`` what it did so far."""

    progress: ProgressSeries = field(default_factory=ProgressSeries)
    brokers: Mapping[int, Mapping[str, float]] = field(default_factory=dict)
    brokers_title: str = "bytes per broker"
    bars: Sequence[MoveBar] = ()
    bars_hidden: int = 0
    plan: Mapping[int, Mapping[str, float]] = field(default_factory=dict)
    header: str = ""
    started: bool = True


def _layout_title(data: ChartData) -> str:
    if data.header:
        return data.header
    p = data.progress
    done = p.done[-1] if p.done else 0
    moving = p.moving[-1] if p.moving else 0
    return f"plan progress: {p.percent_done:.0f}% done ({done}/{p.total} moves, {moving} moving)"


def _byte_unit(top: float) -> tuple[float, str]:
    """One unit for a chart's byte axis (the panel's MiB / GiB convention)."""
    return (GIB, "GiB") if top >= 10 * GIB else (MIB, "MiB")


def _human(n: float) -> str:
    from .figures import human_bytes

    return human_bytes(n)


def _of(got: float, need: float) -> str:
    """``3.9/6.0 MiB``: short enough to stay legible above a bar (plotly shrinks longer
    outside labels to the bar's width)."""
    g, n = _human(got), _human(need)
    gv, _, gu = g.partition(" ")
    return f"{gv}/{n}" if gu == n.partition(" ")[2] else f"{g}/{n}"


def new_figure(widget: bool = False) -> go.Figure:
    """An empty figure with every trace in place. Each pane has its own legend beside it
    (moves: ``legend``, bytes: ``legend2``). The panel draws a plain Figure through
    ``figure_view`` / ``show``; ``widget=True`` (a FigureWidget) is kept for callers of
    their own, not used by the panel (see ``figure_view``)."""
    base = make_subplots(**SUBPLOTS, subplot_titles=ROW_TITLES)
    fig = go.FigureWidget(base) if widget else go.Figure(base)
    _add_move_traces(fig)
    _add_byte_traces(fig)
    _add_timeline_trace(fig)
    _lay_out(fig)
    return fig


def _add_move_traces(fig: go.Figure) -> None:
    """The progress pane: moves done, moving, pending and cancelled, stacked over time."""
    for name in ("done", "moving", "pending", "cancelled"):
        fig.add_trace(
            go.Scatter(
                x=[],
                y=[],
                name=name,
                mode="lines",
                stackgroup="moves",
                line_shape="hv",
                line={"color": COLORS[name], "width": 0 if name == "cancelled" else 1},
                legend="legend",
            ),
            row=1,
            col=1,
        )


def _add_byte_traces(fig: go.Figure) -> None:
    """The bytes pane: per broker, what the plan needs (light, behind) and what is done so far
    (solid, over it), received and sent side by side."""
    for key, name, offset in (
        ("plan_in", "to receive (plan)", -0.4),
        ("bytes_in", "received", -0.4),
        ("plan_out", "to send (plan)", 0.02),
        ("bytes_out", "sent", 0.02),
    ):
        plan = key.startswith("plan")
        fig.add_trace(
            go.Bar(
                x=[],
                y=[],
                name=name,
                offset=offset,
                width=0.38,
                marker={
                    "color": COLORS[key],
                    "line": {"color": COLORS["bytes_in" if key == "plan_in" else "bytes_out"],
                             "width": 1 if plan else 0},
                },
                textposition="outside" if plan else "none",
                cliponaxis=False,
                legend="legend2",
            ),
            row=2,
            col=1,
        )  # fmt: skip


def _add_timeline_trace(fig: go.Figure) -> None:
    """The timeline pane: one horizontal bar per move (its start and duration)."""
    fig.add_trace(
        go.Bar(
            x=[],
            y=[],
            base=[],
            orientation="h",
            name="moves",
            showlegend=False,
            marker={"color": []},
            hovertemplate="%{y}: %{base:.1f}s + %{x:.1f}s<extra>%{customdata}</extra>",
        ),
        row=3,
        col=1,
    )


def _lay_out(fig: go.Figure) -> None:
    """Size, legends beside their panes, and the axes (the timeline shares the progress
    pane's time axis)."""
    d1 = fig.layout.yaxis.domain
    d2 = fig.layout.yaxis2.domain
    fig.update_layout(
        height=720,
        autosize=True,  # as wide as the notebook cell
        barmode="overlay",
        margin={"l": 90, "r": 20, "t": 60, "b": 40},
        title={"text": "plan progress: not started", "y": 0.985},
        legend={"x": 1.02, "y": d1[1], "xanchor": "left", "yanchor": "top"},
        legend2={"x": 1.02, "y": d2[1], "xanchor": "left", "yanchor": "top"},
        template=TEMPLATE,
    )
    fig.update_yaxes(title_text="moves", tickformat=",d", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="broker", title_standoff=4, type="category", row=2, col=1)
    fig.update_yaxes(title_text="MiB", rangemode="tozero", row=2, col=1)
    # the timeline shares the progress pane's time axis (same t0, same scale, zoom together)
    fig.update_xaxes(
        title_text="seconds since start", matches="x", rangemode="tozero", row=3, col=1
    )
    fig.update_yaxes(autorange="reversed", type="category", row=3, col=1)


@functools.cache
def _bytes_domain() -> tuple[float, float]:
    """The bytes pane's band in the 3-pane figure (apply() gives it the whole figure before
    the run, and this band back from the start)."""
    d = make_subplots(**SUBPLOTS).layout.yaxis2.domain
    return float(d[0]), float(d[1])


def apply(fig: go.Figure, data: ChartData) -> None:
    """Redraw ``fig`` from ``data`` in one batched update (one message to the browser).
    Before the run only the plan's bytes per broker are drawn: the panes of the run (moves
    over time, the timeline) are hidden, never empty axes."""
    p = data.progress
    brokers = sorted(set(data.plan) | set(data.brokers))
    bars = list(data.bars)
    top = max(
        [v.get(k, 0.0) for d in (data.plan, data.brokers) for v in d.values()
         for k in ("bytes_in", "bytes_out")] or [0.0]
    )  # fmt: skip
    unit, uname = _byte_unit(top)

    def col(d: Mapping[int, Mapping[str, float]], b: int, k: str) -> float:
        return float(d.get(b, {}).get(k, 0.0))

    with fig.batch_update():
        for idx, ys in (
            (T_DONE, p.done),
            (T_MOVING, p.moving),
            (T_PENDING, p.pending),
            (T_CANCELLED, p.cancelled),
        ):
            fig.data[idx].x = list(p.t)
            fig.data[idx].y = list(ys)
        xs = [str(b) for b in brokers]
        for t_plan, t_done, k in ((T_PLAN_IN, T_IN, "bytes_in"), (T_PLAN_OUT, T_OUT, "bytes_out")):
            need = [col(data.plan, b, k) for b in brokers]
            got = [min(col(data.brokers, b, k), n) if n else col(data.brokers, b, k)
                   for b, n in zip(brokers, need, strict=True)]  # fmt: skip
            fig.data[t_plan].x = xs
            fig.data[t_plan].y = [n / unit for n in need]
            fig.data[t_plan].text = [
                (_of(g, n) if data.started else _human(n)) if n else ""
                for g, n in zip(got, need, strict=True)
            ]
            fig.data[t_done].x = xs
            fig.data[t_done].y = [g / unit for g in got]
        g = fig.data[T_GANTT]
        g.y = [b.label for b in bars]
        g.base = [b.start for b in bars]
        g.x = [max(b.end - b.start, 0.05) for b in bars]
        g.marker.color = [COLORS.get(b.state, COLORS["moving"]) for b in bars]
        g.customdata = [b.state + (f", {b.steps} steps" if b.steps > 1 else "") for b in bars]
        fig.layout.title.text = _layout_title(data)
        title = "partition moves" + (
            f" ({data.bars_hidden} more not shown)" if data.bars_hidden else ""
        )
        started = data.started
        fig.layout.annotations[0].text = (
            ROW_TITLES[0] if started else "moves over time: drawn once the run starts"
        )
        fig.layout.annotations[2].text = title if started else ""
        fig.layout.annotations[1].text = data.brokers_title
        for ax in ("xaxis", "yaxis", "xaxis3", "yaxis3"):
            fig.layout[ax].visible = started
        fig.layout.yaxis2.title.text = uname
        fig.layout.height = max(720, 480 + 14 * len(bars)) if started else 380
        # before the run the bytes pane is the whole chart (no blank bands where the hidden
        # panes sit); from the start each pane has its own band again
        d2 = _bytes_domain() if started else (0.0, 0.8)
        fig.layout.yaxis2.domain = d2
        fig.layout.annotations[1].y = d2[1]
        fig.layout.legend2.y = d2[1]
        # whole moves: one tick per move on small plans (no 0.5 ticks), automatic above
        fig.update_yaxes(dtick=1 if p.total <= 10 else None, row=1, col=1)


PLOTLY_MIME = "application/vnd.plotly.v1+json"
CONFIG = {"displaylogo": False}  # no "responsive": its 100% container is 0 px high in an Output


def figure_view(height: int = 360, css_class: str = "rk-chart") -> Any:
    """The widget the panel shows a chart in: an ipywidgets ``Output`` whose state is the
    WHOLE figure as plotly's mime bundle (rendered by plotly's JupyterLab mime renderer, the
    one plotly.js the lab loaded once), replaced by ``show`` at each refresh.

    Why not a FigureWidget: plotly's FigureWidget (plotly >= 6) is an anywidget whose model
    opens its comm with an EMPTY figure (``_widget_layout = {}``, ``_widget_data = []``: they
    are set after ``Widget.__init__`` opened the comm) and reaches the figure only through
    later messages; anywidget 0.11's front end gives each model 2 s to import its ESM (plotly's
    is ~5 MB, imported again per model) and, past that, drops every message to the model
    (``AnyModel._handle_comm_msg`` awaits a rejected ``ready``). On a busy machine the panel's
    chart then stayed blank for good (empty axes -1..6 / -1..4, no title) in about half of
    the browser runs. Here a view created at any time renders the figure as it is now, and a
    missed update is repaired by the next one."""
    import ipywidgets as W

    out = W.Output(layout=W.Layout(min_height=f"{height}px", width="100%"))
    out.add_class(css_class)
    return out


def figure_bundle(fig: go.Figure) -> dict[str, Any]:
    """``fig`` as plotly's mime bundle (plain JSON: what plotly's own "plotly_mimetype"
    renderer sends), with the panel's config."""
    import json

    import plotly.io as pio

    out = json.loads(pio.to_json(fig, validate=False, remove_uids=False))
    out["config"] = dict(CONFIG)
    return out


def show(view: Any, fig: go.Figure) -> bool:
    """Put ``fig`` in ``view`` (a ``figure_view``); nothing is sent when it has not changed
    since the last call. Safe from the refresher thread (one trait assignment). Returns
    whether it was sent."""
    import json

    bundle = figure_bundle(fig)
    key = json.dumps(bundle, sort_keys=True)
    if getattr(view, "_rk_shown", None) == key:
        return False
    title = str(((bundle.get("layout") or {}).get("title") or {}).get("text") or "chart")
    height = (bundle.get("layout") or {}).get("height")
    if isinstance(height, int | float):
        view.layout.min_height = f"{int(height)}px"  # no jump while the plot is redrawn
    view.outputs = (
        {
            "output_type": "display_data",
            "data": {PLOTLY_MIME: bundle, "text/plain": title},
            "metadata": {},
        },
    )
    view._rk_shown = key
    return True


def shown(view: Any) -> dict[str, Any] | None:
    """The figure ``view`` holds now (its mime bundle), or None."""
    for o in getattr(view, "outputs", ()) or ():
        data = o.get("data") or {}
        if PLOTLY_MIME in data:
            return data[PLOTLY_MIME]
    return None


def write_html(
    path: str | os.PathLike, figures: Mapping[str, go.Figure], title: str, extra_html: str = ""
) -> str:
    """The figures of one run in ONE standalone HTML file, plotly.js embedded once (~4.8 MB):
    it opens offline, alone, anywhere, and an output folder holds one copy of plotly.js per
    report instead of one per chart. Returns the path."""
    import plotly.io as pio

    parts = []
    for i, (name, fig) in enumerate(figures.items()):
        div = pio.to_html(
            themed(fig),
            full_html=False,
            include_plotlyjs=(i == 0),
            default_width="100%",
            config={"displaylogo": False, "responsive": True},
        )
        parts.append(f'<section id="{html.escape(name)}">{div}</section>')
    doc = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:16px 24px;color:#222}"
        "section{margin-bottom:28px;border-bottom:1px solid #eee}</style></head><body>"
        f'<h1 style="font-size:20px">{html.escape(title)}</h1>'
        + "".join(parts)
        + extra_html
        + "</body></html>\n"
    )
    with open(path, "w", encoding="utf-8") as f:
        f.write(doc)
    return os.fspath(path)


def whatif_figure(rows: Sequence[Mapping[str, Any]], title: str = "") -> go.Figure:
    """The what-if as horizontal bars: predicted makespan per pacing policy, the options given
    first (highlighted); in seconds while every bar is under two minutes (an axis of 0.02
    minutes reads as nothing), else in minutes."""
    names = [str(r["policy"]) for r in rows]
    seconds = [float(r["seconds"]) for r in rows]
    unit, per = ("minutes", 60.0) if max(seconds, default=0.0) >= 120 else ("seconds", 1.0)
    fig = go.Figure(
        go.Bar(
            x=[s / per for s in seconds],
            y=names,
            orientation="h",
            marker_color=["#1f77b4" if i == 0 else "#9ecae1" for i in range(len(rows))],
            text=[duration(float(r["seconds"])) for r in rows],
            textposition="auto",
        )
    )
    fig.update_layout(
        title=title or "What-if: predicted makespan per pacing policy",
        xaxis_title=f"{unit} (predicted)",
        yaxis={"autorange": "reversed"},
        height=120 + 40 * len(rows),
        margin={"l": 200},
        template=TEMPLATE,
    )
    return fig


def disk_usage_figure(
    usage: Mapping[tuple[int, str], Sequence[tuple[float, int]]],
    peaks: Sequence[Any],
    shown: int = 6,
) -> go.Figure:
    """The what-if's disks: each filesystem's predicted usage (MiB) over the run, the fullest
    ``shown`` of them (``peaks``: ``whatif.DiskPeak``, fullest first), each peak marked and
    named, each ceiling dotted."""
    fig = go.Figure()
    for p in list(peaks)[:shown]:
        series = usage.get((p.broker, p.log_dir), ())
        name = f"broker {p.broker} {p.log_dir}"
        fig.add_trace(
            go.Scatter(
                x=[t for t, _ in series],
                y=[n / MIB for _, n in series],
                mode="lines",
                name=name,
                legendgroup=name,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[p.at_s],
                y=[p.peak_bytes / MIB],
                mode="markers+text",
                text=[f"peak {p.peak_bytes / MIB:.1f} MiB"],
                textposition="top center",
                showlegend=False,
                legendgroup=name,
            )
        )
        if p.ceiling_bytes is not None and series:
            fig.add_trace(
                go.Scatter(
                    x=[series[0][0], series[-1][0]],
                    y=[p.ceiling_bytes / MIB] * 2,
                    mode="lines",
                    line={"dash": "dot"},
                    name=f"{name} ceiling",
                    legendgroup=name,
                )
            )
    fig.update_layout(
        title="What-if: each log dir's filesystem over the run (predicted)",
        xaxis_title="seconds since the start (predicted)",
        yaxis_title="MiB used",
        height=360,
        template=TEMPLATE,
    )
    return fig


def whatif_table_html(rows: Sequence[Mapping[str, Any]], calibration: str | None) -> str:
    """The what-if table for the panel (the CLI's --dry-run rows)."""
    body = "".join(
        "<tr><td>{}</td><td style='text-align:right'>{}</td></tr>".format(
            html.escape(str(r["policy"])) + (" <b>(these options)</b>" if i == 0 else ""),
            html.escape(duration(float(r["seconds"]))),
        )
        for i, r in enumerate(rows)
    )
    cal = html.escape(calibration or "none (the throttle, or 100 MiB/s per broker)")
    return (
        "<b>what-if</b> (predicted makespan, nothing sent; calibration: "
        f"{cal})<table style='font-size:12px'><tr><th>policy</th><th>predicted</th></tr>"
        f"{body}</table>"
    )


def whatif_widget() -> go.Figure:
    """An empty what-if chart for the panel (``set_whatif`` fills it; ``show`` draws it)."""
    fig = whatif_figure([])
    fig.layout.height = 160
    return fig


def set_whatif(fig: go.Figure, rows: Sequence[Mapping[str, Any]]) -> None:
    """Redraw the what-if chart with ``rows``."""
    new = whatif_figure(rows)
    with fig.batch_update():
        fig.data = ()
        fig.add_traces(list(new.data))
        fig.layout = new.layout


def eta_figure(series: EtaSeries, title: str = "") -> go.Figure:
    """How the run's ETA moved over the run beside what actually happened (a postmortem):
    the estimate and its range at each sample, and the time really left once the run
    finished (``figures.eta_series``); the title gives the median error from 25% on."""
    fig = go.Figure()
    bx, by = eta_band(series.t, series.low, series.high)
    fig.add_trace(
        go.Scatter(
            x=bx,
            y=by,
            mode="lines",
            line={"width": 0},
            fill="toself",
            fillcolor="rgba(31,119,180,0.18)",
            name="range (10th-90th)",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=series.t,
            y=series.eta,
            mode="lines+markers",
            marker={"size": 4},
            line={"color": "#1f77b4"},
            name="ETA",
        )
    )
    if series.finish_t is not None:
        fig.add_trace(
            go.Scatter(
                x=series.t,
                y=series.truth,
                mode="lines",
                line={"dash": "dash", "color": "#2ca02c"},
                name="time really left",
            )
        )
    errs = series.errors()
    note = (
        f"median error from 25% of the bytes: {100 * statistics.median(errs):.0f}%" if errs else ""
    )
    fig.update_layout(
        title=title or ("The ETA over the run" + (f" ({note})" if errs else "")),
        xaxis_title="seconds since start",
        yaxis_title="seconds left",
        height=360,
        template=TEMPLATE,
    )
    return fig


def eta_band(
    t: Sequence[float], low: Sequence[float | None], high: Sequence[float | None]
) -> tuple[list[float | None], list[float | None]]:
    """The range as closed polygons, one per run of samples that have one, apart by None:
    a ``tonexty`` fill between two lines with gaps joined the ends of different runs (a
    diagonal band across the chart where a sample had no range)."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    seg: list[tuple[float, float, float]] = []

    def close() -> None:
        if seg:
            if xs:
                xs.append(None)
                ys.append(None)
            xs.extend([p[0] for p in seg] + [p[0] for p in reversed(seg)])
            ys.extend([p[2] for p in seg] + [p[1] for p in reversed(seg)])
            seg.clear()

    for x, lo, hi in zip(t, low, high, strict=True):
        if lo is None or hi is None:
            close()
        else:
            seg.append((x, lo, hi))
    close()
    return xs, ys
