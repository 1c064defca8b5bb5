"""One rate per key (issue #47, docs/decisions.md §79): a key whose counted rate stays under the alert
threshold is never called hot, by an alert, the verdict, `top` or the report, even when the summary's
bound alone takes it over; it is "possibly hot", with its range, on every surface."""

from __future__ import annotations

import json
from typing import Any

from hotkeys.cli.common import at_alert, possibly_hot
from hotkeys.cli.top import top_rows, window_figures, windows_in_range
from hotkeys.cli.verdict import alerted_figures, verdict
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers.wiring import build_ports
from tests.integration.test_alerts import T0, consume, delivered, traffic
from tests.message_checks import check_messages


def _workload() -> list[dict[str, Any]]:
    # A key at 700 WCU/s for a minute beside 80 new keys a second (5 units each): a summary of ten keys
    # prunes them all the time, and its bound (what the prunes cut) grows past the 1,000 units a bucket's
    # rate lacks
    crowd = [(f"user#{n:05d}", 5, n // 80, 1) for n in range(80 * 60)]
    return traffic([("warm", 700, 0, 60), *crowd])


def test_a_key_only_its_bound_takes_over_the_threshold_is_possibly_hot_everywhere(
    stats_table_name: str, topic: dict[str, str]
) -> None:
    settings = Settings(
        stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], summary_capacity=10, share_min_wcu=10**9
    )
    consume(settings, [_workload()])
    alerts = [a for a in delivered(topic["queue"]) if a["key"] == "warm"]
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table="tickets")  # type: ignore[arg-type]
    figures = window_figures(store, windows)  # type: ignore[arg-type]
    rows = [row for row in top_rows(figures, 10**4) if row.key == "warm"]
    # Then the stored rows: its rate (700 WCU/s) under the threshold, the most it can be over it in a window
    assert rows and all(row.wcu_per_second < 800 for row in rows)
    assert any(row.at_most_wcu_per_second >= 800 for row in rows), [
        (r.wcu_per_second, r.at_most_wcu_per_second, r.error_bound) for r in rows
    ]
    assert not any(at_alert(row, settings) for row in rows)
    assert any(possibly_hot(row, settings) for row in rows)
    # and the alerts: a firing that says "possibly hot" with its range, never "[hot key]"
    firing = [a for a in alerts if a["status"] == "firing"]
    assert firing and all(a["subject"].startswith("[possibly hot] tickets: warm at ") for a in firing), alerts
    assert all(a["possibly_hot"] and a["at_most_wcu_per_second"] >= 800 > a["wcu_per_second"] for a in firing)
    assert not any(a["subject"].startswith("[hot key]") for a in alerts)
    assert check_messages(alerts) == len(alerts)
    # and each message's rate is one `top` shows for the key (the rate when it was sent: never above the
    # highest the stored windows hold)
    highest = max(row.wcu_per_second for row in rows)
    assert all(a["wcu_per_second"] <= highest for a in alerts if a["status"] != "resolved")
    # and the verdict lists it apart, as possibly hot, with the stored rate and the range's upper end
    lines = verdict({"alerts": alerts, "alerted_figures": alerted_figures(alerts, figures), "families": []}, settings)
    assert lines[0] == "No hot key: no partition key's rate reached the partition-limit alert threshold."
    assert lines[1].startswith("1 key possibly hot")
    assert lines[2].startswith(f"  tickets/warm peaked at {highest:,.0f} to at most "), lines


def test_the_same_key_counted_without_pruning_is_neither(stats_table_name: str, topic: dict[str, str]) -> None:
    # The same writes counted by the default summary (200 keys): a small bound, no alert (the alert above
    # was the bound's alone)
    settings = Settings(stats_table_name=stats_table_name, alert_topic_arn=topic["arn"], share_min_wcu=10**9)
    consume(settings, [_workload()])
    assert [a for a in delivered(topic["queue"]) if a["key"] == "warm"] == []
    # (the same rate, 700 WCU/s, and at most under the threshold)
    store = build_ports(settings, AwsClients()).stats
    windows = windows_in_range(store, since=0, last=None, until=T0 + 10**5, table="tickets")  # type: ignore[arg-type]
    rows = [row for row in top_rows(window_figures(store, windows), 10**4) if row.key == "warm"]  # type: ignore[arg-type]
    assert [row.wcu_per_second for row in rows] == [700.0] and rows[0].at_most_wcu_per_second < 800


def test_generate_warns_when_one_shard_would_carry_more_than_a_partition_serves(tmp_path: Any, capsys: Any) -> None:
    from hotkeys.cli.main import main

    # The m1 case: 8,334 records a second of 1 KB items on one shard (a partition serves 1,000 WCU/s)
    assert main(["generate", "--out", str(tmp_path / "m1.json.gz"), "--rate", "8334", "--duration", "2"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("hotkeys: warning: its one shard carries about 8,334 WCU/s, more than one partition")
    assert "lower --rate or add --shards" in err
    # and at 900 records a second it does not
    assert main(["generate", "--out", str(tmp_path / "n.json.gz"), "--rate", "900", "--duration", "2"]) == 0
    assert capsys.readouterr().err == ""


def test_the_replays_top_keys_are_hottest_first_and_limit_is_per_window(capsys: Any) -> None:
    from hotkeys.cli.main import main

    # `make demo`'s files: several tables and indexes per window
    samples = ["events/hot-key-burst.json.gz", "events/gsi-back-pressure.json.gz", "events/share-small-table.json.gz"]
    assert main(["replay", *samples, "--json", "--limit", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)["top"]
    starts = sorted({row["window_start"] for row in rows})
    for start in starts:
        rates = [row["wcu_per_second"] for row in rows if row["window_start"] == start]
        # Then each window shows three rows (tables and indexes together), hottest first
        assert len(rates) == 3 and rates == sorted(rates, reverse=True), (start, rates)
    # and the first window's are the three partitions near the limit, whatever their table
    first = [(row["table"], row["key"]) for row in rows if row["window_start"] == starts[0]]
    assert set(first) == {("payments", "PENDING"), ("payments", "AUTHORIZED"), ("tickets", "event#42")}
