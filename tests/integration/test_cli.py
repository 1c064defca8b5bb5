"""The hotkeys CLI as a user runs it: output formats and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import boto3
import pytest

from hotkeys.cli import cost
from hotkeys.cli.main import main
from hotkeys.detector.config import Settings

DEFAULTS = Settings(stats_table_name="s")

TOP_FIELDS = [
    "table",
    "index",
    "key",
    "window_start",
    "window_seconds",
    "writes",
    "wcu",
    "wcu_per_second",
    "at_most_wcu_per_second",
    "share",
    "error_bound",
    "items",
]


def test_top_json_after_a_replay_lists_the_hottest_keys(stats_table_name: str, capsys: pytest.CaptureFixture) -> None:
    # Given the sample burst replayed into this stats table (same backend)
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay(["events/hot-key-burst.json.gz"], LocalResources(stats_table=stats_table_name))
    # When `hotkeys top --json` reads it
    assert (
        main(
            [
                "top",
                "--stats-table",
                stats_table_name,
                "--since",
                "2026-12-01T00:00:00Z",
                "--json",
                "--limit",
                "3",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    # Then the hottest key comes first with exactly the documented fields
    assert [list(row) for row in rows] == [TOP_FIELDS] * 3
    assert rows[0]["key"] == "event#42" and rows[0]["table"] == "tickets"
    assert rows[0]["wcu"] == 18_000 and rows[0]["wcu_per_second"] == 900.0
    # (its rate: the 900 WCU/s burst's, which the alert rule reads; nothing pruned, so at most the same)
    assert rows[0]["at_most_wcu_per_second"] == 900.0
    assert rows[0]["window_start"] == "2026-12-01T00:00:00Z" and 0.97 < rows[0]["share"] <= 1


def test_top_table_output_and_filters(stats_table_name: str, capsys: pytest.CaptureFixture) -> None:
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay(["events/mixed-traffic.json", "events/ttl-expirations.json"], LocalResources(stats_table_name))
    assert main(["top", "--stats-table", stats_table_name, "--table", "sessions", "--last", "1"]) == 0
    out = capsys.readouterr().out
    assert "Hottest partition keys" in out and "sessions" in out and "orders" not in out
    # A table with no figures (a misspelt name) is answered with the tables that have some
    assert main(["top", "--stats-table", stats_table_name, "--table", "session"]) == 0
    assert capsys.readouterr().out.strip() == (
        "No figures yet for that selection (no window of table 'session'; tables with figures: orders, sessions)."
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", "no/such/file.json"], "event file not found: no/such/file.json"),
        (["top", "--stats-table", "missing-table"], "--stats-table 'missing-table': no such table"),
        (["top", "--stats-table", "t", "--since", "yesterday"], "--since must be an ISO 8601 time"),
        (["top", "--stats-table", "t", "--limit", "0"], "argument --limit: must be at least 1, got 0"),
        (["top", "--stats-table", "t", "--last", "-2"], "argument --last: must be at least 1, got -2"),
        (
            ["top", "--stats-table", "t", "--partition-limit", "0"],
            "--partition-limit: must be between 1 and 1,000,000",
        ),
        (["replay", "x.json", "--limit", "-3"], "argument --limit: must be at least 1, got -3"),
        (["top", "--stats-table", "t", "--endpoint-url", "not-a-url"], "argument --endpoint-url: must be an http(s)"),
        (["watch", "--table", "t", "--duration", "-1"], "argument --duration: must be at least 0, got -1"),
        (["watch", "--table", "t", "--json"], "--json needs --once"),
        (
            ["watch", "--table", "t", "--window-seconds", "1000"],
            "--window-seconds: must be between 1 and 900, got 1000",
        ),
        (["generate", "--out", "x.json", "--start", "bad"], "argument --start: must be an ISO 8601 time"),
        (["generate", "--out", "x.json", "--hot", "oops"], "--hot must look like"),
        (["generate", "--out", "/proc/no/such/x.json", "--duration", "1"], "--out: '/proc/no/such' is not a folder"),
        (["generate", "--out", "/proc/x.json", "--duration", "1"], "--out: cannot write"),
        (["cost", "--writes-per-second", "10", "--memory-mb", "20000"], "argument --memory-mb: must be at most 10240"),
        (["generate", "--out", "x.json", "--zipf", "-2"], "argument --zipf: must be above 0"),
        (["replay", "events"], "events is a folder: name the event files in it"),
        (["replay", "/dev/null"], "/dev/null is not a regular file (a device or a pipe): name an event file"),
        (["generate", "--out", "x.txt", "--duration", "1"], "--out: name a .json or .json.gz file"),
        (["cost", "--writes-per-second", "0"], "argument --writes-per-second: must be above 0"),
        (["cost"], "the following arguments are required: --writes-per-second"),
        # a misspelt flag is named before the required one it left missing
        (
            ["cost", "--write-per-second", "10"],
            "unrecognized argument --write-per-second (did you mean --writes-per-second?)",
        ),
        (["--bogus"], "unrecognized argument --bogus"),
    ],
)
def test_user_mistakes_get_one_line(aws: None, capsys: pytest.CaptureFixture, argv: list, message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_replay_rejects_a_file_that_is_not_an_event(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    assert main(["replay", str(bogus)]) == 2
    assert "not a DynamoDB stream event" in capsys.readouterr().err


def test_generate_is_reproducible_by_seed(tmp_path: Path) -> None:
    args = [
        "generate",
        "--rate",
        "20",
        "--duration",
        "5",
        "--keys",
        "50",
        "--ttl-fraction",
        "0.1",
        "--hot",
        "k:30wcu@1s+2s",
        "--seed",
        "7",
    ]
    assert main([*args, "--out", str(tmp_path / "a.json.gz")]) == 0
    assert main([*args, "--out", str(tmp_path / "b.json.gz")]) == 0
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()
    assert main([*args[:-1], "8", "--out", str(tmp_path / "c.json.gz")]) == 0
    assert (tmp_path / "a.json.gz").read_bytes() != (tmp_path / "c.json.gz").read_bytes()


def test_generate_writes_one_file_per_shard(tmp_path: Path) -> None:
    assert (
        main(
            [
                "generate",
                "--rate",
                "20",
                "--duration",
                "3",
                "--shards",
                "3",
                "--out",
                str(tmp_path / "w.json"),
            ]
        )
        == 0
    )
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["w-shard-0.json", "w-shard-1.json", "w-shard-2.json"]
    keys_by_shard = [
        {r["dynamodb"]["Keys"]["pk"]["S"] for r in json.loads((tmp_path / f).read_text())["Records"]} for f in files
    ]
    assert not (keys_by_shard[0] & keys_by_shard[1]) and not (keys_by_shard[1] & keys_by_shard[2])


def test_cost_compares_with_contributor_insights(capsys: pytest.CaptureFixture) -> None:
    # At the reference point (10,000 writes/s of 1 KB items) the detector costs less
    assert main(["cost", "--writes-per-second", "10000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["shards"] == 10
    assert 0 < result["detector_total"] < result["contributor_insights_total"]
    assert result["prices_dated"].startswith("2026-11")
    # and every line item is listed, with reads billed by Contributor Insights only
    assert main(["cost", "--writes-per-second", "10000", "--reads-per-second", "30000", "--json"]) == 0
    with_reads = json.loads(capsys.readouterr().out)
    assert with_reads["detector_total"] == result["detector_total"]
    assert with_reads["contributor_insights_total"] > 3 * result["contributor_insights_total"]


def test_each_counted_gsi_costs_lambda_time_and_a_metric(capsys: pytest.CaptureFixture) -> None:
    # Given the same traffic with no index and with five counted GSIs
    figures = []
    for gsis in ("0", "5"):
        assert main(["cost", "--writes-per-second", "10000", "--gsis", gsis, "--json"]) == 0
        figures.append(json.loads(capsys.readouterr().out)["detector"])
    # Then the five indexes add their per-record CPU and their metrics (the per-invocation overhead is
    # unchanged): 10,000 records/s for a month, at 512/1769 of a vCPU, 0.5 GB
    added_seconds = 10_000 * cost.SECONDS_PER_MONTH * 5 * cost.CPU_SECONDS_PER_RECORD_PER_GSI / (512 / 1769)
    assert figures[1]["lambda_compute"] - figures[0]["lambda_compute"] == pytest.approx(
        added_seconds * 0.5 * cost.PRICES["lambda_gb_second_arm64"], abs=0.02
    )
    assert figures[1]["custom_metrics"] > figures[0]["custom_metrics"]


def test_cost_rejects_nonsense(capsys: pytest.CaptureFixture) -> None:
    assert main(["cost", "--writes-per-second", "0"]) == 2
    assert "--writes-per-second" in capsys.readouterr().err
    assert main(["cost", "--writes-per-second", "10", "--consumer-system-log-level", "loud"]) == 2
    assert "--consumer-system-log-level" in capsys.readouterr().err
    with pytest.raises(ValueError, match="WARN, INFO or DEBUG"):
        cost.estimate(cost.CostInputs(writes_per_second=10, consumer_system_log_level="warn"))


def test_lambdas_start_and_report_records_are_priced_only_where_the_consumer_sends_them(
    capsys: pytest.CaptureFixture,
) -> None:
    logs = {}
    for level in ("warn", "INFO"):
        assert main(["cost", "--writes-per-second", "10000", "--consumer-system-log-level", level, "--json"]) == 0
        logs[level.upper()] = json.loads(capsys.readouterr().out)["detector"]["cloudwatch_logs"]
    invocations = cost.consumer_invocations(cost.CostInputs(writes_per_second=10_000))
    added = invocations * cost.PLATFORM_BYTES_PER_INVOCATION / 1e9 * cost.PRICES["cloudwatch_logs_ingested_gb"]
    assert logs["INFO"] - logs["WARN"] == pytest.approx(added, abs=0.01)


def test_top_last_n_windows_and_limit(stats_table_name: str, capsys: pytest.CaptureFixture) -> None:
    # Given three windows of traffic (the mixed sample spans two, the TTL sample one, on other tables)
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay(["events/mixed-traffic.json", "events/hot-key-burst.json.gz"], LocalResources(stats_table_name))
    # When asking for the last window only
    assert main(["top", "--stats-table", stats_table_name, "--last", "1", "--json", "--limit", "50"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # Then every row is from the latest window, hottest first
    assert {row["window_start"] for row in rows} == {"2026-12-01T00:01:00Z"}
    rates = [row["wcu_per_second"] for row in rows]
    assert rates == sorted(rates, reverse=True)
    # And with --last 2 both windows appear, capped by --limit
    assert main(["top", "--stats-table", stats_table_name, "--last", "2", "--json", "--limit", "7"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 7 and rows[0]["key"] == "event#42"


def test_top_names_the_rows_at_the_alert_threshold_its_limit_left_out(
    stats_table_name: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the demo's windows judged against a 1 WCU/s partition (so that many rows are hot, some of them
    # left out by a small --limit)
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay(["events/mixed-traffic.json", "events/hot-key-burst.json.gz"], LocalResources(stats_table_name))
    top = ["top", "--stats-table", stats_table_name, "--last", "2", "--partition-limit", "1"]
    assert main([*top, "--json", "--limit", "1000"]) == 0
    every = json.loads(capsys.readouterr().out)["rows"]

    def hot(row: dict[str, object]) -> bool:  # the alert rule's test: the rate against 80% of the limit
        return float(row["wcu_per_second"]) >= 0.8 * 1  # type: ignore[arg-type]

    assert sum(map(hot, every)) >= 5
    for limit in (1, 3, 6):
        left_out = sum(map(hot, every[limit:]))
        # When --limit shows the first rows, hottest first
        assert main([*top, "--json", "--limit", str(limit)]) == 0
        # Then the JSON counts the hot rows it left out
        assert json.loads(capsys.readouterr().out)["hot_rows_beyond_limit"] == left_out
        # and the text says how many, under which threshold, and how to see them
        monkeypatch.setenv("COLUMNS", "200")
        assert main([*top, "--limit", str(limit)]) == 0
        out = capsys.readouterr().out
        rows = "1 more row" if left_out == 1 else f"{left_out} more rows"
        assert f"{rows} at or above the alert threshold (80% of the partition limit) after these {limit}: " in out
    # and with every hot row shown, nothing is named
    assert main([*top, "--limit", "1000"]) == 0
    assert "at or above the alert threshold" not in capsys.readouterr().out


def test_top_names_the_hot_partitions_its_index_left_out(
    stats_table_name: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given hot keys in a table's partitions (tickets) and in an index's (payments by-status)
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay(["events/hot-key-burst.json.gz", "events/gsi-back-pressure.json.gz"], LocalResources(stats_table_name))
    top = ["top", "--stats-table", stats_table_name, "--limit", "1000"]
    assert main([*top, "--json"]) == 0
    every = json.loads(capsys.readouterr().out)["rows"]

    def hot(row: dict[str, object]) -> bool:  # the alert rule's test: the rate against 80% of 1,000
        return float(row["wcu_per_second"]) >= 800  # type: ignore[arg-type]

    table_hot = sum(1 for row in every if hot(row) and row["index"] is None)
    index_hot = sum(1 for row in every if hot(row) and row["index"] == "by-status")
    assert table_hot >= 1 and index_hot >= 2
    monkeypatch.setenv("COLUMNS", "200")
    for index, outside in (("table", index_hot), ("by-status", table_hot), ("all", 0), ("real", 0)):
        # When top shows only some partitions
        assert main([*top, "--index", index, "--json"]) == 0
        document = json.loads(capsys.readouterr().out)
        # Then the JSON counts the hot rows of the others, and the data health is the tables' whichever
        assert document["hot_rows_outside_index"] == outside
        assert "by-status" in str(document["health"]["payments"])
        # and the text says how many and how to see them, or nothing when none is left out
        assert main([*top, "--index", index]) == 0
        out = capsys.readouterr().out
        rows = "1 row" if outside == 1 else f"{outside} rows"
        line = (
            f"{rows} at or above the alert threshold (80% of the partition limit) in these windows "
            f"{'is' if outside == 1 else 'are'} in partitions that --index {index} leaves out: --index all ranks"
        )
        assert (line in out) == bool(outside), out


def test_replay_json_stays_valid_over_many_invocations(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Given an hour of sparse traffic: one batch and one final invocation per minute, 120 invocations
    events = tmp_path / "hour.json"
    assert main(["generate", "--rate", "1", "--duration", "3600", "--keys", "20", "--out", str(events)]) == 0
    capsys.readouterr()
    # When replayed with --json, stdout is one JSON document (no metrics lines mixed in)
    assert main(["replay", str(events), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["invocations"] >= 120 and sum(w["writes"] for w in result["windows"]) == 3600


def test_version(capsys: pytest.CaptureFixture) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hotkeys {version('dynamodb-hotkeys')}"


def _alert(key: str, reason: str, rate: float, share: float, **extra: object) -> dict[str, object]:
    return {
        "table": "tickets",
        "index": None,
        "key": key,
        "window_start": "2026-12-01T00:00:00Z",
        "window_seconds": 60,
        "wcu_per_second": rate,
        "partition_wcu_limit": 1000,
        "percent_of_limit": round(rate / 10, 1),
        "share": share,
        "reason": reason,
        "status": "firing",
        "suggested_shards": 2 if rate >= 800 else 1,
        "pattern": None,
        "remedy": None,
        **extra,
    }


def _stored(
    key: str, rate: float, share: float, table: str = "tickets", at_most: float | None = None
) -> dict[str, object]:
    """A row of the window's stored figures (top_rows), as `top` shows it."""
    return {
        "table": table,
        "index": None,
        "key": key,
        "window_start": "2026-12-01T00:00:00Z",
        "window_seconds": 60,
        "wcu_per_second": rate,
        "at_most_wcu_per_second": rate if at_most is None else at_most,
        "share": share,
        "writes": 10,
        "wcu": round(rate * 60),
        "error_bound": 0,
    }


