"""Same-day A/B of the function's billed CPU: an earlier checkout against this one, as deployed.

Ratios between runs on different days mean little on a shared machine (the same code has measured
1.6x apart), so a change's effect is measured by running both versions on the same events, in
alternation, in the same hour. Each side runs in a fresh container-like process with its own code
(``PYTHONPATH`` at its checkout), this checkout's deployed environment (INFO logs, EMF metrics, active
tracing: ``bench.lambda_process._container_environment``) and its own ``deployed_handler``; three
passes per process, the median counted.

    git worktree add /tmp/before <commit>
    python -m bench.compare --before /tmp/before --cell "1KB-12 mixed 1000" --rounds 2

The earlier checkout must have ``bench.lambda_process.deployed_handler`` and ``_invoke_all`` (since
commit 1d54b56).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
# Runs in the checkout under test; the environment comes from this checkout (argv[2]).
CHILD = """
import json, os, statistics, sys
from pathlib import Path
import bench.lambda_process as lp
deployed = json.loads(sys.argv[2])
lp._container_environment = lambda: os.environ.update(deployed)
handle, _answers = lp.deployed_handler(False, 0)
paths = sorted(Path(sys.argv[1]).glob("event-*.json"))
bills = [lp._invoke_all(handle, paths, final=True) for _ in range(3)]
total = statistics.median(bill.parse + bill.handler for bill in bills)
print(json.dumps({"total_us": round(total * 1e6 / bills[0].records, 1)}))
"""


def deployed_environment() -> dict[str, str]:
    from bench.lambda_process import _container_environment

    before = dict(os.environ)
    _container_environment()
    environment = {key: value for key, value in os.environ.items() if before.get(key) != value}
    os.environ.clear()
    os.environ.update(before)
    return environment


def total_us(checkout: Path, folder: str, environment: dict[str, str]) -> float:
    imports_from_checkout = {**os.environ, "PYTHONPATH": f"{checkout / 'functions'}{os.pathsep}{checkout}"}
    output = subprocess.run(
        [sys.executable, "-c", CHILD, folder, json.dumps(environment)],
        cwd=checkout,
        env=imports_from_checkout,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(json.loads(output.strip().splitlines()[-1])["total_us"])


def order(rounds: int) -> list[str]:
    """The sides' runs: each side goes first in every other round. With "before" always first, an
    identical checkout compared at 0.97 (docs/measurements.md): the second process of a pair ran slower."""
    return [
        side for round_ in range(rounds) for side in (("before", "after") if round_ % 2 == 0 else ("after", "before"))
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the earlier commit")
    parser.add_argument("--cell", default="1KB-12 mixed 1000", help='"SHAPE MIX BATCH" (bench/shapes.py)')
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of before and after")
    args = parser.parse_args(argv)
    from bench.lambda_process import write_events
    from bench.shapes import records

    shape, mix, batch = args.cell.split()
    environment = deployed_environment()
    with tempfile.TemporaryDirectory() as folder:
        write_events(folder, records(shape, mix, args.records), int(batch))
        results: dict[str, list[float]] = {"before": [], "after": []}
        checkouts = {"before": args.before.resolve(), "after": HERE}
        for side in order(args.rounds):
            results[side].append(total_us(checkouts[side], folder, environment))
    ratio = min(results["before"]) / min(results["after"])
    figures = {"cell": args.cell, **results, "before_over_after": round(ratio, 2)}
    print(json.dumps(figures))
    from bench.measurements import append, command_line

    append(command_line("bench.compare", argv), figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
