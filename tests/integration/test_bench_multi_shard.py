"""The multi-shard benchmarks run (they measure; this only checks they work and report their fields)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.lanes import EventSourceMapping, consume_side_by_side
from hotkeys.deployment import EventSourceSettings
from hotkeys.emulator.esm import Deliveries
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

T0 = 1_796_083_200
ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, module: str, *arguments: str) -> dict[str, Any]:
    out = tmp_path / "out.json"
    subprocess.run(
        [sys.executable, "-m", module, *arguments, "--out", str(out)], check=True, capture_output=True, cwd=ROOT
    )
    return dict(json.loads(out.read_text()))


def _records(shard: int, seconds: list[int]) -> list[dict[str, Any]]:
    return [
        stream_record(
            ItemChange(
                event_name="MODIFY",
                keys={"pk": f"k{shard}"},
                new_image={"pk": f"k{shard}", "n": str(position)},
                old_image={"pk": f"k{shard}", "n": "0"},
            ),
            table="orders",
            sequence=sequence_number(shard, position),
            event_time=T0 + second,
        )
        for position, second in enumerate(seconds)
    ]


def test_shards_side_by_side_run_one_invocation_at_a_time_in_emulated_time_order() -> None:
    # Given two shards whose records interleave in time (the second rolls over to a child at 30 s)
    lineages = [
        [("shard-a", _records(0, [0, 1, 2, 20, 21, 40]))],
        [("shard-b", _records(1, [10, 11, 25])), ("shard-b-child", _records(2, [30, 31, 50]))],
    ]
    seen: list[tuple[str, int, bool]] = []

    def handler(event: dict[str, Any]) -> dict[str, Any]:
        first = event["Records"][0]["dynamodb"]["ApproximateCreationDateTime"] - T0 if event["Records"] else -1
        seen.append((event["shardId"], first, event["isFinalInvokeForWindow"]))
        return {"state": {}}

    settings = EventSourceSettings(tumbling_window_seconds=60)
    # When both run through the emulation side by side
    mapping = EventSourceMapping(settings, deliveries=[Deliveries(), Deliveries()])
    _runs, lanes = consume_side_by_side(lineages, [handler, handler], mapping)
    # Then batches were cut at the 5 s batching window and each invoked when it ended (first record + 5 s);
    # a parent's final invocation came at its shard's end (30 s), the child's and the other's at the window's
    assert [(at - T0, n) for at, n in lanes[0].invocations] == [(5, 3), (25, 2), (45, 1), (60, 0)]
    assert [(at - T0, n) for at, n in lanes[1].invocations] == [(15, 2), (30, 1), (30, 0), (35, 2), (55, 1), (60, 0)]
    # and the invocations ran in that order across shards
    assert [first for _shard, first, _final in seen] == [0, 10, 20, 25, -1, 30, 40, 50, -1, -1]


def test_the_detection_latency_benchmark_reports_its_figures(tmp_path: Path) -> None:
    # Given one schedule on two shards
    result = _run(tmp_path, "bench.detection_latency", "--schedules", "1", "--shards", "2")
    summary = result["summary"]
    # Then its bursts crossed the alert rate and each crossing is published or reported missed
    assert summary["crossings"] >= 2 and summary["crossings"] == summary["published"] + len(summary["missed"])
    assert {"p50_seconds", "p99_seconds", "max_seconds", "targets", "target_met", "by_kind"} <= set(summary)
    assert {"table_key_p99_seconds", "merged_p99_seconds", "truth_p99_seconds", "quiet_resolution_max_seconds"} <= set(
        summary
    )
    assert set(summary["targets"]) == {
        "table_key_p99_seconds",
        "merged_p99_seconds",
        "truth_p99_seconds",
        "quiet_resolution_seconds",
    }
    # and each figure is given per phase of the judge's watchdog, the schedule run at each
    assert set(summary["by_phase"]) == {"0", "15", "37", "55", "drawn"} == set(summary["phases"])
    assert all(figures["crossings"] == summary["crossings"] // 5 for figures in summary["by_phase"].values())
    assert summary["target_met"] == all(figures["target_met"] for figures in summary["by_phase"].values())
    phases = [schedule["phase"] for schedule in result["schedules"]]
    assert phases[:4] == [0.0, 15.0, 37.0, 55.0] and 0 <= phases[4] < 60 and len(phases) == 5
    for schedule in result["schedules"]:
        assert schedule["shards"] == 2 and all(entry["published"] >= 0 for entry in schedule["latencies"])


def test_the_stats_requests_benchmark_counts_requests_per_operation(tmp_path: Path) -> None:
    # Given the smoke run (3 shards, one window, index partitions over the limit)
    (run,) = _run(tmp_path, "bench.stats_requests", "--smoke")["runs"]
    # Then every stats-table request is attributed to an operation and to its source
    assert (
        run["stats_requests"]
        == sum(run["per_operation"].values())
        == sum(round(n * run["shards"] * run["windows"] * 60) for n in run["sources_per_1000_saturated"].values())
    )
    # and the window-heads Query, the snapshots and the hot index partitions' incidents are among them
    assert run["per_operation"]["Query (window-heads)"] > 0 and run["per_operation"]["PutItem"] > 0
    assert run["incidents"] > 0 and run["other_requests"]["Publish"] > 0
    assert {"stats_requests_per_1000_saturated", "per_operation_per_1000_saturated", "target_met"} <= set(run)
    # and the scaled shard (10 records/s of ~1 KB) ran against a limit, share floor and batch size scaled alike
    assert (run["partition_wcu_limit"], run["share_min_wcu"], run["batch_size"]) == (10, 60, 10)