def test_the_replay_verdict_quotes_the_stored_peak_and_says_what_the_alert_fired_at() -> None:
    from hotkeys.cli.verdict import verdict

    # Given a burst whose alert fired at 882.5 WCU/s (the rule's rate when that invocation ran), while
    # the window's stored figures, which `top` shows, hold a 900 WCU/s peak and a 300 WCU/s average
    result = {
        "alerts": [
            _alert("event#42", "share", 584.2, 0.9661),
            _alert("event#42", "partition_limit", 882.5, 0.9752),
            {**_alert("event#42", "partition_limit", 0.0, 0.0), "status": "resolved"},
        ],
        "alerted_figures": [_stored("event#42", 900.0, 0.98)],
        "families": [],
    }
    # Then the verdict's peak is the table's, and the alert's rate is named apart
    assert verdict(result, DEFAULTS) == [
        "1 hot key (at or near the partition limit):",
        "  tickets/event#42 peaked at 900 WCU/s (90% of the partition limit) in the window starting "
        "2026-12-01T00:00:00Z, first alerted at 882 WCU/s; suggested fix: write-shard it "
        "over 2 suffixes (event#42#1..2; an estimate)",
    ]
    # And when the alert fired at what the peak reads, it is not said twice
    result["alerts"][1]["wcu_per_second"] = 900.0
    assert "alerted at" not in verdict(result, DEFAULTS)[1]


