"""One ETA everywhere: at one instant of a paced run on the simulator, the paced
CLI's progress line, the panel, ``--progress --progress-journal`` and the Python API
(``reassign_kit.progress``) show the same ETA — the run's own (``InboundEta``), which the
progress report reads back from the run's journal and applies to what it observes."""

from __future__ import annotations

import html
import re

from reassign_kit import api
from reassign_kit.cli import paced
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.ui.panel import Panel

TP = TopicPartition
ETA = re.compile(r"ETA (\S+(?: \([^)]*\))?)")


def etas(text: str) -> list[str]:
    return ETA.findall(text)


def test_the_same_eta_in_the_paced_line_the_panel_progress_and_the_api(tmp_path, capsys):
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1], [0]], 20 * MB)
    sim.partitions[TP("a", 0)].size_bytes = 40 * MB
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,)), Move(TP("a", 2), (3,))])
    plan_path = tmp_path / "plan.json"
    plan.write(str(plan_path))
    journal = str(tmp_path / "j.jsonl")
    panel = Panel(plan, sim, refresh_s=0.01)
    opts = ExecuteOptions(
        batch_size=2, incremental=True, throttle=MB, wait=True, sample_interval=2.0
    )
    run = Run(sim, plan, opts, journal, clock=sim.now, sleep=sim.sleep)
    printer = paced._printer(run)
    events: list[dict] = []
    shown: dict[str, str] = {}

    def at_the_sixth_sample(e: dict) -> None:
        events.append(e)
        if e["event"] != "sample" or sum(x["event"] == "sample" for x in events) != 6:
            return
        capsys.readouterr()
        printer(e)  # the paced CLI's line (its first progress line is printed at once)
        shown["paced"] = capsys.readouterr().out
        for ev in events:
            panel._on_event(ev)
        panel.refresh()
        shown["panel"] = html.unescape(re.sub(r"<[^>]+>", "", panel.eta_html.value))
        args = reassign_cli.build_parser().parse_args(
            [
                "--progress",
                "--bootstrap-server",
                "sim:9092",
                "--reassignment-json-file",
                str(plan_path),
                "--progress-journal",
                journal,
            ]  # fmt: skip
        )
        reassign_cli.HANDLERS["progress"](args, sim, plan)
        shown["--progress"] = capsys.readouterr().out
        shown["api"] = api.progress(sim, plan, journal).summary()
        shown["journal"] = e["eta"]

    run.subscribe(at_the_sixth_sample)
    assert run.run().state == "done"
    assert set(shown) == {"paced", "panel", "--progress", "api", "journal"}, shown
    # --progress prints a line per partition too: its plan line (the summary) is the last
    values = {k: etas(v)[-1] for k, v in shown.items() if k != "journal"}
    assert shown["--progress"].splitlines()[-1].startswith("plan: ")
    assert re.fullmatch(r"\d+m\d\ds", shown["journal"]), shown["journal"]
    assert set(values.values()) == {shown["journal"]}, values
    # and the same rate: the plan's (bytes received over the window), not a sum of brokers'
    rate = re.compile(r"copy  (\S+ \S+/s)  ETA")
    assert rate.findall(shown["paced"]) == rate.findall(shown["api"]) != []
