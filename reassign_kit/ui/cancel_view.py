"""The panel's cancel: a confirmation that says what will happen, then the per-partition
outcome the cluster shows (``outcome.cancel_report``: the same report as ``--cancel``)."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

CONFIRM_TEXT = (
    "<b>Cancel this run?</b> Moves in flight (and stepped moves between steps) are rolled "
    "back to their ORIGINAL replica lists, in order, throttled, and waited for; moves that "
    "have completed are KEPT at their targets (their preferred-leader elections are carried "
    "out when “elect preferred leaders” is on, else listed as owed); moves not started are "
    "never sent. Afterwards the panel lists where each partition ended, as the cluster shows "
    "it."
)

OUTCOME_COLORS = {
    "rolled back": "#b26a00",
    "kept at target": "#1b5e20",
    "never started": "#555",
    "rolling back": "#b00020",
    "elsewhere": "#b00020",
}


def confirm_box(on_confirm: Any, on_keep: Any) -> tuple[W.VBox, dict[str, W.Button]]:
    """The confirmation (hidden until Cancel is pressed) and its two buttons."""
    yes = W.Button(
        description="Confirm cancel (roll back)",
        button_style="danger",
        icon="undo",
        layout=W.Layout(width="auto"),
        tooltip="roll back the moves in flight to their original replicas",
    )
    no = W.Button(description="Keep running", icon="play", layout=W.Layout(width="auto"))
    yes.on_click(on_confirm)
    no.on_click(on_keep)
    box = W.VBox(
        [W.HTML(CONFIRM_TEXT), W.HBox([yes, no])],
        layout=W.Layout(
            display="none", border="2px solid #d62728", padding="4px 8px", margin="4px 0"
        ),
    )
    return box, {"confirm_cancel": yes, "keep_running": no}


def outcome_html(report: Any) -> str:
    """The per-partition outcome table (``outcome.CancelReport``)."""
    if report is None:
        return ""
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items()))
    head = (
        "<tr><th>partition</th><th>outcome</th><th>replicas now</th><th>original</th>"
        "<th>target</th><th>leader</th><th>preferred-leader election</th></tr>"
    )
    body = "".join(
        "<tr class='rk-outcome'><td>{}</td><td style='color:{}'>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td></tr>".format(
            html.escape(str(r.tp)),
            OUTCOME_COLORS.get(r.outcome, "#222"),
            html.escape(r.outcome),
            html.escape(str(list(r.replicas))),
            html.escape(str(list(r.original))),
            html.escape(str(list(r.target))),
            "?" if r.leader is None else r.leader,
            html.escape(r.election or "-"),
        )
        for r in report.rows[:200]
    )
    more = f"<p>… {len(report.rows) - 200} more partitions</p>" if len(report.rows) > 200 else ""
    owed = (
        "<p style='color:#b00020'>elections still owed (Verify with “elect preferred "
        "leaders” carries them out): " + html.escape(", ".join(map(str, report.owed))) + "</p>"
        if report.owed
        else ""
    )
    return (
        f"<b>after the cancel</b> (read from the cluster): {html.escape(counts)}"
        f"<table class='rk-outcomes' style='font-size:12px'>{head}{body}</table>{more}{owed}"
    )
