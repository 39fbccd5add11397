"""One look for every figure: the plan's, the live progress, the what-if, the
postmortem's and the report's share one Plotly template, ``reassign_kit`` (plotly_white, one
colour order, one font), registered here by name.

It is never made Plotly's default (``pio.templates.default``): set as the default it left the
panel's FigureWidgets blank in the browser. Each figure names it (``template=TEMPLATE``), as
they named ``plotly_white`` before; ``themed`` gives a figure built elsewhere (a notebook cell)
the same look when it has none of its own."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE = "reassign_kit"
# Plotly's own colours in its own order (what a reader of other Plotly charts expects): the
# first is "the plan / the run", the second "after" / "out", the third a warning
COLORWAY = ["#1f77b4", "#ff7f0e", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#17becf"]


def _register() -> None:
    if TEMPLATE in pio.templates:
        return
    base = pio.templates["plotly_white"]
    t = go.layout.Template(base)
    t.layout.colorway = COLORWAY
    t.layout.font = {"family": "Helvetica, Arial, sans-serif", "size": 13, "color": "#222"}
    t.layout.title = {"font": {"size": 16}}
    pio.templates[TEMPLATE] = t


def themed(fig: go.Figure) -> go.Figure:
    """``fig`` in the package's look unless it chose another template than Plotly's default
    (which a figure gets when it names none)."""
    if fig.layout.template == pio.templates[pio.templates.default]:
        fig.update_layout(template=TEMPLATE)
    return fig


_register()