def test_share_of_table_alerts_are_reported_apart_from_hot_keys() -> None:
    from hotkeys.cli.verdict import verdict

    family = "poll#7#* (4 shards): 90 WCU/s in total on average, hottest shard poll#7#0 ... uneven"
    # Given a hot key, a celebrity at 14% of a small table and one shard of an uneven family at 15%,
    # whose alert's remedy was written with the window so far (85 WCU/s in total)
    result = {
        "alerts": [
            _alert("event#42", "partition_limit", 882.5, 0.97),
            _alert("celebrity#1", "share", 16.0, 0.137, table="profiles"),
            _alert("poll#7#0", "share", 60.0, 0.1517, table="votes", pattern="write-sharded family", remedy="85 ..."),
        ],
        "alerted_figures": [
            _stored("event#42", 900.0, 0.98),
            _stored("celebrity#1", 16.2, 0.14, table="profiles"),
            _stored("poll#7#0", 61.0, 0.1519, table="votes"),
        ],
        "families": [
            {
                "table": "votes",
                "index": None,
                "window_start": "2026-12-01T00:00:00Z",
                "stem": "poll#7#",
                "verdict": family,
            }
        ],
    }
    lines = verdict(result, DEFAULTS)
    # Then only the key near the partition limit is a hot key; the shares are listed apart, as shares
    assert lines[0] == "1 hot key (at or near the partition limit):"
    assert lines[1].startswith("  tickets/event#42 peaked at 900 WCU/s")
    assert lines[2] == (
        "2 keys with a heavy share of their table's writes (share-of-table alerts; under the partition-limit "
        "threshold, not hot):"
    )
    assert lines[3] == (
        "  votes/poll#7#0 took 15% of the table's writes in the window starting 2026-12-01T00:00:00Z (rate 61 "
        "WCU/s, 6% of the partition limit) (write-sharded family); suggested fix: " + family
    )
    assert lines[4].startswith("  profiles/celebrity#1 took 14% of the table's writes in the window starting ")
    assert "(rate 16 WCU/s, 1% of the partition limit)" in lines[4]
    assert len(lines) == 5
    # And with shares only, there is no hot key
    result["alerts"] = result["alerts"][1:]
    none = "No hot key: no partition key's rate reached the partition-limit alert threshold."
    assert verdict(result, DEFAULTS)[0] == none
    assert verdict({"alerts": [], "alerted_figures": [], "families": []}, DEFAULTS) == [none]


