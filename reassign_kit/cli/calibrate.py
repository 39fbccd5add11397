"""`reassign-kit calibrate`: learn a cluster's effective replication rates and per-move cost
from the journals of earlier runs, for ``--execute --dry-run`` (``whatif``)."""

from __future__ import annotations

import argparse
import json

from .. import whatif
from ..errors import UsageError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reassign-kit calibrate",
        description="Learn per-broker rates and the per-move cost from earlier run journals.",
    )
    p.add_argument(
        "--journal", action="append", required=True, metavar="FILE", help="a run's journal (repeat)"
    )
    p.add_argument(
        "--output",
        required=True,
        metavar="FILE",
        help="where to write the calibration (JSON; --dry-run --calibration FILE reads it)",
    )
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    for path in args.journal:
        try:
            open(path, encoding="utf-8").close()
        except OSError as e:
            raise UsageError(f"--journal: cannot read {path}: {e.strerror}") from None
    cal = whatif.calibrate(args.journal)
    try:
        cal.write(args.output)
    except OSError as e:
        raise UsageError(f"--output: cannot write {args.output}: {e.strerror}") from None
    print(
        json.dumps(
            {
                "output": args.output,
                "moves": cal.moves,
                "share": None if cal.share is None else round(cal.share, 3),
                "lag_s": None if cal.lag_s is None else round(cal.lag_s, 3),
            },
            indent=2,
        )
    )
    return 0
