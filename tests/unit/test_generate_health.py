"""`hotkeys generate --ttl-values SPEC --large-fraction F --large-bytes N`: items whose TTL never fires,
items near DynamoDB's 400 KB limit.

Both are properties of the partition key, derived by hashing (key, seed): the same at every write of a
key, and drawing nothing from the workload's random stream, so a workload without them is the one it
always was (events/'s samples are rebuilt byte for byte, here and by tests/integration/test_samples.py)
and one with them differs only in expireAt and the padding that keeps each item at its size. Sizes are
checked with tests/reference_sizing.py, an independent reading of DynamoDB's size rules.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli import parser as cli_parser
from hotkeys.cli.main import build_parser, main
from hotkeys.emulator.generate import (
    DAY,
    MAX_LARGE_BYTES,
    TOO_OLD_SECONDS,
    TTL_FORMATS,
    GenerateError,
    Workload,
    generate,
    is_large,
    parse_ttl_values,
    shard_event,
    ttl_format,
)
from hotkeys.emulator.io import write_event_file
from tests.generated import BASE, base_with, images_of, records_of
from tests.reference_sizing import item_bytes

EVENTS = Path(__file__).resolve().parents[2] / "events"
EVERY_FORMAT = tuple((format_, 1 / len(TTL_FORMATS)) for format_ in TTL_FORMATS)


def _is_ttl_deletion(record: dict[str, Any]) -> bool:
    return "userIdentity" in record


def _format_of(value: dict[str, str] | None, when: int) -> str:
    """The format a written expireAt is in, read back from the value and the record's event time."""
    if value is None:
        return "missing"
    if "S" in value:
        seconds = int(value["S"])
        assert value["S"] == str(seconds)
        assert when + DAY <= seconds <= when + 30 * DAY
        return "string"
    number = int(value["N"])
    if number == when - TOO_OLD_SECONDS:
        return "too_old"
    for format_, scale in (("seconds", 1), ("milliseconds", 1_000), ("microseconds", 1_000_000)):
        if number % scale == 0 and when + DAY <= number // scale <= when + 30 * DAY:
            return format_
    raise AssertionError(f"expireAt {value} at {when} is in no format")


def test_every_image_carries_its_keys_format_at_every_write() -> None:
    # Given a workload whose items' TTL comes in every format
    records = records_of(base_with(ttl_values=EVERY_FORMAT))
    assert {record["eventName"] for record in records} == {"INSERT", "MODIFY", "REMOVE"}
    formats: dict[str, set[str]] = {}
    for record in records:
        when = record["dynamodb"]["ApproximateCreationDateTime"]
        images = images_of(record)
        if _is_ttl_deletion(record):
            # Then a TTL deletion's old image keeps the expireAt it always had: seconds, just passed
            (old,) = images
            assert when - DAY <= int(old["expireAt"]["N"]) < when
            continue
        # and every other image, old and new, the hot key's too, is in its key's format, valued from the
        # record's time (an update leaves the TTL as it was: the same in both images)
        values = [image.get("expireAt") for image in images]
        assert all(value == values[0] for value in values)
        formats.setdefault(images[0]["pk"]["S"], set()).add(_format_of(values[0], when))
    # and a key's format is the same at each of its writes: the one its hash gives
    assert all(len(found) == 1 for found in formats.values())
    for key, (found,) in formats.items():
        assert found == ttl_format(key, base_with(ttl_values=EVERY_FORMAT))
    assert "event#42" in formats
    assert set().union(*formats.values()) == set(TTL_FORMATS)


def test_the_format_is_a_hash_of_the_key_and_the_seed() -> None:
    keys = [f"user#{index:07d}" for index in range(2000)]

    def mapping(seed: int) -> list[str | None]:
        return [ttl_format(key, Workload(ttl_values=EVERY_FORMAT, seed=seed)) for key in keys]

    assert mapping(1) == mapping(1)
    assert mapping(1) != mapping(2)
    # and the order the formats are given in changes nothing
    reordered = tuple(reversed(EVERY_FORMAT))
    assert [ttl_format(key, Workload(ttl_values=reordered, seed=1)) for key in keys] == mapping(1)


