"""tests/reference_health.py, the oracle of the data-health figures, against AWS's own examples and
cases checked by hand (it is a reference only if it is right)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.reference_health import (
    FIVE_YEARS_LONGEST,
    FIVE_YEARS_SHORTEST,
    ITEM_LIMIT,
    NEAR_LIMIT,
    VERDICTS,
    nearest_rank,
    size_figures,
    ttl_counts,
    ttl_verdict,
)

FEB_17_2022 = 1_645_056_000  # 2022-02-17T00:00:00Z
DOC_OK = 1_645_119_622  # "Thursday, February 17, 2022 17:40:22 (GMT)"
DOC_TOO_OLD = 1_171_734_022  # "February 17, 2007 17:40:22 (GMT) and older than five years"
WRITTEN = 1_796_083_200  # 2026-12-01T00:00:00Z


def _n(value: object) -> dict[str, Any]:
    return {"expireAt": {"N": str(value)}}


def test_the_documentations_examples() -> None:
    # 1645119622 is a valid TTL for an item written on 2022-02-17 (before that time, or just after it)
    assert ttl_verdict(_n(DOC_OK), "expireAt", FEB_17_2022) == "ok"
    assert ttl_verdict(_n(DOC_OK), "expireAt", DOC_OK + 60) == "ok"
    # 1171734022 (2007) written in 2022 is older than five years: TTL will not expire the item
    assert ttl_verdict(_n(DOC_TOO_OLD), "expireAt", FEB_17_2022) == "too_old"
    assert ttl_verdict(_n(DOC_TOO_OLD), "expireAt", DOC_OK) == "too_old"
    # the doc's own attribute name
    assert ttl_verdict({"expdate": {"N": str(DOC_OK)}}, "expdate", FEB_17_2022) == "ok"


@pytest.mark.parametrize(
    "value",
    [
        {"S": str(DOC_OK)},
        {"B": "AAAA"},
        {"BOOL": True},
        {"NULL": True},
        {"L": [{"N": str(DOC_OK)}]},
        {"M": {"at": {"N": str(DOC_OK)}}},
        {"NS": [str(DOC_OK)]},
        {"SS": [str(DOC_OK)]},
    ],
)
def test_a_value_not_a_top_level_number_is_not_a_number(value: dict[str, Any]) -> None:
    assert ttl_verdict({"pk": {"S": "k"}, "expireAt": value}, "expireAt", FEB_17_2022) == "not_a_number"


@pytest.mark.parametrize("image", [None, {}, {"pk": {"S": "k"}}, {"expireat": {"N": str(DOC_OK)}}])
def test_an_absent_attribute_is_missing(image: dict[str, Any] | None) -> None:
    assert ttl_verdict(image, "expireAt", FEB_17_2022) == "missing"


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (DOC_OK * 1000, "milliseconds"),
        (DOC_OK * 1_000_000, "microseconds"),
        (10**11 - 1, "ok"),  # seconds in the year 5138: far, but seconds
        ("99999999999.9", "ok"),
        (10**11, "milliseconds"),
        ("1E+11", "milliseconds"),
        ("100000000000.0", "milliseconds"),
        (10**14 - 1, "milliseconds"),
        (10**14, "microseconds"),
        (10**20, "microseconds"),
    ],
)
def test_the_unit_boundaries(value: object, verdict: str) -> None:
    assert ttl_verdict(_n(value), "expireAt", WRITTEN) == verdict


@pytest.mark.parametrize(
    ("age", "verdict"),
    [
        (0, "ok"),
        (-30 * 86_400, "ok"),  # expires in 30 days
        (365 * 86_400, "ok"),  # expired a year ago: TTL still deletes it
        (FIVE_YEARS_SHORTEST, "ok"),  # five years of 365 days exactly: "no more than five years"
        (FIVE_YEARS_SHORTEST + 1, "ambiguous"),
        (f"{FIVE_YEARS_SHORTEST + 100}.5", "ambiguous"),
        (FIVE_YEARS_LONGEST - 1, "ambiguous"),
        (FIVE_YEARS_LONGEST, "ambiguous"),  # too old if a year is 365 days, not if it is 366
        (f"{FIVE_YEARS_LONGEST}.5", "too_old"),
        (FIVE_YEARS_LONGEST + 1, "too_old"),
        (6 * 365 * 86_400, "too_old"),
    ],
)
def test_the_five_year_bound_and_its_ambiguous_zone(age: int | str, verdict: str) -> None:
    from decimal import Decimal

    value = Decimal(WRITTEN) - Decimal(age)
    assert ttl_verdict(_n(value), "expireAt", WRITTEN) == verdict


def test_the_zone_is_five_days_wide() -> None:
    assert FIVE_YEARS_SHORTEST == 1825 * 86_400 and FIVE_YEARS_LONGEST == 1830 * 86_400


@pytest.mark.parametrize(
    ("value", "written_at", "verdict"),
    [
        ("-1", WRITTEN, "too_old"),
        ("0", WRITTEN, "too_old"),
        ("-100", 100, "ok"),  # 200 s before a write in 1970
        (str(-FIVE_YEARS_LONGEST - 1), 0, "too_old"),
        (str(-FIVE_YEARS_LONGEST), 0, "ambiguous"),
        ("1796083200.5", WRITTEN, "ok"),
        ("1796083200.000000000000000000000000001", WRITTEN, "ok"),
        (f"{WRITTEN - FIVE_YEARS_LONGEST}.000000000000000000000000001", WRITTEN, "ambiguous"),
        (f"{WRITTEN - FIVE_YEARS_LONGEST - 1}.999999999999999999999999999", WRITTEN, "too_old"),
    ],
)
def test_negative_and_decimal_numbers_are_classified_by_value(value: str, written_at: int, verdict: str) -> None:
    assert ttl_verdict({"expireAt": {"N": value}}, "expireAt", written_at) == verdict


def test_counts() -> None:
    items = [
        (_n(WRITTEN + 86_400), WRITTEN),
        (_n(WRITTEN + 86_400), WRITTEN),
        (_n((WRITTEN + 86_400) * 1000), WRITTEN),
        ({"expireAt": {"S": "1796083200"}}, WRITTEN),
        ({"pk": {"S": "k"}}, WRITTEN),
        (None, WRITTEN),
        (_n(WRITTEN - 6 * 365 * 86_400), WRITTEN),
        (_n(WRITTEN - FIVE_YEARS_LONGEST), WRITTEN),
    ]
    assert ttl_counts(items, "expireAt") == Counter(
        ok=2, milliseconds=1, not_a_number=1, missing=2, too_old=1, ambiguous=1
    )
    assert ttl_counts([], "expireAt") == Counter()
    assert set(ttl_counts(items, "expireAt")) <= set(VERDICTS)


@pytest.mark.parametrize(
    ("percent", "expected"),
    # the classic example: [15, 20, 35, 40, 50] has its 5th percentile 15, 30th 20, 40th 20, 50th 35, 100th 50
    [(5, 15), (30, 20), (40, 20), (50, 35), (95, 50), (99, 50), (100, 50)],
)
def test_nearest_rank_on_five_values(percent: float, expected: int) -> None:
    assert nearest_rank([15, 20, 35, 40, 50], percent) == expected


def test_nearest_rank_by_hand() -> None:
    twenty = list(range(1, 21))
    # ranks ceil(0.5 * 20) = 10, ceil(0.95 * 20) = 19 (exactly, no float drift), ceil(0.99 * 20) = 20
    assert [nearest_rank(twenty, p) for p in (50, 95, 99)] == [10, 19, 20]
    hundred = list(range(1, 101))
    assert [nearest_rank(hundred, p) for p in (50, 95, 99, 7)] == [50, 95, 99, 7]
    assert [nearest_rank([42], p) for p in (0, 50, 99)] == [42, 42, 42]
    assert [nearest_rank([10, 20], p) for p in (50, 51, 99)] == [10, 20, 20]


def test_size_figures_by_hand() -> None:
    sizes = [1000, 10_240, 10_241, NEAR_LIMIT - 1, NEAR_LIMIT, ITEM_LIMIT]
    units = [1, 10, 11, 350, 350, 400]
    figures = size_figures(sizes, units)
    assert figures == {
        "items": 6,
        "p50": 10_241,  # rank ceil(3.0) = 3 of the sorted sizes
        "p95": ITEM_LIMIT,  # rank ceil(5.7) = 6
        "p99": ITEM_LIMIT,
        "max": ITEM_LIMIT,
        "near_limit": 2,  # 358,400 and 409,600; not 358,399
        "units_over_10kb_share": pytest.approx((11 + 350 + 350 + 400) / 1122),
        "items_over_10kb_share": pytest.approx(4 / 6),  # 10,240 bytes is 10 KB, not over it
    }
    assert NEAR_LIMIT == 358_400 and ITEM_LIMIT == 409_600


def test_size_figures_keep_the_order_of_sizes_and_units() -> None:
    # the large item's units are counted as the large item's, wherever it stands
    assert size_figures([20_000, 500], [20, 1])["units_over_10kb_share"] == pytest.approx(20 / 21)
    assert size_figures([500, 20_000], [1, 20])["units_over_10kb_share"] == pytest.approx(20 / 21)
    assert size_figures([500, 700], [1, 1])["units_over_10kb_share"] == 0.0


def test_an_empty_window_is_zeros() -> None:
    assert size_figures([], []) == {
        "items": 0,
        "p50": 0,
        "p95": 0,
        "p99": 0,
        "max": 0,
        "near_limit": 0,
        "units_over_10kb_share": 0.0,
        "items_over_10kb_share": 0.0,
    }


def test_sizes_and_units_go_in_pairs() -> None:
    with pytest.raises(ValueError, match="2 sizes but 1 units"):
        size_figures([1, 2], [1])


def test_the_oracle_imports_nothing_of_the_project() -> None:
    source = (Path(__file__).resolve().parents[1] / "reference_health.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "math", "collections", "decimal", "typing", "tests"}
