"""``replay`` streams its input: ordered shards are read record by record, and inputs that are not in
order (a shard split over files that overlap, shuffled records) give the same answer, sorted."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from hotkeys.cli.main import main
from hotkeys.cli.replay import create_resources, plan_replay, run_replay
from hotkeys.cli.replay_view import collect
from hotkeys.detector.adapters.aws import AwsClients

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _records() -> list[dict[str, Any]]:
    return list(json.loads((EVENTS / "mixed-traffic.json").read_text())["Records"])


def _write(folder: Path, name: str, records: list[dict[str, Any]]) -> str:
    path = folder / name
    # Captured events carry their shard's id (Lambda sets it with tumbling windows); a file without
    # one is a shard of its own.
    path.write_text(json.dumps({"shardId": "shardId-00000001", "Records": records}))
    return str(path)


def _replay(paths: list[str]) -> tuple[dict[str, Any], list[Any]]:
    seen: list[Any] = []
    with mock_aws():
        aws = AwsClients()
        resources = create_resources(aws)
        report = run_replay(paths, resources, aws, observe=seen.append)
        result = collect(report, 5, aws)
    return result, seen


@pytest.fixture
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("baseline")
    result, _seen = _replay([_write(folder, "all.json", _records())])
    return result


def test_a_shard_split_over_files_in_order_is_streamed_with_the_same_answer(
    tmp_path: Path, baseline: dict[str, Any]
) -> None:
    # Given one shard's records in two files, the second starting where the first ends
    records = _records()
    middle = len(records) // 2
    paths = [_write(tmp_path, "a.json", records[:middle]), _write(tmp_path, "b.json", records[middle:])]
    # When planned and replayed
    plan = plan_replay(paths)
    result, seen = _replay(paths)
    # Then it is one ordered shard (streamed), every record is seen once, and the answer is the same
    assert [(s.records, s.ordered, len(s.files)) for s in plan.shards] == [(len(records), True, 2)]
    assert len(seen) == len(records)
    assert _answer(result) == _answer(baseline)


def test_shuffled_and_overlapping_files_are_sorted_with_the_same_answer(
    tmp_path: Path, baseline: dict[str, Any]
) -> None:
    # Given the same records shuffled over two files whose sequence ranges overlap
    records = _records()
    random.Random(7).shuffle(records)
    middle = len(records) // 2
    paths = [_write(tmp_path, "a.json", records[:middle]), _write(tmp_path, "b.json", records[middle:])]
    # When planned and replayed
    plan = plan_replay(paths)
    result, seen = _replay(paths)
    # Then the shard is read whole and sorted, and the answer is the in-order one
    assert [(s.records, s.ordered) for s in plan.shards] == [(len(records), False)]
    assert [r["dynamodb"]["SequenceNumber"] for r in seen] == sorted(r["dynamodb"]["SequenceNumber"] for r in records)
    assert _answer(result) == _answer(baseline)


def test_records_carrying_their_own_shard_ids_are_separate_shards(tmp_path: Path) -> None:
    # Given one file holding two shards' records, interleaved, each shard in order
    records = _records()[:40]
    for position, record in enumerate(records):
        record["shardId"] = f"shardId-{position % 2}"
    plan = plan_replay([_write(tmp_path, "two.json", records)])
    # Then each shard streams its own records only, in order
    assert [(s.shard_id, s.records, s.ordered) for s in plan.shards] == [
        ("shardId-0", 20, True),
        ("shardId-1", 20, True),
    ]
    assert [r["shardId"] for r in plan.shards[1].read()] == ["shardId-1"] * 20


def _answer(result: dict[str, Any]) -> dict[str, Any]:
    return {name: result[name] for name in ("records", "shards", "top", "windows", "alerts", "dead_letters")} | {
        "archived": [item["items"] for item in result["archived"]]
    }


def test_replay_memory_does_not_grow_with_the_input(tmp_path: Path) -> None:
    """Peak memory of two whole `hotkeys replay --report` runs, one on ten times the records of the
    other. Holding the records (what replay did before it streamed) costs several KB each."""
    from bench.streaming import measure

    hotkeys = str(Path(sys.executable).parent / "hotkeys")
    peaks = []
    for seconds in (1, 10):
        # Given a generated shard of 1,000 records/s of ~1 KB items
        events = tmp_path / f"{seconds}.json.gz"
        assert main(["generate", "--out", str(events), "--rate", "1000", "--duration", str(seconds)]) == 0
        # When it is replayed with a report, as a user runs it
        peaks.append(measure([hotkeys, "replay", str(events), "--report", str(tmp_path / "r.html")])["peak_rss_mb"])
    # Then 9,000 more records cost less than 30 MB more (the heat map's cells, moto's items)
    assert peaks[1] - peaks[0] < 30, peaks


def test_the_progress_bar_counts_every_record_and_is_silent_when_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from hotkeys.cli.progress import progress_bar

    with progress_bar("replaying", 2500, enabled=False) as advance:
        advance(2500)
    assert capsys.readouterr().err == ""
    with progress_bar("replaying", 2500, enabled=True) as advance:
        for _ in range(2500):
            advance(1)
    assert "2500/2500" in capsys.readouterr().err