@pytest.mark.parametrize(
    "shares",
    [
        {"seconds": 0.9, "milliseconds": 0.1},
        {"seconds": 0.5, "string": 0.2, "missing": 0.15, "too_old": 0.1, "microseconds": 0.05},
        {"milliseconds": 1.0},
        {"seconds": 0.7, "missing": 0.3, "string": 0.0},
    ],
)
def test_shares_are_respected_over_many_keys(shares: dict[str, float]) -> None:
    # Given 40,000 keys (seed fixed)
    workload = Workload(ttl_values=tuple(shares.items()), seed=7)
    keys = 40_000
    counts = Counter(ttl_format(f"user#{index:07d}", workload) for index in range(keys))
    # Then each format holds about its share of the keys, and a format without a share none
    assert set(counts) == {format_ for format_, share in shares.items() if share > 0}
    for format_, share in shares.items():
        assert counts[format_] / keys == pytest.approx(share, abs=0.01)


def test_large_keys_are_a_hash_share_of_the_keys() -> None:
    keys = [f"user#{index:07d}" for index in range(40_000)]
    for fraction in (0.0, 0.01, 0.3, 1.0):
        workload = Workload(large_fraction=fraction, seed=3)
        assert sum(is_large(key, workload) for key in keys) / len(keys) == pytest.approx(fraction, abs=0.005)
    # and a key large at a fraction stays large at a higher one (the same hash, a higher bar)
    low, high = Workload(large_fraction=0.1, seed=3), Workload(large_fraction=0.4, seed=3)
    assert all(is_large(key, high) for key in keys if is_large(key, low))


def test_the_random_stream_is_unchanged() -> None:
    # Given the same workload without and with the new options
    plain = records_of(BASE)
    health = records_of(base_with(ttl_values=EVERY_FORMAT, large_fraction=0.2, large_bytes=50_000))
    assert len(plain) == len(health)
    # Then the records are the same but for expireAt, the padding and the sizes they change
    for before, after in zip(plain, health, strict=True):
        assert before["eventID"] == after["eventID"] and before["eventName"] == after["eventName"]
        assert before["dynamodb"]["Keys"] == after["dynamodb"]["Keys"]
        for old, new in zip(images_of(before), images_of(after), strict=True):
            if _is_ttl_deletion(before):
                assert {**old, "note": None} == {**new, "note": None}
            else:
                stripped = {name: value for name, value in new.items() if name != "expireAt"}
                assert {**stripped, "note": None} == {**old, "note": None}


def test_without_the_options_a_committed_sample_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    from events.build import GENERATED

    # Given the sample with TTL deletions, its workload spelled with the new options' defaults
    workload = Workload(**{**GENERATED["ttl-expirations.json"].__dict__, "ttl_values": (), "large_fraction": 0.0})
    write_event_file(tmp_path / "ttl.json", shard_event(0, generate(workload)[0]))
    # Then the file is the committed one, byte for byte
    assert (tmp_path / "ttl.json").read_bytes() == (EVENTS / "ttl-expirations.json").read_bytes()
    # and the CLI's defaults are the workload's
    args = build_parser().parse_args(["generate", "--out", "x.json"])
    assert (args.ttl_values, args.large_fraction, args.large_bytes) == (None, 0.0, Workload().large_bytes)
    # (which --help states, with the largest size, without loading the generator)
    assert f"(default {Workload().large_bytes}, 1 to {MAX_LARGE_BYTES}" in Path(cli_parser.__file__).read_text()


