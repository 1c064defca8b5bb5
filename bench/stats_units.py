"""What one stream shard writes to the stats table per window, at a given rate: writes, and the write units
of each stats item and of its window-heads index entry.

The real pipeline (``process_batch``: tumbling windows, the flush rules of ``consumer.pipeline``) counts
a shard's records delivered as the event source mapping delivers them (``hotkeys.deployment.EVENT_SOURCE``):
a batch closes at the batch size (1,000) or when the batching window (5 s of event time) has passed. A
shard writing fewer than 200 records/s never fills a batch: each batch is "quiet" and its segment is
written at once when 5 s passed since its last write (a dozen writes a window); a busier shard writes at the
flush boundaries only (5 a window). Each write is sized as DynamoDB bills it: the stats item
(``snapshots.to_item``) and its window-heads index entry (the stack's index, read back from moto), by the
detector's own DynamoDB size rules. Traffic: Zipf(1.1) over 100,000 keys of 45 bytes (``customer#<uuid>``),
items of about 1 KB (one write unit each).

    python -m bench.stats_units        # writes docs/stats-units-latest.json (a few seconds)
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lanes import moto_environment

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "stats-units-latest.json"
COMMAND = "python -m bench.stats_units"
T0 = 1_796_083_200
TABLE = "orders"
SHARD = "shardId-00000001796083200000-7f3a9c1e"
KEYS = 100_000
ZIPF = 1.1
PAYLOAD_BYTES = 950  # with the key, an item of about 1 KB
# Records per second of one shard: quiet (batches cut by the batching window) up to 199, then saturated.
RATES = (1, 10, 100, 199, 1000)
WINDOWS = 4


def _key(rank: int) -> str:
    return f"customer#{uuid.UUID(int=rank)}"


class SizedWrites:
    """A stats store that sizes each snapshot write as DynamoDB bills it."""

    def __init__(self) -> None:
        from bench.scale import _heads_spec

        self.spec = _heads_spec()
        self.writes: list[tuple[int, int, int]] = []  # (window, item units, index entry units)

    def save_segment(self, snapshot: Any, expires_at: int, bucket: int = 0) -> None:
        from hotkeys.detector.consumer.snapshots import to_item
        from hotkeys.detector.domain.indexes import entry_size
        from hotkeys.detector.domain.sizing import image_size, write_units
        from hotkeys.emulator.events import to_dynamodb_json

        image = to_dynamodb_json(to_item(snapshot, expires_at))
        self.writes.append(
            (snapshot.window_start, write_units(image_size(image)), write_units(entry_size(self.spec, image)))
        )

    def shard_segments(self, table: str, start: int, shard_id: str) -> list[Any]:
        return []

    def save_seen(self, name: str, data: bytes, expires_at: int) -> None:
        pass  # (DynamoDB Streams' shards, which this sizes, store none)

    def load_seen(self, name: str) -> bytes | None:
        return None


def _records(rate: int, rng: random.Random) -> list[dict[str, Any]]:
    from hotkeys.emulator.events import ItemChange, stream_record

    weights = [1 / rank**ZIPF for rank in range(1, KEYS + 1)]
    records: list[dict[str, Any]] = []
    for second in range(WINDOWS * 60):
        for rank in rng.choices(range(1, KEYS + 1), weights, k=rate):
            image = {"pk": _key(rank), "payload": "x" * PAYLOAD_BYTES}
            records.append(
                stream_record(
                    ItemChange(event_name="MODIFY", keys={"pk": image["pk"]}, new_image=image, old_image=image),
                    table=TABLE,
                    sequence=str(10**20 + len(records)),
                    event_time=T0 + second,
                )
            )
    return records


def _batches(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The mapping's batches of one window's records: closed at the batch size, or once the batching window
    (in event time) has passed since the batch's first record."""
    from hotkeys.deployment import EVENT_SOURCE

    batches: list[list[dict[str, Any]]] = []
    for record in records:
        at = record["dynamodb"]["ApproximateCreationDateTime"]
        current = batches[-1] if batches else None
        if (
            current is None
            or len(current) >= EVENT_SOURCE.batch_size
            or at - current[0]["dynamodb"]["ApproximateCreationDateTime"] >= EVENT_SOURCE.max_batching_window_seconds
        ):
            batches.append([record])
        else:
            current.append(record)
    return batches


def measure(rate: int, seed: int = 5) -> dict[str, Any]:
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.pipeline import Ports, StreamBatch, process_batch

    settings = Settings(stats_table_name="stats")
    stats = SizedWrites()
    ports = Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}))
    records = _records(rate, random.Random(seed))
    state: dict[str, Any] = {}
    invocations = 0
    for window in range(WINDOWS):
        start = T0 + 60 * window
        mine = [r for r in records if start <= r["dynamodb"]["ApproximateCreationDateTime"] < start + 60]
        for batch in [*_batches(mine), []]:
            final = not batch
            outcome = process_batch(StreamBatch(batch, SHARD, (start, start + 60), state, final), settings, ports)
            state = outcome.state or {}
            invocations += 1
    writes = stats.writes
    return {
        "records_per_second": rate,
        "windows": WINDOWS,
        "invocations": invocations,
        "writes": len(writes),
        "writes_per_window": round(len(writes) / WINDOWS, 2),
        "item_units_per_write": round(sum(w[1] for w in writes) / len(writes), 3),
        "item_units_largest": max(w[1] for w in writes),
        "index_entry_units_per_write": round(sum(w[2] for w in writes) / len(writes), 3),
        "index_entry_units_largest": max(w[2] for w in writes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(OUTPUT))
    args = parser.parse_args(argv)
    moto_environment()
    from hotkeys.detector.observability import logger

    logger.setLevel("CRITICAL")
    runs = []
    for rate in RATES:
        run = measure(rate)
        print(json.dumps(run), flush=True)
        runs.append(run)
    output = {
        "benchmark": "stats_units",
        "command": " ".join([COMMAND, *(sys.argv[1:] if argv is None else argv)]),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "keys": {"count": KEYS, "zipf": ZIPF, "bytes": len(_key(1))},
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(output, indent=1) + "\n")
    from bench.measurements import append, command_line

    lines = [
        f"- {run['records_per_second']:,} records/s of one shard: {run['writes_per_window']:g} writes a window, "
        f"{run['item_units_per_write']:g} write units per stats item (largest {run['item_units_largest']}), "
        f"{run['index_entry_units_per_write']:g} per window-heads entry (largest {run['index_entry_units_largest']})"
        for run in runs
    ]
    append(command_line("bench.stats_units", argv), lines=lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
