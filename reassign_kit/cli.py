"""`reassign-kit`: dispatch to the sub-tools. Anything that is not a sub-command is the drop-in
for `kafka-reassign-partitions` (same flags), so runbooks written for it work unchanged."""

from __future__ import annotations

import importlib
import sys

from .errors import ReassignKitError

SUBCOMMANDS = {
    "sandbox": "reassign_kit.sandbox_cli",
    "snapshot": "reassign_kit.plan_cli",
    "plan": "reassign_kit.plan_cli",
    "validate": "reassign_kit.plan_cli",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            mod = importlib.import_module(SUBCOMMANDS[argv[0]])
            rest = argv[1:] if argv[0] == "sandbox" else argv
            return int(mod.main(rest) or 0)
        mod = importlib.import_module("reassign_kit.reassign_cli")
        return int(mod.main(argv) or 0)
    except ReassignKitError as e:
        print(f"reassign-kit: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("reassign-kit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
