"""The dated measurement log, docs/measurements.md: every benchmark run appends one entry.

An entry names the date, the command as typed, the commit measured (and whether the working tree
had uncommitted changes outside docs/, which the benchmarks write), the machine, and the figures:
the lines the benchmark chose (a table, a few bullets), else the run's JSON. Design documents quote
figures from this log by date and command; code comments do not carry figures.

    python -m bench.measurements --command "python -m bench.soak" --json docs/soak-latest.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "docs" / "measurements.md"
# The test suite runs benchmarks to check they work; it points this at os.devnull (tests/conftest.py).
LOG_VARIABLE = "HOTKEYS_MEASUREMENTS_LOG"


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """The command a user typed to run ``module`` with ``argv`` (``sys.argv[1:]`` by default)."""
    import shlex

    arguments = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m", module, *(shlex.quote(argument) for argument in arguments)])


def commit(root: Path = ROOT) -> str:
    """The checkout measured: its commit, and the files outside docs/ it had changed, if any."""

    def git(*arguments: str) -> str:
        done = subprocess.run(["git", *arguments], cwd=root, capture_output=True, text=True, check=False)
        return done.stdout if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    changed = [
        line[3:]
        for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
        if not line[3:].startswith("docs/")
    ]
    return f"`{head}`" + (f" with uncommitted changes to {', '.join(changed)}" if changed else "")


def entry(command: str, figures: Any = None, lines: Sequence[str] = (), *, when: datetime | None = None) -> str:
    """One log entry: date, command, commit, machine, then ``lines`` or else ``figures`` as JSON."""
    date = f"{(when or datetime.now(UTC)):%Y-%m-%d}"
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    body = list(lines) if lines else ["```json", json.dumps(figures, indent=1, sort_keys=False), "```"]
    return "\n".join([f"## {date}: `{command}`", "", f"Commit {commit()}; {machine}.", "", *body, ""])


def append(command: str, figures: Any = None, lines: Sequence[str] = (), *, log: Path | None = None) -> None:
    """Appends this run's entry to the log (newest last)."""
    log = log or Path(os.environ.get(LOG_VARIABLE) or LOG)
    text = log.read_text() if log.exists() else ""
    log.write_text(text.rstrip("\n") + "\n\n" + entry(command, figures, lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--command", required=True, help="the command that produced the figures")
    parser.add_argument("--json", type=Path, required=True, help="the run's JSON output")
    args = parser.parse_args(argv)
    append(args.command, json.loads(args.json.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
