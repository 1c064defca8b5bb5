"""An independent reading of DynamoDB's item-size rules, for tests to check the detector's sizing against.

Written from the documentation ("Capacity unit calculations": names and strings in UTF-8 bytes,
numbers about one byte per two significant digits plus one, binary in raw bytes, BOOL and NULL one
byte, lists and maps 3 bytes plus one per element, sets the sum of their members) and on purpose
unlike the production walk: Decimal for numbers, base64 decoding for binary, plain recursion.
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal
from typing import Any

KIB = 1024


def number_bytes(text: str) -> int:
    digits = "".join(map(str, Decimal(text).as_tuple().digits)).strip("0") or "0"  # exact, any length
    return math.ceil(len(digits) / 2) + 1


def value_bytes(value: dict[str, Any]) -> int:
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(raw.encode("utf-8"))
    if kind == "N":
        return number_bytes(raw)
    if kind == "B":
        return len(base64.b64decode(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode("utf-8")) for member in raw)
    if kind == "NS":
        return sum(number_bytes(member) for member in raw)
    if kind == "BS":
        return sum(len(base64.b64decode(member)) for member in raw)
    if kind == "L":
        return 3 + sum(1 + value_bytes(member) for member in raw)
    if kind == "M":
        return 3 + sum(1 + len(name.encode("utf-8")) + value_bytes(member) for name, member in raw.items())
    raise ValueError(f"not a DynamoDB type: {kind}")


def item_bytes(image: dict[str, Any] | None) -> int:
    return sum(len(name.encode("utf-8")) + value_bytes(value) for name, value in (image or {}).items())


def write_units(old: dict[str, Any] | None, new: dict[str, Any] | None) -> int:
    """A write costs its larger image, one unit per started KB, at least one."""
    return max(1, math.ceil(max(item_bytes(old), item_bytes(new)) / KIB))
