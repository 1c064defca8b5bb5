"""The measurement log: each benchmark run appends a dated entry naming its command, commit and figures."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from bench import measurements


def _git(folder: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *arguments],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def test_each_run_appends_an_entry_with_date_command_commit_and_figures(tmp_path: Path) -> None:
    # Given a log with one earlier entry
    log = tmp_path / "measurements.md"
    log.write_text("# Measurements\n\n## 2026-11-30: `python -m bench.soak`\n\nolder figures\n")
    # When two runs append theirs, one with the benchmark's own lines and one with its JSON
    measurements.append("python -m bench.log_volume", lines=["- 1,538 bytes per 1,000 records"], log=log)
    measurements.append("python -m bench.streaming", {"report_mb": 0.1}, log=log)
    text = log.read_text()
    # Then the earlier entry is kept and the new ones follow it, newest last, each dated today
    today = f"{datetime.now(UTC):%Y-%m-%d}"
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## 2026-11-30: `python -m bench.soak`",
        f"## {today}: `python -m bench.log_volume`",
        f"## {today}: `python -m bench.streaming`",
    ]
    # and each names the commit measured and carries its figures
    head = _git(measurements.ROOT, "rev-parse", "--short", "HEAD")
    assert text.count(f"Commit `{head}`") == 2
    assert "- 1,538 bytes per 1,000 records" in text
    assert json.loads(text.split("```json\n")[1].split("\n```")[0]) == {"report_mb": 0.1}


def test_the_commit_names_uncommitted_changes_outside_docs(tmp_path: Path) -> None:
    # Given a checkout with a committed source file and a committed document
    (tmp_path / "docs").mkdir()
    (tmp_path / "code.py").write_text("A = 1\n")
    (tmp_path / "docs" / "figures.json").write_text("{}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "first")
    head = _git(tmp_path, "rev-parse", "--short", "HEAD")
    # When only the document changes (benchmarks write docs/), the commit is the whole story
    (tmp_path / "docs" / "figures.json").write_text('{"a": 1}\n')
    assert measurements.commit(tmp_path) == f"`{head}`"
    # but a changed source file is named: the figures are not the commit's
    (tmp_path / "code.py").write_text("A = 2\n")
    assert measurements.commit(tmp_path) == f"`{head}` with uncommitted changes to code.py"


def test_the_command_is_written_as_typed() -> None:
    assert (
        measurements.command_line("bench.lambda_process", ["--part", "matrix", "--only", "one full window"])
        == "python -m bench.lambda_process --part matrix --only 'one full window'"
    )