@pytest.mark.parametrize(
    ("formats", "attributes"),
    [
        (EVERY_FORMAT, ()),
        ((("string", 1.0),), (("region", 4),)),
        ((("microseconds", 0.5), ("milliseconds", 0.5)), (("région", 12),)),
    ],
)
def test_items_keep_their_size_by_dynamodbs_rules(
    formats: tuple[tuple[str, float], ...], attributes: tuple[tuple[str, int], ...]
) -> None:
    # Given items large enough to pad (median 2,000 bytes), without and with a TTL attribute
    plain = records_of(base_with(item_bytes=2000, attributes=attributes))
    carrying = records_of(base_with(item_bytes=2000, attributes=attributes, ttl_values=formats))
    # Then each image, old and new, the hot key's included, has the same size by the reference's rules
    sizes = [
        (item_bytes(old), item_bytes(new))
        for before, after in zip(plain, carrying, strict=True)
        for old, new in zip(images_of(before), images_of(after), strict=True)
    ]
    assert sizes and all(old == new for old, new in sizes)
    assert any(
        "expireAt" in image for record in carrying for image in images_of(record) if not _is_ttl_deletion(record)
    )


@pytest.mark.parametrize("large_bytes", [20_000, 380_000])
def test_large_items_are_sized_exactly_by_dynamodbs_rules(large_bytes: int) -> None:
    # Given a workload where a third of the keys have large items, with a TTL and a grouping attribute
    workload = base_with(
        rate=10, large_fraction=0.3, large_bytes=large_bytes, ttl_values=EVERY_FORMAT, attributes=(("region", 4),)
    )
    records = records_of(workload)
    checked = 0
    for record in records:
        key = record["dynamodb"]["Keys"]["pk"]["S"]
        stream = record["dynamodb"]
        written = stream.get("NewImage") or stream["OldImage"]  # the image written (an update's new one)
        if key == "event#42" or _is_ttl_deletion(record):
            continue
        # Then a large key's written image is exactly --large-bytes by the reference's rules, the others far less
        if is_large(key, workload):
            assert item_bytes(written) == large_bytes
            checked += 1
        else:
            assert item_bytes(written) < 10_000
    assert checked > 0


