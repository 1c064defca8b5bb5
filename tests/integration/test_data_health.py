"""Data health as a user reads it: `hotkeys generate` writes items whose TTL attribute DynamoDB ignores
and items near the 400 KB limit; the replay names each problem with its count, share and fix (each
figure the reference's count of the generated items), `top` says it in one line, and a healthy workload
is told nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import main
from tests import reference_health, reference_sizing

GENERATE = ["generate", "--rate", "20", "--duration", "60", "--keys", "400", "--shards", "2", "--seed", "5"]


def generated(tmp_path: Path, *options: str) -> list[str]:
    out = tmp_path / "w.json.gz"
    assert main([*GENERATE, "--out", str(out), *options]) == 0
    return sorted(str(path) for path in tmp_path.glob("w-shard-*.json.gz"))


def written_items(paths: list[str]) -> list[dict[str, Any]]:
    import gzip

    records = [r for path in paths for r in json.loads(gzip.decompress(Path(path).read_bytes()))["Records"]]
    return [r for r in records if r["eventName"] in ("INSERT", "MODIFY")]


def test_the_replay_names_each_problem_with_the_references_count_and_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given items with expireAt in seconds, milliseconds or a String, and a few near the size limit
    paths = generated(tmp_path, "--ttl-values", "seconds=0.7,milliseconds=0.2,string=0.1", "--large-fraction", "0.05")
    capsys.readouterr()
    # When they are replayed (the TTL attribute as deployed: expireAt)
    assert main(["replay", *paths, "--ttl-attribute", "expireAt"]) == 0
    text = capsys.readouterr().out
    # Then the verdict names each problem, with the reference's counts of the generated items
    items = written_items(paths)
    ttl = reference_health.ttl_counts(
        ((r["dynamodb"]["NewImage"], int(r["dynamodb"]["ApproximateCreationDateTime"])) for r in items), "expireAt"
    )
    sizes = reference_health.size_figures(
        [reference_sizing.item_bytes(r["dynamodb"]["NewImage"]) for r in items],
        [reference_sizing.write_units(r["dynamodb"].get("OldImage"), r["dynamodb"]["NewImage"]) for r in items],
    )
    judged = sum(ttl.values())
    assert ttl["milliseconds"] and ttl["not_a_number"] and sizes["near_limit"]
    assert "Data health (from the items written):" in text
    for verdict, what, fix in (
        ("milliseconds", "hold expireAt in milliseconds", "divide by 1,000: TTL reads epoch seconds"),
        ("not_a_number", "hold expireAt as another type than Number", "write the epoch seconds as a Number"),
    ):
        count = ttl[verdict]
        line = (
            f"orders: {count:,} of {judged:,} items written ({count / judged:.1%}) {what}: TTL never deletes them; "
            f"{fix}"
        )
        assert line in text, line
    near = re.search(r"orders: ([\d,]+) items? written within 12\.5% of DynamoDB's 400 KB item limit", text)
    assert near and int(near[1].replace(",", "")) == sizes["near_limit"]


def test_a_healthy_workload_is_told_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = generated(tmp_path, "--ttl-values", "seconds=1")
    capsys.readouterr()
    assert main(["replay", *paths, "--ttl-attribute", "expireAt", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["health"]["orders"]["findings"] == []
    assert result["health"]["orders"]["ttl"] == {"ok": result["health"]["orders"]["items_written"]}
    assert main(["replay", *paths, "--ttl-attribute", "expireAt"]) == 0
    assert "Data health" not in capsys.readouterr().out


def test_top_says_it_in_one_line_and_its_json_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], moto_endpoint: str
) -> None:
    # Given a replay of items in milliseconds into a stats table on a moto server
    paths = generated(tmp_path, "--ttl-values", "seconds=0.5,milliseconds=0.5")
    capsys.readouterr()
    assert main(["replay", *paths, "--ttl-attribute", "expireAt", "--endpoint-url", moto_endpoint]) == 0
    created = capsys.readouterr().out
    found = re.search(r"stats table (\S+),", created)
    assert found
    # When top reads it
    assert main(["top", "--stats-table", found[1], "--endpoint-url", moto_endpoint, "--since", "2026-12-01"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Data health: ")]
    # Then one line says it, naming the attribute the consumer judged (stored with the figures)
    assert len(lines) == 1 and "hold expireAt in milliseconds" in lines[0]
    assert (
        main(["top", "--stats-table", found[1], "--endpoint-url", moto_endpoint, "--since", "2026-12-01", "--json"])
        == 0
    )
    health = json.loads(capsys.readouterr().out)["health"]["orders"]
    assert health["ttl"]["milliseconds"] > 0 and len(health["findings"]) == 1
    assert health["ttl_attribute"] == "expireAt"
