"""An independent reading of DynamoDB's TTL rules and item-size limits, for tests to check the
detector's "data health" figures against.

Written from AWS's documentation only, on purpose without the detector's code or assumptions (it imports
nothing of ``hotkeys``): plain Python, ``Decimal`` for numbers, every rule next to the sentence it rests on.
Item sizes themselves are ``tests/reference_sizing.py``'s business; this module takes them as given.

Sources (Amazon DynamoDB Developer Guide and API Reference):

* "Using DynamoDB Time to Live (TTL)", section "Formatting an item's TTL attribute"
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-before-you-start.html);
  the page is now titled "Computing time to live (TTL)" and says the same in fewer words.
* UpdateTimeToLive (API Reference, and boto3's ``update_time_to_live``).
* "DynamoDB item sizes and formats"
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
* "Constraints in Amazon DynamoDB"
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

DAY = 86_400

# "The TTL attribute's value must be a timestamp in Unix epoch time format in seconds. If you use any other
# format, the TTL processes ignore the item." The documentation gives no way to tell a value in another unit
# from one in seconds; this reading's, stated here and nowhere in AWS's text: a number of seconds at or
# past 10**11 lies after the year 5138 (10**11 s is 3,168 years of 365.2425 days after 1970), which no
# one means, so such a number is read as milliseconds (today's instants in milliseconds are ~1.8 * 10**12),
# and one at or past 10**14 as microseconds (today's ~1.8 * 10**15; 10**14 ms would again be year 5138).
MILLISECONDS_FROM = 10**11
MICROSECONDS_FROM = 10**14

# "The TTL attribute value must be a datetimestamp with an expiration of no more than five years in the
# past." / "To be considered for expiry and deletion, the TTL can't be more than five years in the past."
# AWS does not say how a year is counted. Five years are 5 * 365 days at the shortest and 5 * 366 at the
# longest (five calendar years hold one or two leap days: 1,826 or 1,827 days, inside those bounds). Only an
# age over the longest reading is too old under every reading; an age over the shortest but not over the
# longest is too old under some readings and not others: "ambiguous", for tests to skip.
FIVE_YEARS_SHORTEST = 5 * 365 * DAY
FIVE_YEARS_LONGEST = 5 * 366 * DAY

# Constraints: "All size measurements in DynamoDB use binary-based units. DynamoDB denotes 1 KB = 1024
# bytes, 1 MB = 1024 KB". The item size limit is 400 KB (Constraints, "Items"; the size counted as in
# "DynamoDB item sizes and formats": "The total size of an item is the sum of the lengths of its attribute
# names and values"), so 409,600 bytes.
KB = 1024
ITEM_LIMIT = 400 * KB
# "Near the limit": within 12.5% of it, i.e. at least 87.5% of 409,600 bytes = 358,400 bytes.
NEAR_LIMIT = ITEM_LIMIT * 7 // 8
# "Over 10 KB": more than 10,240 bytes.
LARGE_ITEM = 10 * KB

VERDICTS = ("ok", "missing", "not_a_number", "milliseconds", "microseconds", "too_old", "ambiguous")


def ttl_verdict(image: dict[str, Any] | None, attribute: str, written_at: int) -> str:
    """Whether DynamoDB's TTL would act on an item with this image (DynamoDB's typed JSON, as a stream
    carries it: ``{"expireAt": {"N": "1796083200"}}``), written at ``written_at`` (epoch seconds).

    * ``"missing"``: "The item must contain the attribute specified when TTL was enabled on the table.
      For example, if you specify for a table to use the attribute name expdate as the TTL attribute, but
      an item does not have an attribute with that name, the TTL process ignores the item." (A deleted
      item, ``None``, has no attributes at all.)
    * ``"not_a_number"``: "The TTL attribute's value must be a top-level Number data type. For example, if
      you specify for a table to use the attribute name expdate as the TTL attribute, but the attribute on
      an item is a String data type, the TTL processes ignore the item." Any other type (S, B, BOOL, NULL,
      L, M, and the sets, NS included: a set of numbers is not a Number) is not a top-level Number.
    * ``"milliseconds"`` / ``"microseconds"``: "The TTL attribute's value must be a timestamp in Unix epoch
      time format in seconds. If you use any other format, the TTL processes ignore the item." ("The epoch
      time format is the number of seconds elapsed since 12:00:00 AM January 1, 1970 UTC.", UpdateTimeToLive.)
      The thresholds (10**11, 10**14) are this module's reading, see ``MILLISECONDS_FROM``.
    * ``"too_old"``: "The TTL attribute value must be a datetimestamp with an expiration of no more than
      five years in the past. For example, if you set the value of the attribute to 1171734022, that is
      February 17, 2007 17:40:22 (GMT) and older than five years. As a result, the TTL processes will not
      expire that item." Too old under every reading of "five years": more than 5 * 366 days before
      ``written_at`` (negative numbers too). ``"ambiguous"``: more than 5 * 365 days and at most 5 * 366.
    * ``"ok"``: otherwise, as the documentation's own example: "if you set the value of the attribute to
      1645119622, that is Thursday, February 17, 2022 17:40:22 (GMT), the item will be expired after that
      time." A value in the past (but within five years) is ok: TTL expires it.

    A Number with a fraction ("1796083200.5") is a Number: it is classified by its value.
    """
    if image is None or attribute not in image:
        return "missing"
    value = image[attribute]
    if not isinstance(value, dict) or list(value) != ["N"]:
        return "not_a_number"
    number = Decimal(value["N"])  # a stream's Number is a decimal string; a malformed one raises
    if not number.is_finite():
        raise ValueError(f"not a DynamoDB Number: {value['N']!r}")
    if number >= MICROSECONDS_FROM:
        return "microseconds"
    if number >= MILLISECONDS_FROM:
        return "milliseconds"
    # (compared with whole bounds, exactly: no subtraction rounds a 38-digit Number)
    if number < written_at - FIVE_YEARS_LONGEST:
        return "too_old"
    if number < written_at - FIVE_YEARS_SHORTEST:
        return "ambiguous"
    return "ok"


def ttl_counts(items: Iterable[tuple[dict[str, Any] | None, int]], attribute: str) -> Counter[str]:
    """``ttl_verdict`` of each (image, written_at), counted."""
    return Counter(ttl_verdict(image, attribute, written_at) for image, written_at in items)


def nearest_rank(ordered: list[int], percent: float) -> int:
    """The nearest-rank percentile of a sorted, non-empty list: the value at rank ceil(percent/100 * n)
    (1-based, at least 1), a value of the list, never an interpolation."""
    rank = max(1, math.ceil(Decimal(str(percent)) / 100 * len(ordered)))
    return ordered[rank - 1]


def size_figures(sizes: list[int], units: list[int]) -> dict[str, Any]:
    """Figures of the items written in a window: ``sizes`` their sizes in bytes (by DynamoDB's rules),
    ``units`` the write units each write drew, in the same order.

    Percentiles (p50, p95, p99) by the nearest-rank method (``nearest_rank``); ``near_limit`` counts sizes
    of at least 358,400 bytes (within 12.5% of the 400 KB = 409,600-byte item limit); ``items_over_10kb_share``
    is the share of items over 10 KB (10,240 bytes), ``units_over_10kb_share`` the share of the write
    units those items drew ("One write capacity unit = one write per second, for items up to 1 KB in size",
    Constraints: a large item draws many). An empty window is all zeros.
    """
    if len(sizes) != len(units):
        raise ValueError(f"{len(sizes)} sizes but {len(units)} units: one of each per write")
    if not sizes:
        return {
            "items": 0,
            "p50": 0,
            "p95": 0,
            "p99": 0,
            "max": 0,
            "near_limit": 0,
            "units_over_10kb_share": 0.0,
            "items_over_10kb_share": 0.0,
        }
    ordered = sorted(sizes)
    large = [size > LARGE_ITEM for size in sizes]
    total_units = sum(units)
    large_units = sum(unit for unit, is_large in zip(units, large, strict=True) if is_large)
    return {
        "items": len(sizes),
        "p50": nearest_rank(ordered, 50),
        "p95": nearest_rank(ordered, 95),
        "p99": nearest_rank(ordered, 99),
        "max": ordered[-1],
        "near_limit": sum(size >= NEAR_LIMIT for size in sizes),
        "units_over_10kb_share": large_units / total_units if total_units else 0.0,
        "items_over_10kb_share": sum(large) / len(sizes),
    }
