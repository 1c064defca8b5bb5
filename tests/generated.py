"""A small generated workload shared by the generator's tests: background writes of every kind (TTL
deletions included) and a --hot key's writes, with helpers to read its records and their images."""

from __future__ import annotations

from typing import Any

from hotkeys.emulator.generate import InjectedHotKey, Workload, generate

BASE = Workload(keys=40, rate=60, duration=20, ttl_fraction=0.1, seed=5, hot=(InjectedHotKey("event#42", 30, 2, 3),))


def records_of(workload: Workload) -> list[dict[str, Any]]:
    return [record for records in generate(workload).values() for record in records]


def images_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    stream = record["dynamodb"]
    return [stream[side] for side in ("NewImage", "OldImage") if side in stream]


def base_with(**changes: Any) -> Workload:
    return Workload(**{**BASE.__dict__, **changes})
