"""Item shapes and operation mixes for the Lambda-process benchmark (deterministic per seed).

Each shape is a function of (key, position, rng) → the item's plain attributes; the mix says which
stream operations the records are. Keys follow a Zipf(1.1)-like popularity over 100,000 keys.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

TABLE = "orders"
T0 = 1_796_083_200
Shape = Callable[[str, int, random.Random], dict[str, Any]]


def small(key: str, position: int, rng: random.Random) -> dict[str, Any]:
    """~100 B: a counter-like item."""
    return {"pk": key, "n": Decimal(position), "status": rng.choice(("NEW", "PAID", "SHIPPED")), "ts": T0 + position}


def kb_12(key: str, position: int, rng: random.Random) -> dict[str, Any]:
    """~1 KB in 12 attributes, most of the bytes in one string."""
    item: dict[str, Any] = {"pk": key, "body": "x" * 850, "ts": T0 + position}
    item.update({f"a{i}": rng.choice(("alpha", "beta", "gamma")) for i in range(5)})
    item.update({f"n{i}": Decimal(rng.randrange(10**6)) for i in range(4)})
    return item


def kb_30(key: str, position: int, rng: random.Random) -> dict[str, Any]:
    """~1 KB in 30 attributes of mixed types."""
    item: dict[str, Any] = {"pk": key, "ts": T0 + position}
    item.update({f"s{i}": "v" * rng.randrange(20, 40) for i in range(14)})
    item.update({f"n{i}": Decimal(rng.randrange(10**9)) / 100 for i in range(10)})
    item.update({f"b{i}": rng.random() < 0.5 for i in range(4)})
    return item


def nested_40kb(key: str, position: int, rng: random.Random) -> dict[str, Any]:
    """~40 KB of nested lists and maps (an order with its lines)."""
    lines = [
        {
            "sku": f"sku-{rng.randrange(10**5)}",
            "qty": Decimal(rng.randrange(1, 9)),
            "tags": ["a", "b"],
            "note": "n" * 60,
        }
        for _ in range(300)
    ]
    return {"pk": key, "ts": T0 + position, "lines": lines, "numbers": [Decimal(i) for i in range(200)]}


def kb_12_ttl(key: str, position: int, rng: random.Random) -> dict[str, Any]:
    """The 1 KB, 12-attribute item with the deployed TTL attribute (``expireAt``) in epoch seconds, a
    month ahead: every write's TTL is judged on the usual path (the plain shape has none)."""
    return {**kb_12(key, position, rng), "expireAt": Decimal(T0 + 30 * 86_400 + position)}


SHAPES: dict[str, Shape] = {
    "100B": small,
    "1KB-12": kb_12,
    "1KB-12-ttl": kb_12_ttl,
    "1KB-30": kb_30,
    "40KB-nested": nested_40kb,
}


@dataclass(frozen=True)
class Mix:
    name: str
    insert: float
    modify: float
    remove: float
    ttl: float


MIXES = {
    "modify": Mix("modify", 0.0, 1.0, 0.0, 0.0),
    "mixed": Mix("mixed", 0.3, 0.5, 0.1, 0.1),
    "ttl-only": Mix("ttl-only", 0.0, 0.0, 0.0, 1.0),
}


# Global secondary indexes of the 1 KB, 12-attribute shape, on its three-valued attributes a0..a4:
# low-cardinality index keys, every projection type.
_PROJECTIONS: tuple[dict[str, Any], ...] = (
    {"ProjectionType": "KEYS_ONLY"},
    {"ProjectionType": "ALL"},
    {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n0", "n1"]},
    {"ProjectionType": "KEYS_ONLY"},
    {"ProjectionType": "ALL"},
)


def proposals(indexes: int) -> str:
    """The same ``indexes`` GSIs as ``table_description`` gives, as what-if proposals (``WHAT_IF_INDEXES``)."""
    texts = []
    for number in range(indexes):
        projection = _PROJECTIONS[number]
        kind = str(projection["ProjectionType"])
        if kind == "INCLUDE":
            kind = f"INCLUDE({','.join(projection['NonKeyAttributes'])})"
        texts.append(f"by-a{number}=a{number}:{kind}")
    return ";".join(texts)


def table_description(key_schema: list[dict[str, str]], indexes: int) -> dict[str, Any]:
    """DescribeTable's answer for the benchmark's table, with ``indexes`` GSIs (at most five)."""
    definitions = [{"AttributeName": element["AttributeName"], "AttributeType": "S"} for element in key_schema]
    definitions += [{"AttributeName": f"a{number}", "AttributeType": "S"} for number in range(indexes)]
    gsis = [
        {
            "IndexName": f"by-a{number}",
            "KeySchema": [{"AttributeName": f"a{number}", "KeyType": "HASH"}],
            "Projection": _PROJECTIONS[number],
            "IndexStatus": "ACTIVE",
        }
        for number in range(indexes)
    ]
    table: dict[str, Any] = {"TableName": TABLE, "KeySchema": key_schema, "AttributeDefinitions": definitions}
    if gsis:
        table["GlobalSecondaryIndexes"] = gsis
    return {"Table": table}


def zipf_key(rng: random.Random, keys: int = 100_000) -> str:
    # Inverse-CDF-free approximation: popular keys are the small ranks.
    rank = int(keys ** rng.random() ** 1.1) - 1
    return f"key#{rank:06d}"


def records(shape: str, mix: str, count: int, composite: bool = False, seed: int = 1) -> list[dict[str, Any]]:
    """``count`` stream records of this shape and mix, one per 1 ms of event time (1,000 records/s)."""
    rng = random.Random(seed)
    build, chosen = SHAPES[shape], MIXES[mix]
    out = []
    for position in range(count):
        key = zipf_key(rng)
        item = build(key, position, rng)
        keys: dict[str, Any] = {"pk": key}
        if composite:
            item["sk"] = f"line#{position % 50:03d}"
            keys["sk"] = item["sk"]
        draw = rng.random()
        if draw < chosen.insert:
            name, new, old, ttl = "INSERT", item, None, False
        elif draw < chosen.insert + chosen.modify:
            name, new, old, ttl = "MODIFY", item, {**item, "ts": T0}, False
        elif draw < chosen.insert + chosen.modify + chosen.remove:
            name, new, old, ttl = "REMOVE", None, item, False
        else:
            name, new, old, ttl = "REMOVE", None, {**item, "expireAt": T0 - 3600}, True
        out.append(
            stream_record(
                ItemChange(event_name=name, keys=keys, new_image=new, old_image=old, ttl_delete=ttl),
                table=TABLE,
                sequence=sequence_number(0, position),
                event_time=T0 + position // 1000,
            )
        )
    return out
