"""Builds the sample events (deterministic: same code, same bytes). Run with ``make events``.

The generated samples come from ``hotkeys generate``'s engine with fixed seeds;
the small hand-made ones show one behaviour each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hotkeys.emulator.events import ItemChange, sequence_number, stream_record
from hotkeys.emulator.generate import InjectedHotKey, Workload, generate, shard_event
from hotkeys.emulator.io import write_event_file

HERE = Path(__file__).resolve().parent
START = 1_796_083_200  # 2026-12-01T00:00:00Z

GENERATED = {
    # Ordinary traffic: Zipf popularity, nobody near a limit.
    "mixed-traffic.json": Workload(table="orders", keys=500, rate=5, duration=120, item_bytes=400, seed=11),
    # A ticket sale: event#42 jumps to 900 WCU/s 25 s into a window, for 20 s.
    "hot-key-burst.json.gz": Workload(
        table="tickets",
        keys=2000,
        rate=5,
        duration=120,
        item_bytes=800,
        seed=12,
        hot=(InjectedHotKey("event#42", 900, 25, 20),),
    ),
    # A celebrity profile takes ~15% of a modest table's writes: far from the partition limit.
    "share-small-table.json.gz": Workload(
        table="profiles",
        keys=1000,
        zipf=0.6,
        rate=20,
        duration=120,
        item_bytes=5000,
        item_spread=0,
        seed=13,
        hot=(InjectedHotKey("celebrity#1", 16, 0, 120),),
    ),
    # Write sharding seen from the stream: event#42 spread evenly over 10 suffixes (it works), and
    # poll#7 over 4 suffixes with one drawing most of the writes (uneven: a hot shard).
    "sharded-keys.json.gz": Workload(
        table="votes",
        keys=500,
        rate=5,
        duration=60,
        item_bytes=200,
        seed=15,
        hot=(
            *(InjectedHotKey(f"event#42#{suffix}", 30, 0, 60) for suffix in range(10)),
            InjectedHotKey("poll#7#0", 60, 0, 60),
            *(InjectedHotKey(f"poll#7#{suffix}", 10, 0, 60) for suffix in range(1, 4)),
        ),
    ),
    # Sessions expiring by TTL, mixed with application deletes and updates.
    "ttl-expirations.json": Workload(
        table="sessions", keys=200, rate=2, duration=60, item_bytes=300, ttl_fraction=0.3, seed=14
    ),
}


def poison_record_event() -> dict[str, Any]:
    """Five good writes and one whose NewImage holds an attribute of no DynamoDB type."""
    records = []
    for position in range(6):
        image = {"pk": f"order#{position % 2}", "total": position * 10, "note": "ok"}
        record = stream_record(
            ItemChange(event_name="MODIFY", keys={"pk": image["pk"]}, new_image=image, old_image=image),
            table="orders",
            sequence=sequence_number(0, position),
            event_time=START + position,
        )
        if position == 3:
            record["dynamodb"]["NewImage"]["note"] = {"Q": "not a DynamoDB type"}
        records.append(record)
    return {"Records": records}


def composite_key_event() -> dict[str, Any]:
    """A table keyed by (tenant, sk): the detector counts per tenant, its partition key."""
    records = []
    for position in range(40):
        tenant = "tenant#acme" if position % 4 else f"tenant#{position}"
        keys = {"tenant": tenant, "sk": f"event#{position:04d}"}
        image = {**keys, "kind": "click", "payload": "p" * 1500}
        records.append(
            stream_record(
                ItemChange(event_name="INSERT", keys=keys, new_image=image),
                table="tenant-events",
                sequence=sequence_number(0, position),
                event_time=START + position,
            )
        )
    return {"Records": records}


STATUSES = ("PENDING", "AUTHORIZED", "SETTLED")


def gsi_back_pressure_event() -> dict[str, Any]:
    """A payments table with even keys and a status index: a 20 s sale moves 450 payments a second
    through PENDING → AUTHORIZED → SETTLED, so two index partitions take ~900 WCU/s each
    (a put and a delete per payment) while every table key stays cool. Ordinary traffic (two
    payments a second) follows for two minutes, in which the index cools down."""
    steps: list[tuple[int, int, int]] = []  # (second, payment, step)
    payments = [(second, 450) for second in range(25, 45)] + [(second, 2) for second in range(45, 165)]
    number = 0
    for second, count in payments:
        for _ in range(count):
            steps.extend((second + step, number, step) for step in range(len(STATUSES)))
            number += 1
    steps.sort()
    records = []
    for position, (second, payment, step) in enumerate(steps):
        key = f"payment#{payment:06d}"
        merchant = f"merchant#{payment * 7 % 50:02d}"

        def image(status: str, key: str = key, merchant: str = merchant) -> dict[str, Any]:
            return {"payment_id": key, "status": status, "merchant": merchant, "amount": 1999, "currency": "EUR"}

        records.append(
            stream_record(
                ItemChange(
                    event_name="INSERT" if step == 0 else "MODIFY",
                    keys={"payment_id": key},
                    new_image=image(STATUSES[step]),
                    old_image=None if step == 0 else image(STATUSES[step - 1]),
                ),
                table="payments",
                sequence=sequence_number(0, position),
                event_time=START + second,
            )
        )
    return {"Records": records}


def build(target: Path = HERE) -> None:
    for name, workload in GENERATED.items():
        shards = generate(workload)
        write_event_file(target / name, shard_event(0, shards[0]))
    write_event_file(target / "poison-record.json", poison_record_event())
    write_event_file(target / "composite-key.json", composite_key_event())
    write_event_file(target / "gsi-back-pressure.json.gz", gsi_back_pressure_event())


def main() -> None:
    build()
    print("sample events written to", HERE)


if __name__ == "__main__":
    main()