@pytest.mark.parametrize(
    ("events", "peak"),
    [
        ("events/hot-key-burst.json.gz", 900),
        (None, 950),  # a generated 950 WCU/s burst
    ],
)
def test_the_replay_verdict_and_its_top_table_show_one_peak(
    tmp_path: Path, capsys: pytest.CaptureFixture, events: str | None, peak: int
) -> None:
    if events is None:
        events = str(tmp_path / "burst.json.gz")
        hot = ["--hot", "event#42:950wcu@30s+20s", "--item-spread", "0", "--seed", "3", "--rate", "10"]
        assert main(["generate", "--out", events, *hot]) == 0
    # When the burst is replayed, as text and as JSON
    assert main(["replay", events, "--limit", "1"]) == 0
    text = capsys.readouterr().out
    assert main(["replay", events, "--json", "--limit", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    row = result["top"][0]  # the burst's window's hottest key
    (firing,) = [a for a in result["alerts"] if a["status"] == "firing" and a["reason"] == "partition_limit"]
    alerted = math.floor(firing["wcu_per_second"])  # (rounded down, as every sentence says a rate)
    # Then the verdict's peak is the top table's peak for that key and window, and the rate the firing
    # message quoted (a subscriber's first message) is named
    assert row["key"] == "event#42" and row["wcu_per_second"] == peak
    assert 800 <= alerted <= peak
    assert (
        f"event#42 peaked at {peak} WCU/s ({peak // 10}% of the partition limit) in the window starting "
        f"{row['window_start']}, first alerted at {alerted} WCU/s"
    ) in text
    assert f"{peak:.1f}" in text.split("Top keys per window")[1]


def test_top_for_one_table_finds_its_windows_when_another_table_is_newer(
    stats_table_name: str, capsys: pytest.CaptureFixture
) -> None:
    # Given a table whose last window is an hour older than another table's
    from hotkeys.detector.adapters.key_schema import PartitionKeyResolver
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.pipeline import Ports, StreamBatch, process_batch
    from tests.support import layouts_of, write_record

    settings = Settings(stats_table_name=stats_table_name)
    stats = DynamoStatsStore(boto3.resource("dynamodb").Table(stats_table_name))
    ports = Ports(stats=stats, resolve_key=PartitionKeyResolver(None, lambda name: {}), layouts=layouts_of(stats))
    for table, start in (("old", 1_796_083_200), ("new", 1_796_083_200 + 3600)):
        records = [write_record(f"{table}-key", i, start + 1, table=table) for i in range(3)]
        process_batch(StreamBatch(records, "shardId-1", (start, start + 60), {}, True), settings, ports)
    # When asking for that table's last window without --since
    assert main(["top", "--stats-table", stats_table_name, "--table", "old", "--json"]) == 0
    # Then its own latest window is shown (not nothing, as when the range followed the newest table)
    assert [row["key"] for row in json.loads(capsys.readouterr().out)["rows"]] == ["old-key"]


def test_the_cost_figures_in_the_docs_are_the_models(capsys: pytest.CaptureFixture) -> None:
    # docs/cost.md quotes `hotkeys cost`: each quoted row must be what the command says today
    text = (Path(__file__).resolve().parents[2] / "docs" / "cost.md").read_text()
    for rate in (1_000, 10_000, 100_000):
        assert main(["cost", "--writes-per-second", str(rate), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        row = (
            f"| {rate:,} | {result['shards']} | {result['detector_total']:,.2f} | "
            f"{result['contributor_insights_total']:,.2f} |"
        )
        assert row in text, row


def test_a_record_with_an_unhashable_source_arn_is_dead_lettered_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given the poison sample whose first record names its source with a list instead of an ARN
    event = json.loads(Path("events/poison-record.json").read_text())
    event["Records"][0]["eventSourceARN"] = ["arn:aws:dynamodb:us-east-1:1:table/t/stream/x"]
    path = tmp_path / "bad-arn.json"
    path.write_text(json.dumps(event))
    # When it is replayed
    assert main(["replay", str(path), "--json"]) == 0
    # Then that record reaches the DLQ alone, beside the sample's own poison record
    letters = json.loads(capsys.readouterr().out)["dead_letters"]
    first = event["Records"][0]["dynamodb"]["SequenceNumber"]
    assert {"startSequenceNumber": first, "endSequenceNumber": first} in [
        {k: letter[k] for k in ("startSequenceNumber", "endSequenceNumber")} for letter in letters
    ]
    assert len(letters) == 2


def test_the_top_table_folds_long_keys_on_a_narrow_terminal_and_never_cuts_them() -> None:
    from rich.console import Console

    from hotkeys.cli.common import render_top
    from hotkeys.cli.rows import TopRow

    key = "tenant#" + "0123456789" * 5
    row = {
        "window_start": "2026-12-01T00:00:00Z",
        "window_seconds": 60,
        "index": None,
        "table": "orders",
        "key": key,
        "wcu_per_second": 882.0,
        "at_most_wcu_per_second": 882.0,
        "share": 0.5,
        "writes": 10,
        "wcu": 950,
        "error_bound": 10,
    }
    for width in (60, 80, 160, 220):
        # Given a long key and a terminal of this width
        console = Console(width=width, record=True, color_system=None)
        # When the top table is printed
        render_top(console, [TopRow.from_json(row)], DEFAULTS, title="Top")
        text = console.export_text()
        # Then every character of the key, the window start and the rate can be read: folded, never cut
        body = [line for line in text.splitlines() if line.count("│") >= 4]
        columns = list(zip(*(line.split("│")[1:-1] for line in body), strict=True))
        joined = "|".join("".join(cell.strip() for cell in column) for column in columns)
        assert key in joined and "2026-12-01T00:00:00Z" in joined and "882.0" in joined, (width, text)
        assert "…" not in text, (width, text)
        assert max(len(line) for line in text.splitlines()) <= width
    # and the wide table (room for every column at 220) says its WCU figures are lower estimates
    assert "WCU is a lower estimate" in " ".join(text.split())


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    # Given stdout is a pipe nobody reads any more (`hotkeys cost --json | head -1`, after head exits)
    import os
    import subprocess
    import sys

    reader, writer = os.pipe()
    os.close(reader)
    hotkeys = str(Path(sys.executable).parent / "hotkeys")
    try:
        # When the command writes its answer
        done = subprocess.run(
            [hotkeys, "cost", "--writes-per-second", "10000", "--json"],
            stdout=writer,
            stderr=subprocess.PIPE,
            check=False,
        )
    finally:
        os.close(writer)
    # Then it ends as a SIGPIPE'd process would, with nothing on stderr
    assert done.returncode == 141 and done.stderr == b""


def test_top_colours_rows_against_the_chosen_threshold(stats_table_name: str) -> None:
    from rich.console import Console

    from hotkeys.cli.main import build_parser, cmd_top
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    # Given the sample burst: event#42 peaks at 900 WCU/s, 45% of a 2,000 WCU/s partition
    run_replay(["events/hot-key-burst.json.gz"], LocalResources(stats_table=stats_table_name))

    def event_42_line(*flags: str) -> str:
        console = Console(width=200, record=True, force_terminal=True, color_system="standard")
        argv = ["top", "--stats-table", stats_table_name, "--since", "2026-12-01T00:00:00Z", "--limit", "1"]
        assert cmd_top(build_parser().parse_args([*argv, "--partition-limit", "2000", *flags]), console) == 0
        return next(line for line in console.export_text(styles=True).splitlines() if "event#42" in line)

    bold_red = "\x1b[1;31m"
    # When top colours the row: under the default threshold (80%) it is not hot
    assert bold_red not in event_42_line() and "45%" in event_42_line()
    # Then with the threshold chosen on the command line (40%) it is
    assert bold_red in event_42_line("--alert-threshold", "0.4")


WINDOW_START = 1_796_083_200


def test_a_rows_rate_is_the_rules_rate_on_its_figures() -> None:
    from hotkeys.cli.top import key_row
    from hotkeys.detector.consumer.snapshots import WindowFigures
    from hotkeys.detector.domain.summary import Entry, Summary

    def row(error_bound: int, last_event: int) -> tuple[float, float]:
        # 1,000 WCU written from second 5 to 14 of the window: 500 in each 10-second bucket
        entry = Entry(
            100, 1000, WINDOW_START + 5, 500, [WINDOW_START, WINDOW_START + 10], [500, 500], WINDOW_START + 14
        )
        merged = Summary({"k": entry}, pruned=error_bound, writes=100, wcu=1000)
        window = WindowFigures("t", WINDOW_START, 60, merged, last_event=last_event, alert_min_span_seconds=10)
        found = key_row(window, "k", entry)
        return found.wcu_per_second, found.at_most_wcu_per_second

    # Then the rate is over the key's own first to last write (10 s, not halved by the bucket boundary),
    # and the bound only raises the most it can be
    assert row(0, WINDOW_START + 14) == (100.0, 100.0)
    assert row(200, WINDOW_START + 14) == (100.0, 120.0)
    # and it stays the same when the key has been quiet long since (later records are other keys')
    assert row(0, WINDOW_START + 59) == (100.0, 100.0)


def test_a_replay_of_part_of_a_capture_says_which_shard_files_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given a capture in four shard files (issue #47: one of them replayed alone read as the table's shares)
    out = tmp_path / "s4.json.gz"
    assert main(["generate", "--out", str(out), "--shards", "4", "--duration", "10", "--rate", "200"]) == 0
    capsys.readouterr()
    # When one file is replayed, the text and the JSON name the other three
    assert main(["replay", str(tmp_path / "s4-shard-1.json.gz")]) == 0
    text = capsys.readouterr().out
    assert "A partial capture: 3 shard files of it beside the ones given were not given" in text
    assert main(["replay", str(tmp_path / "s4-shard-1.json.gz"), "--json"]) == 0
    missing = json.loads(capsys.readouterr().out)["missing_files"]
    assert [Path(name).name for name in missing] == ["s4-shard-0.json.gz", "s4-shard-2.json.gz", "s4-shard-3.json.gz"]
    # and all four say nothing of the kind
    assert main(["replay", *(str(tmp_path / f"s4-shard-{n}.json.gz") for n in range(4))]) == 0
    assert "partial capture" not in capsys.readouterr().out


def test_a_pipe_takes_the_width_columns_gives_it(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    # Given the top-keys table of a replay, printed into a pipe with and without COLUMNS
    def widest(columns: str | None) -> int:
        env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
        env.update({"COLUMNS": columns} if columns else {})
        hotkeys = str(Path(sys.executable).parent / "hotkeys")
        done = subprocess.run(
            [hotkeys, "replay", "events/hot-key-burst.json.gz"], env=env, capture_output=True, text=True, check=True
        )
        return max(len(line) for line in done.stdout.splitlines() if "│" in line)

    # Then COLUMNS is the table's limit, and without it the pipe's default of 160 is
    assert widest("90") <= 90 < widest(None) <= 160
