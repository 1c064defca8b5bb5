"""Shows ``hotkeys doctor``'s checks (``doctor.diagnose``): one line each with its fix, or their JSON."""

from __future__ import annotations

import json

from rich.console import Console

from hotkeys.cli.doctor import FAIL, OK, Check, failed, to_json


def exit_status(checks: list[Check]) -> int:
    """1 when a check failed (warnings allowed), else 0."""
    return 1 if failed(checks) else 0


def json_text(checks: list[Check]) -> str:
    return json.dumps(to_json(checks), indent=2)


def render(console: Console, checks: list[Check]) -> int:
    """Each check's verdict, what it found and (unless it passed) its fix; then a verdict line. Returns
    the exit status."""
    marks = {OK: "[green]ok  [/]", FAIL: "[red]FAIL[/]"}
    for check in checks:
        console.print(f"{marks.get(check.verdict, '[yellow]warn[/]')} {check.name}: {check.detail}", highlight=False)
        if check.fix and check.verdict != OK:
            console.print(f"       fix: {check.fix}", markup=False, highlight=False)
    problems = sum(1 for check in checks if check.verdict == FAIL)
    console.print(f"{problems} problem(s) found." if problems else "The detector is watching.")
    return exit_status(checks)
