"""The panel's charts of one run beside the progress chart: the adaptive pace (rate,
latency and the objective over time, and the decisions table; shown for an adaptive run and
not otherwise) and the ETA over the run (the estimate and its range so far, the
time really left beside them once the run finished done).

Each chart is a ``charts.figure_view`` (an Output holding the whole figure as plotly's mime
bundle, never a FigureWidget: see ``charts.figure_view``), redrawn from the journal's events
by the pure, bounded shaping of ``figures_pace`` / ``figures.eta_series``, drawn by the
same builders as the postmortem's (``postmortem_charts``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as W

from . import charts, charts_pace, figures_pace
from .postmortem_charts import ETA_HEIGHT, eta_figure_of, pace_figure_of

PACE_HEIGHT = 460


class RunViews:
    """The widgets: ``pace_box`` (title, chart, decisions table) and ``eta_box`` (title,
    chart), each hidden (``display: none``) until its run has something to draw."""

    def __init__(self) -> None:
        self.pace_chart = charts.figure_view(PACE_HEIGHT, "rk-pace-chart")
        self.pace_table = W.HTML()
        self.pace_box = W.VBox(
            [W.HTML("<b>adaptive pace: decisions, newest first</b>"), self.pace_chart,
             self.pace_table],
            layout=W.Layout(display="none"),
        )  # fmt: skip
        self.pace_box.add_class("rk-pace")
        self.eta_chart = charts.figure_view(ETA_HEIGHT, "rk-eta-chart")
        self.eta_box = W.VBox([self.eta_chart], layout=W.Layout(display="none"))
        self.eta_box.add_class("rk-eta")
        self.pace: figures_pace.PaceSeries | None = None

    @property
    def children(self) -> list[W.Widget]:
        return [self.pace_box, self.eta_box]

    def refresh(
        self, events: Sequence[Mapping[str, Any]], now: float | None = None, eta: bool = True
    ) -> None:
        """Redraw both from ``events`` (``now``: epoch seconds while the run goes on, the
        rates drawn up to it). A chart with nothing to draw is hidden, not drawn empty; so
        is the ETA's when ``eta`` is False (a paused run: no estimate of its finish is shown
        anywhere in the panel while nothing new is submitted)."""
        fig, self.pace = pace_figure_of(events, now)
        if fig is None:
            self.pace_box.layout.display = "none"
        else:
            charts.show(self.pace_chart, fig)
            self.pace_table.value = charts_pace.pace_table_html(self.pace)
            self.pace_box.layout.display = "flex"
        fig = eta_figure_of(events) if eta else None
        if fig is None:
            self.eta_box.layout.display = "none"
        else:
            charts.show(self.eta_chart, fig)
            self.eta_box.layout.display = "flex"
