"""`hotkeys cost` takes its figures from their sources: the committed benchmark and AWS's documented rules."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli import cost

ROOT = Path(__file__).resolve().parents[2]


def _cells() -> dict[str, dict[str, Any]]:
    output = json.loads((ROOT / cost.BENCH_OUTPUT).read_text())
    return {cell["cell"]: cell for cell in output["cells"]}


def test_the_cpu_per_record_is_the_committed_benchmarks_with_the_stated_margin() -> None:
    # The cell's total (parse, GC and handler per record), times the margin, rounded up to a microsecond
    measured = _cells()[cost.BENCH_CELL]["total_us"]
    assert pytest.approx(math.ceil(measured * cost.CPU_MARGIN) * 1e-6) == cost.CPU_SECONDS_PER_RECORD


def test_the_cpu_per_index_is_the_committed_benchmarks_difference_per_index() -> None:
    cells = _cells()
    per_index = (cells[f"{cost.BENCH_CELL}, 5 GSIs"]["total_us"] - cells[cost.BENCH_CELL]["total_us"]) / 5
    assert pytest.approx(math.ceil(per_index * cost.CPU_MARGIN) * 1e-6) == cost.CPU_SECONDS_PER_RECORD_PER_GSI


def test_the_throughput_per_shard_in_the_docs_is_the_models() -> None:
    # docs/scale.md and docs/cost.md quote what one shard's function sustains at 512 MB
    figure = cost.estimate(cost.CostInputs(writes_per_second=1000))["sustained_records_per_second_per_shard"]
    expected = cost.CostInputs(writes_per_second=1000).batch_size / (
        cost.CostInputs(writes_per_second=1000).batch_size * cost.CPU_SECONDS_PER_RECORD / (512 / 1769)
        + cost.INVOCATION_OVERHEAD_SECONDS
    )
    assert figure == round(expected)
    for doc in ("scale.md", "cost.md"):
        quoted = re.findall(r"~([\d,]+) records/s", (ROOT / "docs" / doc).read_text())
        assert f"{figure:,}" in quoted, (doc, quoted)


# The rules "DynamoDB creates ... on your behalf" for a table or GSI (developer guide, "CloudWatch
# Contributor Insights for DynamoDB: How it works"), and whether each needs a sort key.
DOCUMENTED_RULES = {
    "DynamoDBContributorInsights-PKC": False,  # most accessed items (partition key)
    "DynamoDBContributorInsights-PKT": False,  # most throttled keys (partition key)
    "DynamoDBContributorInsights-SKC": True,  # most accessed keys (partition and sort keys)
    "DynamoDBContributorInsights-SKT": True,  # most throttled keys (partition and sort keys)
}


@pytest.mark.parametrize(("tables", "gsis", "sort_keys"), [(1, 0, False), (1, 0, True), (3, 2, False), (2, 5, True)])
def test_contributor_insights_is_priced_with_the_rules_aws_creates(tables: int, gsis: int, sort_keys: bool) -> None:
    # Each table and each GSI on it gets its own rules: the partition-key ones, and the sort-key ones
    # when it has a sort key
    per_target = sum(1 for needs_sort_key in DOCUMENTED_RULES.values() if sort_keys or not needs_sort_key)
    inputs = cost.CostInputs(writes_per_second=1000, tables=tables, gsis=gsis, sort_keys=sort_keys)
    result = cost.estimate(inputs)
    assert result["contributor_insights_rules"] == tables * (1 + gsis) * per_target
    assert result["contributor_insights"]["rules"] == pytest.approx(
        tables * (1 + gsis) * per_target * cost.PRICES["contributor_insights_rule_month"], abs=0.005
    )
    # and the throttled-keys mode is priced beside it: its throttled rules only (PKT, and SKT with a sort key),
    # no event for a request that was not throttled
    throttled_rules = sum(
        1 for rule, needs in DOCUMENTED_RULES.items() if rule.endswith("T") and (sort_keys or not needs)
    )
    assert result["contributor_insights_throttled_keys_rules"] == tables * (1 + gsis) * throttled_rules
    assert result["contributor_insights_throttled_keys"] == {
        "rules": round(tables * (1 + gsis) * throttled_rules * cost.PRICES["contributor_insights_rule_month"], 2),
        "events": 0.0,
    }


def test_throttled_keys_mode_bills_an_event_per_throttled_request_and_the_stack_pays_for_it() -> None:
    # Given 100 throttled requests a second, against 10,000 writes that landed
    quiet = cost.estimate(cost.CostInputs(writes_per_second=10_000))
    throttling = cost.estimate(cost.CostInputs(writes_per_second=10_000, throttled_per_second=100))
    # Then throttled-keys mode bills those events alone (the full mode bills every request, throttled or not)
    events = 100 * cost.SECONDS_PER_MONTH * cost.PRICES["contributor_insights_event"]
    assert throttling["contributor_insights_throttled_keys"]["events"] == pytest.approx(events, abs=0.005)
    assert throttling["contributor_insights"] == quiet["contributor_insights"]
    # and the stack, which turns that mode on by default, carries it in the detector's own total
    added = throttling["detector_total"] - quiet["detector_total"]
    assert added == pytest.approx(events, abs=0.01)
    opted_out = cost.estimate(cost.CostInputs(writes_per_second=10_000, throttled_key_insights=False))
    assert opted_out["detector"]["contributor_insights_throttled_keys"] == 0.0
    assert quiet["detector"]["contributor_insights_throttled_keys"] == 0.5  # one PKT rule at $0.50


@pytest.mark.parametrize(("tables", "gsis", "metrics"), [(1, 0, 8), (1, 3, 32), (2, 1, 32)])
def test_the_throttle_alarms_are_priced_per_alarm_metric(tables: int, gsis: int, metrics: int) -> None:
    # 8 throttle metrics (read and write x key range, on-demand maximum, provisioned, account limit) on each
    # table, and on its GSIs (a Metrics Insights alarm over all of them counts one per GSI it analyzes)
    result = cost.estimate(cost.CostInputs(writes_per_second=1000, tables=tables, gsis=gsis))
    assert result["throttle_alarm_metrics"] == metrics
    assert result["detector"]["throttle_alarms"] == pytest.approx(metrics * 0.10, abs=0.005)
    # and a lean deployment has none
    assert (
        cost.estimate(cost.CostInputs(writes_per_second=1000, tables=tables, gsis=gsis, lean=True))["detector"][
            "throttle_alarms"
        ]
        == 0
    )


def _log_scenarios() -> list[dict[str, Any]]:
    return list(json.loads((ROOT / cost.LOG_BENCH_OUTPUT).read_text())["scenarios"])


# What the model charges for: the EMF line and Lambda's platform records (bench.log_volume's names)
CHARGED_LINES = {"emf metrics line", "lambda platform records (modelled)"}


@pytest.mark.parametrize("scenario", _log_scenarios(), ids=lambda scenario: scenario["scenario"])
def test_the_log_bytes_are_the_committed_benchmarks(scenario: dict[str, Any]) -> None:
    # A saturated shard's window as `python -m bench.log_volume` measured it: the function writes only
    # the lines the model charges for (a healthy invocation logs nothing at INFO)
    assert set(scenario["lines"]) == CHARGED_LINES, scenario["lines"]
    # and the model's bytes per 1,000 records of a month (the consumer's: the judge's wake-ups are a fixed
    # cost, measured by tests/integration/test_log_volume.py) cover the measured bytes;
    # without indexes they overstate them by at most a fifth (each index's metric is charged for a
    # long index name, as tests/integration/test_log_volume.py measures it; the benchmark's are short)
    # (the benchmark adds Lambda's start and report records as the INFO system log level sends them)
    inputs = cost.CostInputs(writes_per_second=1000, gsis=scenario["gsis"], consumer_system_log_level="INFO")
    month = cost.log_bytes(inputs, cost.consumer_invocations(inputs)) - cost.judge_log_bytes(inputs)
    modelled = month * 1000 / (inputs.writes_per_second * cost.SECONDS_PER_MONTH)
    measured = scenario["total_bytes_per_1000_records"]
    assert measured <= modelled, (modelled, measured)
    if not scenario["gsis"]:
        assert modelled <= 1.2 * measured, (modelled, measured)


def test_the_model_invokes_a_saturated_shard_as_the_log_benchmark_did() -> None:
    # 1,000 records/s in batches of 1,000 plus the window's final invocation: the benchmark's count
    inputs = cost.CostInputs(writes_per_second=1000)
    for scenario in _log_scenarios():
        per_record = scenario["invocations"] / scenario["records"]
        expected = (inputs.writes_per_second / inputs.batch_size) + 1 / inputs.window_seconds
        assert per_record == pytest.approx(expected / inputs.writes_per_second)


def _scale_runs() -> dict[int, dict[str, Any]]:
    output = json.loads((ROOT / cost.SCALE_OUTPUT).read_text())
    return {run["shards"]: run for run in output["runs"]}


def test_the_judge_figures_are_the_committed_simulations() -> None:
    # `python -m bench.scale` at 1,000 shards: the heads a look reads per shard and the judge's CPU per
    # head (times the margin, rounded up to 10 µs)
    judge = _scale_runs()[1000]["judge"]
    assert round(judge["heads_read_per_look_steady"] / 1000, 1) == cost.JUDGE_WINDOWS_PER_LOOK
    per_head = judge["cpu_seconds_per_look"] / judge["heads_read_per_look_steady"] * cost.CPU_MARGIN
    assert pytest.approx(math.ceil(per_head * 1e5) / 1e5) == cost.JUDGE_CPU_SECONDS_PER_HEAD


def _stats_units_runs() -> list[dict[str, Any]]:
    return list(json.loads((ROOT / cost.STATS_UNITS_OUTPUT).read_text())["runs"])


def test_the_stats_units_are_the_committed_benchmarks() -> None:
    # `python -m bench.stats_units`: per records/s of a shard, the mean write units of a stats item and of
    # its window-heads index entry, as the model's table holds them
    runs = _stats_units_runs()
    assert (
        tuple(
            (run["records_per_second"], run["item_units_per_write"], run["index_entry_units_per_write"]) for run in runs
        )
        == cost.STATS_UNITS
    )
    # and the model writes each shard's window as often as the pipeline did: after every quiet batch (12 a
    # window), at the flush boundaries once batches fill (5)
    for run in runs:
        inputs = cost.CostInputs(writes_per_second=run["records_per_second"])
        assert cost.shards(inputs) == 1
        assert cost.stats_writes_per_shard_window(inputs) == run["writes_per_window"], run
    assert {run["writes_per_window"] for run in runs} == {12, 5}


@pytest.mark.parametrize("rate", [0.5, 1, 7, 100, 150, 199, 200, 700, 1000, 4000])
def test_a_shard_rate_between_two_measured_rows_is_priced_at_the_higher_one(rate: float) -> None:
    inputs = cost.CostInputs(writes_per_second=rate)
    per_shard = rate / cost.shards(inputs)
    measured = [row for row in cost.STATS_UNITS if row[0] >= per_shard] or [cost.STATS_UNITS[-1]]
    assert cost.stats_units(inputs) == measured[0][1:]


def test_the_per_shard_cost_is_flat_from_1_to_10000_shards() -> None:
    # The detector's cost per shard, the per-deployment and per-table costs aside (alarms, the dashboard,
    # metrics, Contributor Insights' rules, the judge: its wake-ups, claims, queue and log lines)
    def variable(shards: int) -> float:
        inputs = cost.CostInputs(writes_per_second=1000 * shards)
        result = cost.detector_cost(inputs)
        fixed = (
            "alarms_and_dashboard",
            "throttle_alarms",
            "custom_metrics",
            "contributor_insights_throttled_keys",
            "judge_lambda",
            "judge_claims",
            "judge_queue",
        )
        judge_logs = cost.judge_log_bytes(inputs) / 1e9 * cost.PRICES["cloudwatch_logs_ingested_gb"]
        return (sum(value for name, value in result.items() if name not in fixed) - judge_logs) / shards

    per_shard = [variable(shards) for shards in (1, 10, 100, 1000, 10_000)]
    # Then it stays within a few percent
    assert max(per_shard) <= 1.05 * min(per_shard), per_shard


def test_a_what_if_proposal_is_priced_as_the_gsi_it_is_counted_as_without_a_gsis_rules_and_alarms() -> None:
    # Given the same workload with two GSIs, and with two proposals instead
    with_gsis = cost.estimate(cost.CostInputs(writes_per_second=1000, gsis=2))
    with_proposals = cost.estimate(cost.CostInputs(writes_per_second=1000, proposals=2))
    plain = cost.estimate(cost.CostInputs(writes_per_second=1000))
    # Then the consumer's compute, its metrics and logs are a GSI's (the same code counts them)
    for item in ("lambda_compute", "custom_metrics", "cloudwatch_logs"):
        assert with_proposals["detector"][item] == with_gsis["detector"][item] > plain["detector"][item], item
    assert (
        with_proposals["sustained_records_per_second_per_shard"] == with_gsis["sustained_records_per_second_per_shard"]
    )
    # and a proposal has no Contributor Insights rule and no throttle alarm: it does not exist in DynamoDB
    assert with_proposals["contributor_insights_rules"] == plain["contributor_insights_rules"]
    assert with_proposals["throttle_alarm_metrics"] == plain["throttle_alarm_metrics"]
    # and more proposals than a table may have are refused
    with pytest.raises(ValueError, match="at most 5 proposals"):
        cost.estimate(cost.CostInputs(writes_per_second=1000, proposals=6))
