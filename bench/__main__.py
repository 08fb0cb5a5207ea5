"""``bin/bench [PART|all] [--quick] [part options]``: run benchmark parts (PARTS below)."""

from __future__ import annotations

import importlib
import importlib.util
import sys

PARTS = ("drive", "search", "facts", "context", "faces", "store", "processes", "daemon", "recall", "meaning", "ui")
USAGE = f"usage: bin/bench [{'|'.join(PARTS)}|all] [--quick] [options of the part]"


def main(argv: list[str]) -> int:
    if argv and argv[0] in {"-h", "--help"}:
        print(USAGE)
        print("  all (the default) runs every part that exists; --quick runs fewer rounds.")
        return 0
    choice = argv[0] if argv and not argv[0].startswith("-") else "all"
    rest = argv[1:] if argv and not argv[0].startswith("-") else argv
    if choice != "all" and choice not in PARTS:
        print(f"Error: no benchmark part {choice!r}. {USAGE}", file=sys.stderr)
        return 2
    status = 0
    for part in PARTS if choice == "all" else (choice,):
        if importlib.util.find_spec(f"bench.{part}") is None:
            print(f"== {part}: skipped (bench/{part}.py does not exist yet)\n")
            continue
        print(f"== {part}")
        status = importlib.import_module(f"bench.{part}").main(list(rest)) or status
        print()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
