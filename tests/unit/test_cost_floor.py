"""`hotkeys cost` at the floor: what one small table pays with everything the default stack deploys, and
with the lean deployment (-c lean); the judge priced as it runs (a look per invocation, a watchdog a
minute); custom metrics priced by the hours they are published in."""

from __future__ import annotations

import json

import pytest

from hotkeys.cli import cost
from hotkeys.cli.main import main


def _total(rate: float, **kwargs: object) -> float:
    return float(cost.estimate(cost.CostInputs(writes_per_second=rate, **kwargs))["detector_total"])  # type: ignore[arg-type]


@pytest.mark.parametrize("rate", [1, 10, 100])
def test_one_small_table_pays_at_most_11_dollars_with_the_default_stack_and_6_lean(rate: int) -> None:
    assert _total(rate) <= 11.0
    assert _total(rate, lean=True) <= 6.0


@pytest.mark.parametrize("rate", [150, 200, 500, 1000, 2500, 10_000])
def test_the_detector_is_cheaper_than_contributor_insights_from_150_writes_a_second(rate: int) -> None:
    result = cost.estimate(cost.CostInputs(writes_per_second=rate))
    assert result["detector_total"] < result["contributor_insights_total"]


@pytest.mark.parametrize(("rate", "ratio"), [(10_000, 15), (1_000_000, 18)])
def test_contributor_insights_costs_many_times_the_detector_at_scale(rate: int, ratio: int) -> None:
    result = cost.estimate(cost.CostInputs(writes_per_second=rate))
    assert result["contributor_insights_total"] / result["detector_total"] >= ratio


def test_the_lean_deployment_leaves_out_the_dashboard_the_throttle_alarms_and_contributor_insights() -> None:
    full = cost.estimate(cost.CostInputs(writes_per_second=100))
    lean = cost.estimate(cost.CostInputs(writes_per_second=100, lean=True))
    unread = cost.UNREAD_ALARM_METRICS_PER_TABLE  # (the table's StreamUnread alarm: in both)
    assert full["detector"]["alarms_and_dashboard"] == pytest.approx(
        (cost.ALARMS + unread) * 0.10 + cost.DASHBOARDS * 3.00, abs=0.005
    )
    assert lean["detector"]["alarms_and_dashboard"] == pytest.approx((cost.LEAN_ALARMS + unread) * 0.10, abs=0.005)
    assert lean["detector"]["throttle_alarms"] == lean["detector"]["contributor_insights_throttled_keys"] == 0
    # and everything else is the same deployment's
    differing = {"alarms_and_dashboard", "throttle_alarms", "contributor_insights_throttled_keys"}
    assert {k: v for k, v in full["detector"].items() if k not in differing} == {
        k: v for k, v in lean["detector"].items() if k not in differing
    }
    # Contributor Insights asked for in a lean deployment (-c throttledKeyInsights=true) is priced
    asked = cost.estimate(cost.CostInputs(writes_per_second=100, lean=True, throttled_key_insights=True))
    assert asked["detector"]["contributor_insights_throttled_keys"] == 0.5