def test_the_largest_large_bytes_keeps_every_image_within_400_kb() -> None:
    # Given every key's items at the largest size allowed, with the largest TTL values and TTL deletions
    workload = Workload(
        keys=5,
        rate=20,
        duration=3,
        ttl_fraction=0.2,
        seed=9,
        large_fraction=1.0,
        large_bytes=MAX_LARGE_BYTES,
        ttl_values=(("microseconds", 1.0),),
    )
    images = [image for record in records_of(workload) for image in images_of(record)]
    # Then no image, old or new, is over 400 KB (409,600 bytes) by the reference's rules
    assert max(item_bytes(image) for image in images) <= 409_600
    assert min(item_bytes(image) for image in images) >= MAX_LARGE_BYTES - 200


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seconds", "--ttl-values must look like 'seconds=0.9,milliseconds=0.1' (FORMAT=SHARE,...), got 'seconds'"),
        ("", "--ttl-values must look like"),
        ("seconds=0.9,", "--ttl-values must look like"),
        ("seconds=ninety", "--ttl-values: the share of 'seconds' is not a number: 'ninety'"),
        ("hours=1", "--ttl-values: unknown format 'hours' (the formats: seconds, milliseconds, microseconds"),
        ("=1", "--ttl-values: unknown format ''"),
        ("seconds=0.5,seconds=0.5", "--ttl-values: 'seconds' is given more than once"),
        ("seconds=0.9,milliseconds=0.2", "--ttl-values: the shares must sum to 1, they sum to 1.1"),
        ("seconds=0.5", "--ttl-values: the shares must sum to 1, they sum to 0.5"),
        ("seconds=1.5,missing=-0.5", "--ttl-values: the share of 'seconds' must be between 0 and 1, got 1.5"),
        ("seconds=nan", "--ttl-values: the share of 'seconds' must be between 0 and 1, got nan"),
        ("seconds=0.999999,missing=0.000002", "--ttl-values: the shares must sum to 1"),
    ],
)
def test_bad_ttl_values_are_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(GenerateError) as refused:
        parse_ttl_values(text)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_shares_within_the_tolerance_are_accepted() -> None:
    assert parse_ttl_values("seconds=0.9,milliseconds=0.1") == (("seconds", 0.9), ("milliseconds", 0.1))
    assert parse_ttl_values(" seconds = 0.7 , missing=0.3") == (("seconds", 0.7), ("missing", 0.3))
    assert dict(parse_ttl_values("seconds=0.3333333333,string=0.3333333333,missing=0.3333333334"))["missing"] > 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"large_fraction": -0.1}, "--large-fraction must be between 0 and 1, got -0.1"),
        ({"large_fraction": 1.5}, "--large-fraction must be between 0 and 1, got 1.5"),
        ({"large_fraction": float("nan")}, "--large-fraction must be between 0 and 1, got nan"),
        ({"large_bytes": 0}, f"--large-bytes must be between 1 and {MAX_LARGE_BYTES}"),
        ({"large_bytes": MAX_LARGE_BYTES + 1}, f"--large-bytes must be between 1 and {MAX_LARGE_BYTES}"),
        ({"ttl_values": (("seconds", 0.4),)}, "--ttl-values: the shares must sum to 1"),
        ({"ttl_values": (("days", 1.0),)}, "--ttl-values: unknown format 'days'"),
    ],
)
def test_the_workload_refuses_what_it_is_given_directly(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(GenerateError) as refused:
        Workload(**changes).validate()
    assert message in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ttl-values", "seconds=0.9,milliseconds=0.2"], "--ttl-values: the shares must sum to 1, they sum to 1.1"),
        (["--ttl-values", "weeks=1"], "--ttl-values: unknown format 'weeks'"),
        (["--ttl-values", "seconds"], "--ttl-values must look like 'seconds=0.9,milliseconds=0.1'"),
        (["--large-fraction", "2"], "--large-fraction must be between 0 and 1, got 2"),
        (["--large-fraction", "-0.5"], "--large-fraction must be between 0 and 1, got -0.5"),
        (["--large-bytes", "409600"], f"--large-bytes must be between 1 and {MAX_LARGE_BYTES}"),
        (["--large-bytes", "0"], f"--large-bytes must be between 1 and {MAX_LARGE_BYTES}"),
    ],
)
def test_the_cli_refuses_in_one_line_with_status_2(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", "--out", str(tmp_path / "x.json"), "--duration", "5", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert message in err
    assert not list(tmp_path.iterdir())


def test_the_cli_writes_the_formats_and_sizes_asked_for(tmp_path: Path) -> None:
    from hotkeys.emulator.io import read_event_file

    # Given a run with half the keys' TTL in milliseconds and every key's items large
    out = tmp_path / "x.json"
    flags = ["--ttl-values", "seconds=0.5,milliseconds=0.5", "--large-fraction", "1", "--large-bytes", "30000"]
    assert main(["generate", "--out", str(out), "--rate", "20", "--duration", "3", "--keys", "50", *flags]) == 0
    records = read_event_file(out)["Records"]
    # Then the items carry both formats and are 30,000 bytes by the reference's rules
    formats = {
        _format_of(image.get("expireAt"), record["dynamodb"]["ApproximateCreationDateTime"])
        for record in records
        for image in images_of(record)
    }
    assert formats == {"seconds", "milliseconds"}
    assert {item_bytes(record["dynamodb"].get("NewImage") or record["dynamodb"]["OldImage"]) for record in records} == {
        30_000
    }


def test_the_oracle_reads_each_format_as_the_figure_it_stands_for() -> None:
    from tests.reference_health import ttl_verdict

    # Given items in every format (TTL deletions aside: their expireAt is the one TTL just acted on)
    workload = base_with(ttl_values=EVERY_FORMAT)
    expected = {
        "seconds": "ok",
        "milliseconds": "milliseconds",
        "microseconds": "microseconds",
        "string": "not_a_number",
        "missing": "missing",
        "too_old": "too_old",
    }
    seen = set()
    for record in records_of(workload):
        if _is_ttl_deletion(record):
            continue
        when = record["dynamodb"]["ApproximateCreationDateTime"]
        for image in images_of(record):
            # Then the independent reading of AWS's TTL rules gives each the verdict its format is for
            format_ = ttl_format(image["pk"]["S"], workload)
            assert format_ is not None
            assert ttl_verdict(image, "expireAt", when) == expected[format_]
            seen.add(format_)
    assert seen == set(TTL_FORMATS)
