"""`hotkeys cost --source kinesis`: each Kinesis price's arithmetic (GB of 1,024^3 bytes, written records
rounded up to a KB, change data capture units rounded up per write, enhanced fan-out hours per shard), the
record size the model assumes against records built as DynamoDB writes them, and the CLI's flags."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from bench import shapes
from hotkeys.cli import cost, cost_kinesis
from hotkeys.cli.cost_kinesis import KinesisSource, Stream
from hotkeys.cli.main import main
from hotkeys.detector.domain.sizing import image_size

GIB = 1024**3
ON_DEMAND = KinesisSource()
PROVISIONED = KinesisSource(mode="provisioned")


def _inputs(rate: float = 1000, **kinesis: Any) -> cost.CostInputs:
    return cost.CostInputs(writes_per_second=rate, source="kinesis", kinesis=KinesisSource(**kinesis))


def test_a_gb_read_is_1024_cubed_bytes_at_the_on_demand_shared_read_price() -> None:
    # a million records of 1,073.741824 bytes: exactly 2^30 bytes, one GB (10^9 bytes would be 1.07 GB)
    lines = cost_kinesis.kinesis_cost(ON_DEMAND, Stream(records=1e6, record=GIB / 1e6, shards=4))
    assert lines == {"kinesis_shared_reads": pytest.approx(0.04, rel=1e-12)}


def test_shared_reads_of_a_provisioned_stream_are_free() -> None:
    lines = cost_kinesis.kinesis_cost(PROVISIONED, Stream(records=1e9, record=3000, shards=4))
    assert lines == {"kinesis_shared_reads": 0.0}


def test_the_stacks_stream_bills_each_written_record_rounded_up_to_a_kb_and_its_hours() -> None:
    made = KinesisSource(stream_made_by_stack=True)
    # 2^20 records of 1,025 bytes: 2 KB each billed, 2 GB (unrounded they would be 1.001 GB)
    lines = cost_kinesis.kinesis_cost(made, Stream(records=2**20, record=1025, shards=4))
    assert lines["kinesis_stream_writes"] == pytest.approx(2 * 0.08, rel=1e-12)
    assert lines["kinesis_stream_hours"] == pytest.approx(30 * 24 * 0.04)
    # the detector is the stream's reader: its reads are the stream's GB read
    assert lines["kinesis_shared_reads"] == pytest.approx(2**20 * 1025 / GIB * 0.04)
    exact = cost_kinesis.kinesis_cost(made, Stream(records=2**20, record=1024, shards=4))
    assert exact["kinesis_stream_writes"] == pytest.approx(0.08, rel=1e-12)


def test_change_data_capture_units_are_one_per_kb_rounded_up_per_write() -> None:
    assert cost_kinesis.change_data_capture_units(1, 1.0, 1) == 1
    assert cost_kinesis.change_data_capture_units(1, 1.01, 1) == 2
    # ten writes of 0.1 KB are ten units, not one
    assert cost_kinesis.change_data_capture_units(10, 0.1, 1) == 10
    # and they are counted, not priced: no price was found (DYNAMODB_KINESIS_CDC_UNIT)
    result = cost.estimate(_inputs(100, stream_made_by_stack=True))
    assert result["kinesis"]["change_data_capture_units"] == 100 * cost.SECONDS_PER_MONTH
    assert result["kinesis"]["change_data_capture_priced"] is False
    assert not any("capture" in line for line in result["detector"])


def test_enhanced_fan_out_on_a_provisioned_stream_pays_a_consumer_shard_hour_per_shard_and_its_gb() -> None:
    fan_out = KinesisSource(mode="provisioned", enhanced_fan_out=True)
    lines = cost_kinesis.kinesis_cost(fan_out, Stream(records=1e6, record=GIB / 1e6, shards=7))
    assert lines == {
        "kinesis_fan_out_reads": pytest.approx(0.013, rel=1e-12),
        "kinesis_fan_out_consumer_shard_hours": pytest.approx(7 * 30 * 24 * 0.015),
    }


def test_enhanced_fan_out_on_an_on_demand_stream_pays_its_gb_only() -> None:
    fan_out = KinesisSource(enhanced_fan_out=True)
    lines = cost_kinesis.kinesis_cost(fan_out, Stream(records=1e6, record=GIB / 1e6, shards=7))
    assert lines == {
        "kinesis_fan_out_reads": pytest.approx(0.05, rel=1e-12),
        "kinesis_fan_out_consumer_shard_hours": 0.0,
    }
    # and it reads outside the shards' shared limits
    assert cost_kinesis.shared_read_use(fan_out, Stream(1e6, 1000, 7), 1)["get_records_per_second"] == 0


def test_the_shards_follow_the_writes_with_on_demand_headroom_or_as_given() -> None:
    record = cost_kinesis.record_bytes(ON_DEMAND, 1.0)
    # at 1,000 writes/s of such records the bytes bind (2.7 MiB/s): 3 provisioned shards, 6 on demand
    need = 1000 * record / 1024**2
    assert cost.shards(_inputs(1000, mode="provisioned")) == math.ceil(need) == 3
    assert cost.shards(_inputs(1000)) == math.ceil(2 * need) == 6
    assert cost.shards(_inputs(1)) == cost_kinesis.ON_DEMAND_START_SHARDS
    # small records: the records bind (1,000 a second a shard)
    assert cost.shards(_inputs(5000, mode="provisioned", record_kb=0.1)) == 5
    assert cost.shards(_inputs(1, shards=12)) == 12


def test_the_lambda_side_is_the_same_model_over_kinesis_shards() -> None:
    kinesis = cost.estimate(_inputs(10_000, shards=20))
    # the same traffic from DynamoDB Streams over 20 partitions' shards (2 KB items: 20,000 WCU/s)
    streams = cost.estimate(cost.CostInputs(writes_per_second=10_000, avg_item_kb=2.0))
    assert streams["shards"] == kinesis["shards"] == 20
    assert kinesis["detector"]["lambda_requests"] == streams["detector"]["lambda_requests"]
    assert kinesis["detector"]["lambda_compute"] == streams["detector"]["lambda_compute"]
    assert "stream_reads" not in kinesis["detector"] and streams["detector"]["stream_reads"] == 0.0
    assert kinesis["detector_total"] == pytest.approx(sum(kinesis["detector"].values()), abs=0.05)


def _kinesis_change(record: dict[str, Any]) -> dict[str, Any]:
    """A stream record as DynamoDB writes it to Kinesis (the shared interface's decoded ``data``)."""
    stream = record["dynamodb"]
    change = {
        "ApproximateCreationDateTime": 1796083200123456,
        "ApproximateCreationDateTimePrecision": "MICROSECOND",
        "Keys": stream["Keys"],
        "NewImage": stream.get("NewImage"),
        "OldImage": stream.get("OldImage"),
        "SizeBytes": stream["SizeBytes"],
    }
    return {
        "awsRegion": "us-east-1",
        "eventID": "00000000-0000-0000-0000-000000000000",
        "eventName": record["eventName"],
        "userIdentity": None,
        "recordFormat": "application/json",
        "tableName": "orders-table-of-a-real-length",
        "dynamodb": change,
        "eventSource": "aws:dynamodb",
    }


def test_the_record_size_covers_changes_of_the_benchmark_items_within_a_tenth() -> None:
    records = shapes.records("1KB-12", "modify", 300)
    written = [len(json.dumps(_kinesis_change(r))) for r in records]
    item_kb = sum(image_size(r["dynamodb"]["NewImage"]) for r in records) / len(records) / 1024
    modelled = cost_kinesis.record_bytes(ON_DEMAND, item_kb)
    measured = sum(written) / len(written)
    assert measured <= modelled <= 1.1 * measured
    # a given record size wins
    assert cost_kinesis.record_bytes(KinesisSource(record_kb=2.5), item_kb) == 2560


def test_the_cli_prices_a_kinesis_source(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["cost", "--writes-per-second", "1000", "--source", "kinesis", "--kinesis-mode", "provisioned"]
    assert main([*argv, "--enhanced-fan-out", "--kinesis-shards", "8", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["source"] == "kinesis" and result["shards"] == result["kinesis"]["shards"] == 8
    assert result["detector"]["kinesis_fan_out_consumer_shard_hours"] == round(8 * 720 * 0.015, 2)
    assert "Contributor Insights" not in result["detector"] and result["contributor_insights_total"] > 0
    assert main(["cost", "--writes-per-second", "1000", "--source", "kinesis", "--stream-made-by-stack"]) == 0
    shown = capsys.readouterr().out
    assert "kinesis stream hours" in shown and "change data capture" in shown and "not priced" in shown


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--enhanced-fan-out"], "--enhanced-fan-out: a Kinesis source's flag; add --source kinesis"),
        (["--stream-made-by-stack", "--kinesis-shards", "4"], "--stream-made-by-stack, --kinesis-shards: a Kinesis"),
        (["--kinesis-mode", "on-demand"], "--kinesis-mode: a Kinesis source's flag"),
        (["--source", "kinesis", "--kinesis-mode", "provisioned", "--stream-made-by-stack"], "stack's stream is on"),
        (["--source", "kinesis", "--kinesis-shards", "0"], "argument --kinesis-shards: must be at least 1"),
        (["--source", "kinesis", "--kinesis-record-kb", "0"], "argument --kinesis-record-kb: must be above 0"),
        (["--source", "kafka"], "argument --source: invalid choice"),
    ],
)
def test_the_cli_refuses_nonsense_in_one_line(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["cost", "--writes-per-second", "10", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_docs_cost_kinesis_table_is_what_cost_computes(capsys: pytest.CaptureFixture[str]) -> None:
    text = (Path(__file__).parents[2] / "docs" / "cost.md").read_text()
    section = text.split("## A Kinesis source")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (?:`([^`]*)`|\(none[^)]*\)) \| (\d+) \| [^|]* \| ([\d.,]+) \|$", section, re.MULTILINE)
    assert len(rows) == 5, "docs/cost.md's Kinesis table moved"
    for flags, shards, total in rows:
        argv = ["cost", "--writes-per-second", "1000", "--source", "kinesis", *flags.split(), "--json"]
        assert main(argv) == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["shards"], result["detector_total"]) == (int(shards), float(total.replace(",", ""))), flags


def test_each_kinesis_shards_recent_changes_cost_its_own_rate_not_the_shard_count() -> None:
    from hotkeys.detector.consumer.seen import HORIZON_SECONDS, MAX_SEEN

    def per_shard(writes: float, shard_count: int) -> float:
        kinesis = KinesisSource(mode="provisioned", shards=shard_count)
        inputs = cost.CostInputs(writes_per_second=writes, source="kinesis", kinesis=kinesis)
        return cost.recent_changes_cost(inputs)["stats_recent_changes"] / shard_count

    # the same rate a shard costs the same at 10 shards as at 1,000 (one item per shard: no hot key of its own)
    assert per_shard(1_000, 10) == pytest.approx(per_shard(100_000, 1_000))
    # a busier shard remembers more, up to MAX_SEEN identities (then the cost stops growing)
    assert per_shard(1_000, 10) < per_shard(5_000, 10)
    capped = MAX_SEEN / HORIZON_SECONDS
    assert per_shard(capped * 10, 10) == pytest.approx(per_shard(capped * 20, 10))