def test_the_cli_prices_the_lean_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "--writes-per-second", "100", "--lean", "--json"]) == 0
    lean = json.loads(capsys.readouterr().out)
    assert lean["lean"] and lean["detector_total"] == _total(100, lean=True)
    assert main(["cost", "--writes-per-second", "100", "--lean", "--throttled-key-insights", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["detector"]["contributor_insights_throttled_keys"] == 0.5
    assert main(["cost", "--writes-per-second", "100", "--no-throttled-key-insights", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["detector"]["contributor_insights_throttled_keys"] == 0
    assert main(["cost", "--writes-per-second", "100", "--lean"]) == 0
    assert "Priced as the lean deployment (-c lean=true)" in " ".join(capsys.readouterr().out.split())


def test_the_judge_is_billed_per_look_and_per_watchdog_run() -> None:
    inputs = cost.CostInputs(writes_per_second=100)
    looks = cost.SECONDS_PER_MONTH / inputs.flush_seconds  # every flush boundary: 5 a minute
    watchdog = cost.SECONDS_PER_MONTH / 60
    assert cost.judge_looks(inputs) == looks == 216_000 and watchdog == cost.JUDGE_WATCHDOG_RUNS_PER_MONTH
    seconds = looks * (cost.JUDGE_INVOCATION_OVERHEAD_SECONDS + cost.judge_look_seconds(inputs))
    seconds += watchdog * cost.JUDGE_INVOCATION_OVERHEAD_SECONDS
    lines = cost.judge_cost(inputs)
    assert lines["judge_lambda"] == pytest.approx(
        (looks + watchdog) * cost.PRICES["lambda_request"]
        + seconds * cost.JUDGE_MEMORY_MB / 1024 * cost.PRICES["lambda_gb_second_arm64"]
    )
    # a conditional write per wake-up (a failed condition costs its write unit too)
    assert lines["judge_claims"] == pytest.approx((2 * looks + watchdog) * cost.PRICES["dynamodb_write_request_unit"])
    # the queue: a send, a receive and a delete per look, and Lambda's pollers' empty long polls
    polls = cost.JUDGE_QUEUE_POLLERS * cost.SECONDS_PER_MONTH / cost.SQS_LONG_POLL_SECONDS
    assert lines["judge_queue"] == pytest.approx((3 * looks + polls) * cost.PRICES["sqs_request"])
    # and it no longer reads the consumer's IteratorAge
    assert "judge_lag_reads" not in cost.detector_cost(inputs)
    # A flush every 6 s doubles the looks
    assert cost.judge_looks(cost.CostInputs(writes_per_second=100, flush_seconds=6)) == 2 * looks


def test_the_judges_memory_is_the_stacks_default() -> None:
    from infra.option_schema import STACK_OPTION_BY_KEY
    from infra.options import DetectorOptions

    assert cost.CostInputs(writes_per_second=1).judge_memory_mb == cost.JUDGE_MEMORY_MB
    assert STACK_OPTION_BY_KEY["judgeMemoryMb"].default == DetectorOptions().judge_memory_mb == cost.JUDGE_MEMORY_MB


def test_custom_metrics_are_priced_by_the_hours_they_are_published_in() -> None:
    hour = cost.PRICES["cloudwatch_custom_metric_month"] / cost.HOURS_PER_MONTH
    # (and the table's StreamRecordsRead, in every line of its consumer)
    always = cost.CONSUMER_METRICS_ALWAYS + cost.JUDGE_METRICS_ALWAYS + 1
    # (a DynamoDB stream's consumer never publishes the Kinesis source's own)
    rare = cost.CONSUMER_METRICS_RARE - cost.CONSUMER_METRICS_KINESIS + cost.JUDGE_METRICS_RARE
    plain = cost.detector_cost(cost.CostInputs(writes_per_second=100))["custom_metrics"]
    assert plain == pytest.approx((always * cost.HOURS_PER_MONTH + rare * cost.RARE_METRIC_HOURS) * hour)
    kinesis = cost.detector_cost(cost.CostInputs(writes_per_second=100, source="kinesis"))["custom_metrics"]
    assert kinesis - plain == pytest.approx(cost.CONSUMER_METRICS_KINESIS * cost.RARE_METRIC_HOURS * hour)
    # TTL deletions every hour publish their pair every hour; each counted index its metric
    ttl = cost.detector_cost(cost.CostInputs(writes_per_second=100, ttl_deletes_per_second=1))["custom_metrics"]
    assert ttl - plain == pytest.approx(
        cost.CONSUMER_METRICS_TTL * (cost.HOURS_PER_MONTH - cost.RARE_METRIC_HOURS) * hour
    )
    indexed = cost.detector_cost(cost.CostInputs(writes_per_second=100, tables=2, gsis=3))["custom_metrics"]
    assert indexed - plain == pytest.approx((6 + 1) * cost.HOURS_PER_MONTH * hour)


def test_a_quiet_shard_writes_after_every_batch_a_busy_one_at_the_flush_boundaries() -> None:
    # Under 200 records/s a shard's batches are cut by the 5 s batching window before they fill
    assert cost.stats_writes_per_shard_window(cost.CostInputs(writes_per_second=199)) == 12
    assert cost.stats_writes_per_shard_window(cost.CostInputs(writes_per_second=200)) == 5
    # per shard: 2,400 writes/s of 1 KB items are 3 shards of 800 records/s each
    assert cost.stats_writes_per_shard_window(cost.CostInputs(writes_per_second=2400)) == 5
