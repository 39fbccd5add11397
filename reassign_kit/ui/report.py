"""`reassign-kit report JOURNAL... --html out.html`: a postmortem a person can
attach to a ticket — the figures of notebook 04 (timeline, concurrency, throughput per
broker, batch waits; the adaptive pace's decisions and the ETA over the run where the
journals have them) and the tables behind them, in ONE self-contained HTML file (plotly.js
embedded once, no network: it opens offline), plus the same report as JSON beside it."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from ..moves.journal import read_events
from . import postmortem_charts as pmc
from .charts import write_html

MAX_TABLE_ROWS = 500  # a table bigger than this is cut in the HTML (the JSON has it whole)


def _table(title: str, df: Any) -> str:
    shown = df.head(MAX_TABLE_ROWS)
    cut = f" (first {MAX_TABLE_ROWS} of {len(df)})" if len(df) > MAX_TABLE_ROWS else ""
    body = (
        shown.to_html(index=False, border=0, na_rep="", escape=True) if len(df) else "<p>none</p>"
    )
    return f"<section><h2>{html.escape(title)}{cut}</h2>{body}</section>"


def write_report(
    journals: Sequence[str], html_path: str, spark_master: str | None = None
) -> dict[str, Any]:
    """Build the postmortem of ``journals`` (Spark, ``spark.postmortem``) and write
    ``html_path`` (figures + tables) and ``<html stem>.json``; return the report."""
    from ..spark import postmortem as pmx

    spark = pmx.session(spark_master)
    pm = pmx.Postmortem.of(spark, list(journals))
    moves = pm.moves().toPandas()
    conc = pm.concurrency().toPandas()
    thr = pm.throughput_per_broker().toPandas()
    batches = pm.batch_waits().toPandas()
    trouble = pm.trouble().toPandas()
    throttles = pm.throttle_changes().toPandas()
    caps = pm.caps_pandas()
    report = pmx.report(moves, conc, thr, batches, trouble, throttles, caps)
    report["journals"] = list(journals)
    figures = {
        "timeline": pmc.timeline_figure(moves),
        "concurrency": pmc.concurrency_figure(conc, caps),
        "throughput": pmc.throughput_figure(thr),
        "batch_waits": pmc.batch_wait_figure(batches),
        # the adaptive pace's decisions and the ETA over the run, where the journals have them
        **pmc.journal_figures([e for j in journals for e in read_events(j)]),
    }
    summary = json.dumps(report["summary"], indent=1, default=str)
    tables = (
        f"<section><h2>summary</h2><pre>{html.escape(summary)}</pre></section>"
        + _table("moves", moves)
        + _table("throughput per broker", thr)
        + _table("batches", batches)
        + _table("stuck, deadlines, cancels, failures, warnings", trouble)
        + _table("throttle changes", throttles)
    )
    runs = ", ".join(report["summary"]["runs"]) or "no run"
    write_html(html_path, figures, f"reassign_kit postmortem: {runs}", extra_html=tables)
    stem = html_path[:-5] if html_path.endswith(".html") else html_path
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, default=str)
    return report
