"""Peak memory and time of ``hotkeys generate`` and ``hotkeys replay --report`` on big inputs.

Each command runs in its own process, as a user runs it; the peak resident set size is the
kernel's (``wait4``'s rusage), the time is wall-clock. The default is one million records of
~1 KB items on one saturated shard (1,000 records/s for 1,000 s) over 100,000 Zipf keys, with a
burst: what a captured hour of a busy shard looks like. Writes docs/streaming-latest.json.

    python -m bench.streaming                    # 1 M records (about 10 minutes here)
    python -m bench.streaming --records 100000   # a quicker look
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "streaming-latest.json"
RATE = 1000  # records per second: one saturated shard


def measure(command: list[str]) -> dict[str, Any]:
    """Runs ``command``; its wall time and peak RSS (MB)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    error = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {error}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def run(records: int, folder: Path) -> dict[str, Any]:
    hotkeys = str(Path(sys.executable).parent / "hotkeys")
    events = folder / "big.json.gz"
    duration = max(1, records // RATE)
    generate = [
        hotkeys, "generate", "--out", str(events), "--keys", "100000", "--rate", str(RATE),
        "--duration", str(duration), "--hot", f"event#42:900wcu@{duration // 2}s+20s", "--zipf", "1.1",
    ]  # fmt: skip
    figures: dict[str, Any] = {"records": records + 900 * 20, "generate": measure(generate)}
    figures["file_mb"] = round(events.stat().st_size / 2**20, 1)
    figures["replay_report"] = measure([hotkeys, "replay", str(events), "--report", str(folder / "report.html")])
    figures["report_mb"] = round((folder / "report.html").stat().st_size / 2**20, 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="background records (default 1,000,000)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.records, Path(folder))
    print(json.dumps(figures, indent=1))
    if args.records == 1_000_000:
        OUTPUT.write_text(json.dumps(figures, indent=1) + "\n")
    from bench.measurements import append, command_line

    append(command_line("bench.streaming", argv), figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
