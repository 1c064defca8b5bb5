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
import contextlib
import gc
import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "owned-parse-latest.json"
CELLS = (("1KB-12", "mixed", 1000), ("1KB-30", "mixed", 1000), ("100B", "mixed", 1000), ("1KB-12", "ttl-only", 1000))
SHIP_IF = 1.5  # the bar: ship only if owning the parse cuts total CPU by this much


def child(folder: str) -> dict[str, Any]:
    from bench.lambda_process import WINDOW, _container_environment, _Context

    _container_environment()
    import msgspec
    import orjson

    from bench.answers import CannedAws
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.app import Container, build_handler
    from hotkeys.detector.config import Settings
    from hotkeys.detector.wiring import build_ports

    settings = Settings(
        stats_table_name="bench-stats",
        alert_topic_arn="arn:aws:sns:us-east-1:123456789012:bench-alerts",
        archive_bucket_name="bench-archive",
        ttl_attribute="expireAt",
    )
    aws = AwsClients()
    CannedAws(None, 0).attach(aws)
    container = Container(settings, build_ports(settings, aws))
    handle: Any = build_handler(lambda: container)
    gc.collect()
    gc.freeze()
    bodies = [path.read_bytes() for path in sorted(Path(folder).glob("event-*.json"))]
    decoders: dict[str, Callable[[bytes], Any]] = {
        "json": json.loads,
        "orjson": orjson.loads,
        "msgspec": msgspec.json.Decoder().decode,
    }

    def run(loads: Callable[[bytes], Any]) -> tuple[float, float, int]:
        parse = handler = 0.0
        records = 0
        state: dict[str, Any] = {}
        for body in bodies:
            started = time.process_time()
            event = loads(body)
            parsed = time.process_time()
            event.update({"shardId": "shardId-1", "window": WINDOW, "state": state, "isFinalInvokeForWindow": False})
            with contextlib.redirect_stdout(io.StringIO()):
                response = handle(event, _Context())
            state = loads(json.dumps(response.get("state", {})).encode())
            handler += time.process_time() - parsed
            parse += parsed - started
            records += len(event["Records"])
            del event, response
        return parse, handler, records

    best: dict[str, tuple[float, float, int]] = {}
    for _round in range(2):
        for name, loads in decoders.items():
            parse, handler, records = run(loads)
            if name not in best or parse + handler < sum(best[name][:2]):
                best[name] = (parse, handler, records)
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
    from bench.shapes import records as make_records

    results = []
    for shape, mix, batch in CELLS:
        records = make_records(shape, mix, args.records, composite=False)
        with tempfile.TemporaryDirectory() as folder:
            for index in range(0, len(records), batch):
                body = json.dumps({"Records": records[index : index + batch]}).encode()
                Path(folder, f"event-{index // batch:05d}.json").write_bytes(body)
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
    OUTPUT.write_text(json.dumps({"cells": results, "largest_cut": best, "verdict": verdict}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
