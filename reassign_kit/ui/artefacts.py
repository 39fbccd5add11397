"""The panel's artefacts (``output_dir``): plan.json before anything moves, then the report
(JSON, no secret) and the chart (standalone HTML). A mixin of ``Panel``."""

from __future__ import annotations

import json
import os
from typing import Any

from . import charts, describe
from .postmortem_charts import journal_figures


class Artefacts:
    """``report`` / ``save_artefacts`` of a ``Panel`` (its state is the panel's)."""

    plan: Any
    output_dir: str | None
    journal_path: str | None
    artefacts: dict[str, str]
    approval_lines: list[str]
    events: list[dict[str, Any]]
    _lock: Any

    def _save_start_artefacts(self) -> None:
        """plan.json beside the rollback file the preflight wrote, before anything moves."""
        if not self.output_dir:
            return
        path = os.path.join(self.output_dir, "plan.json")
        self.plan.write(path)
        self.artefacts["plan"] = path
        if self.journal_path:
            self.artefacts["journal"] = self.journal_path

    def report(self) -> dict[str, Any]:
        """What the run did, as plain JSON values (no client config, so no secret)."""
        data = self.chart_data()
        s = self.summary
        return {
            "phase": self.phase,
            "plan": {
                "moves": s.moves,
                "replica_moves": s.replica_moves,
                "bytes_to_move": s.bytes_to_move,
                "leader_changes": s.leader_changes,
                "brokers_touched": list(s.brokers_touched),
                "problems": list(s.problems),
            },
            "options": self.options(),
            "progress": {
                "total": data.progress.total,
                "done": data.progress.done[-1] if data.progress.done else 0,
                "cancelled": data.progress.cancelled[-1] if data.progress.cancelled else 0,
                "percent_done": data.progress.percent_done,
                "seconds": data.progress.t[-1] if data.progress.t else 0.0,
            },
            "run": describe.describe_result(self.result) if self.result is not None else None,
            "verify": describe.describe_verify(self.verify_result)
            if self.verify_result is not None
            else None,
            "verify_complete": describe.verify_complete(self.verify_result),
            "status": self.current_status().line,
            "cancel": self.outcome.to_json_obj() if self.outcome is not None else None,
            "errors": list(self.errors),
            "changes": self._notes(),  # caps changed during the run, resumes: what the user did
            "approval": list(self.approval_lines),  # plan hash / drift check
            "artefacts": dict(self.artefacts),
        }

    def _save_artefacts_or_say(self) -> None:
        """``save_artefacts`` from a button or the watcher thread: a failure to write (disk
        full, folder removed, no permission) is shown in the panel, after what it says already,
        instead of landing in the widget's callback log."""
        try:
            self.save_artefacts()
        except OSError as e:
            shown = getattr(self, "_said", "")
            shown = shown + "\n" if shown else ""
            self._say(
                f"{shown}cannot write the panel's artefacts in {self.output_dir}: "
                f"{e.strerror or e} ({e.filename or ''})",
                error=True,
            )

    def save_artefacts(self) -> dict[str, str]:
        """report.json and the charts as standalone HTML in ``output_dir`` (if one was given):
        the progress, and the adaptive pace and the ETA over the run where the run has them."""
        if not self.output_dir:
            return {}
        fig = charts.new_figure(widget=False)
        charts.apply(fig, self.chart_data())
        chart = charts.write_html(
            os.path.join(self.output_dir, "execute_chart.html"),
            {"progress": fig, **journal_figures(self._events_now())},
            title=self._run_title(),
        )
        self.artefacts["chart"] = chart
        self.artefacts["report"] = os.path.join(self.output_dir, "execute_report.json")
        with open(self.artefacts["report"], "w", encoding="utf-8") as f:
            json.dump(self.report(), f, indent=2, default=str)
        return dict(self.artefacts)

    def _events_now(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def _notes(self) -> list[str]:
        with self._lock:
            return [str(e.get("message")) for e in self.events if e.get("event") == "note"]

    def _run_title(self) -> str:
        run_id = getattr(self.run, "run_id", "") if self.run is not None else ""
        return f"reassign_kit run {run_id or '(not started)'}: {self.summary.moves} moves, {self.phase}"
