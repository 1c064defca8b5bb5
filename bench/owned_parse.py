"""The ceiling of owning the parse (issue #16): what a function that decoded its own event bytes
(a wrapper script running its own Runtime API loop) could save at most.

Per cell, in a fresh interpreter set up as ``bench.lambda_process`` sets up a container (deployed
wiring, AWS answered in-process, ``gc.freeze()`` after initialisation), the same events go through
the same handler three times each, decoded by ``json.loads`` (the managed runtime's parse),
``orjson.loads`` and a ``msgspec`` decoder, interleaved, twice; the lower of the two runs counts.
The HTTP of a Runtime API loop is left out (it would only add cost), so the ratio managed / owned
is the most owning the parse can cut the bill by. Writes docs/owned-parse-latest.json.

    python -m bench.owned_parse
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "owned-parse-latest.json"
CELLS = (("1KB-12", "mixed", 1000), ("1KB-30", "mixed", 1000), ("100B", "mixed", 1000), ("1KB-12", "ttl-only", 1000))
SHIP_IF = 1.5  # the bar: ship only if owning the parse cuts total CPU by this much


def child(folder: str) -> dict[str, Any]:
    from bench.lambda_process import _invoke_all, deployed_handler

    handle, _answers = deployed_handler()
    import msgspec
    import orjson

    paths = sorted(Path(folder).glob("event-*.json"))
    decoders: dict[str, Callable[[bytes], Any]] = {
        "json": json.loads,
        "orjson": orjson.loads,
        "msgspec": msgspec.json.Decoder().decode,
    }
    best: dict[str, tuple[float, float, int]] = {}
    for _round in range(2):
        for name, loads in decoders.items():
            bill = _invoke_all(handle, paths, final=False, loads=loads)
            if name not in best or bill.parse + bill.handler < sum(best[name][:2]):
                best[name] = (bill.parse, bill.handler, bill.records)
    result: dict[str, Any] = {}
    for name, (parse, handler, records) in best.items():
        result[name] = {
            "parse_us": round(1e6 * parse / records, 1),
            "handler_us": round(1e6 * handler / records, 1),
            "total_us": round(1e6 * (parse + handler) / records, 1),
        }
    managed = result["json"]["total_us"]
    for name in ("orjson", "msgspec"):
        result[name]["managed_to_owned"] = round(managed / result[name]["total_us"], 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    from bench.lambda_process import write_events
    from bench.shapes import records as make_records

    results = []
    for shape, mix, batch in CELLS:
        records = make_records(shape, mix, args.records, composite=False)
        with tempfile.TemporaryDirectory() as folder:
            write_events(folder, records, batch)
            output = subprocess.run(
                [sys.executable, "-m", "bench.owned_parse", "--child", folder],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        cell = {"cell": f"{shape} {mix}, batch {batch}", **json.loads(output.strip().splitlines()[-1])}
        print(json.dumps(cell), flush=True)
        results.append(cell)
    best = max(cell[name]["managed_to_owned"] for cell in results for name in ("orjson", "msgspec"))
    verdict = "ship behind an option" if best >= SHIP_IF else "do not ship"
    print(f"largest cut in total CPU: {best}x (bar: {SHIP_IF}x): {verdict}")
    figures = {"cells": results, "largest_cut": best, "verdict": verdict}
    OUTPUT.write_text(json.dumps(figures, indent=1) + "\n")
    from bench.measurements import append, command_line

    rows = [
        f"| {cell['cell']} | {cell['json']['total_us']} | {cell['orjson']['total_us']} | {cell['msgspec']['total_us']} |"
        for cell in results
    ]
    table = ["| cell | json µs | orjson µs | msgspec µs |", "|---|---:|---:|---:|", *rows]
    append(
        command_line("bench.owned_parse", argv), lines=[*table, "", f"Largest cut {best}× (bar {SHIP_IF}×): {verdict}."]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
