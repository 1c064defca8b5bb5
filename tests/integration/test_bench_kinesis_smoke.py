"""The Kinesis cell still runs both deliveries through the deployed wiring (it measures; this only checks
it works: no assertion on time)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from bench.kinesis_cpu import SOURCES, write_deliveries
from bench.shapes import records


def test_the_kinesis_events_carry_the_same_changes_as_the_stream_events(tmp_path: Path) -> None:
    # Given the same 300 items written as each delivery
    items = records("1KB-12", "mixed", 300)
    for source in SOURCES:
        write_deliveries(tmp_path / source, items, source)
    plain = json.loads((tmp_path / "dynamodb" / "event-00000.json").read_bytes())["Records"]
    carried = json.loads((tmp_path / "kinesis-microsecond" / "event-00000.json").read_bytes())["Records"]
    # Then each Kinesis record holds its stream record's change: same table, operation, keys, images and
    # size, its time in microseconds within the stream record's second, no sequence number of DynamoDB's
    assert len(plain) == len(carried) == 300
    for stream_record, kinesis_record in zip(plain, carried, strict=True):
        change = json.loads(base64.b64decode(kinesis_record["kinesis"]["data"]))
        section, original = change["dynamodb"], stream_record["dynamodb"]
        assert change["tableName"] == "orders" and change["eventName"] == stream_record["eventName"]
        assert {name: section.get(name) for name in ("Keys", "NewImage", "OldImage", "SizeBytes")} == {
            name: original.get(name) for name in ("Keys", "NewImage", "OldImage", "SizeBytes")
        }
        assert section["ApproximateCreationDateTime"] // 1_000_000 == original["ApproximateCreationDateTime"]
        assert "SequenceNumber" not in section and kinesis_record["eventSource"] == "aws:kinesis"


def test_the_kinesis_cell_measures_every_delivery_and_reports_its_ratios(tmp_path: Path) -> None:
    # Given a tiny run of the cell (one small shape, one round)
    out = tmp_path / "kinesis.json"
    command = [sys.executable, "-m", "bench.kinesis_cpu", "--records", "1200", "--rounds", "1", "--shapes", "100B"]
    # When it runs
    subprocess.run([*command, "--out", str(out)], check=True, capture_output=True, text=True)
    result = json.loads(out.read_text())
    # Then every delivery was measured over all the records, none of them failed by the handler, and a
    # Kinesis shard's memory was read at each window's start and stored at its end (one pass each)
    (cell,) = result["cells"]
    assert cell["shape"] == "100B" and set(cell["sources"]) == set(SOURCES)
    for source, figures in cell["sources"].items():
        assert figures["failures"] == 0 and len(figures["total_us"]) == 1
        assert figures["records_per_event"] == 600
        if source != "dynamodb":
            assert {"ratio_median", "ratio_best"} <= set(figures)
    stream, kinesis = cell["sources"]["dynamodb"]["requests"], cell["sources"]["kinesis-microsecond"]["requests"]
    assert kinesis["GetItem"] - stream["GetItem"] == kinesis["PutItem"] - stream["PutItem"] == 3
    # and the steps of a Kinesis record were broken down, and the run named its command
    assert set(result["steps"]) == {"100B"} and "identity" in result["steps"]["100B"]
    assert result["command"].startswith("python -m bench.kinesis_cpu")
