"""The sample outputs of the README and of the docs pages it links are what the commands print today.

Each sample is run as a user runs it (the CLI in a fresh process, from the repository's root) and
compared line for line with its page's fenced block; only what must vary between runs is normalised
(the replay's archive bucket carries a random suffix). Lines a page elides are written in
parentheses, "(the verdict)", and stand for any number of printed lines. Commands that read AWS
(`hotkeys top`) run against a moto server that a replay of the sample events filled. Each test reads
the one page that shows its sample, so a sample moved to another page fails here until its test follows.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from hotkeys.cli import cost

ROOT = Path(__file__).resolve().parents[2]
README = "README.md"
CLI = "docs/cli.md"
ALERTS = "docs/alerts.md"
WHAT_IF = "docs/what-if.md"
DATA_HEALTH = "docs/data-health.md"


def _text(page: str) -> str:
    return (ROOT / page).read_text()


def _block_after(marker: str, page: str) -> list[str]:
    """The lines of the first fenced block that opens after ``marker`` in ``page``."""
    text = _text(page)
    rest = text[text.index(marker) :]
    start = rest.index("```\n") + 4
    return rest[start : rest.index("\n```", start)].splitlines()


def _run(command: str) -> list[str]:
    arguments = shlex.split(command)
    assert arguments[0] == "hotkeys"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "hotkeys.cli.main", *arguments[1:]],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    return _normalised(done.stdout + done.stderr)


def _normalised(text: str) -> list[str]:
    # rich pads a table's centred title and caption to the table's width; a page's lines end where the text does
    text = re.sub(r"hotkeys-replay-archive-[0-9a-f]+", "hotkeys-replay-archive-RANDOM", text)
    return [line.rstrip() for line in text.splitlines()]


def _follows(sample: list[str], printed: list[str]) -> None:
    """Every sample line is printed, in order; a parenthesised line skips any printed lines, the
    others must follow the previous sample line directly."""
    position, skipping = 0, True
    for line in sample:
        if line.startswith("(") and line.endswith(")"):
            skipping = True
            continue
        if skipping:
            assert line in printed[position:], f"sample line not printed: {line!r}"
            position = printed.index(line, position) + 1
        else:
            assert printed[position : position + 1] == [line], f"sample line {line!r}, printed {printed[position:][:1]}"
            position += 1
        skipping = False


@pytest.fixture(scope="module")
def demo() -> list[str]:
    # `make demo`: hotkeys replay events/*.json events/*.json.gz
    files = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "events").glob("*.json"))
    files += sorted(str(path.relative_to(ROOT)) for path in (ROOT / "events").glob("*.json.gz"))
    return _run("hotkeys replay " + " ".join(files))


def test_the_demo_verdict_is_what_make_demo_prints(demo: list[str]) -> None:
    sample = _block_after("seems to read), when there is something to say:", README)
    assert sample[0].endswith("hot keys (at or near the partition limit; DynamoDB throttled 1 of them):")
    # every key DynamoDB throttled is in it, once (issue #36)
    assert sum("venue#7" in line for line in sample) == 1 and sum("event#42 " in line for line in sample) == 1
    # The verdict is printed as the README shows it, line for line
    _follows(_normalised("\n".join(sample)), demo)


def test_the_replay_sample_is_what_replay_prints() -> None:
    block = _block_after("lists them), so a replay emulates the deployment you chose, tumbling window included:", CLI)
    command, sample = block[0].removeprefix("$ "), block[1:]
    assert command.startswith("hotkeys replay ")
    _follows(_normalised("\n".join(sample)), _run(command))


def test_the_cost_figures_are_what_cost_computes() -> None:
    # "at 10,000 writes/s of 1 KB items, about $X against $Y"
    quoted = re.search(r"at 10,000\s+writes/s of 1 KB items, about \$(\d+) against \$(\d+)", _text(CLI))
    assert quoted, "docs/cli.md's cost sentence moved"
    result = cost.estimate(cost.CostInputs(writes_per_second=10_000))
    assert (int(quoted[1]), int(quoted[2])) == (
        round(result["detector_total"]),
        round(result["contributor_insights_total"]),
    )


def test_the_detectors_share_of_the_source_write_units_is_what_cost_computes() -> None:
    # the comparison table's "~X% of the source's write units": the stats table's and its heads
    # index's write units against the source's (1 KB items: one unit per write), at 10,000 writes/s
    quoted = re.search(r"~([\d.]+)% of the source's write units", _text(README))
    assert quoted, "README's write-unit share moved"
    inputs = cost.CostInputs(writes_per_second=10_000)
    ours = cost.detector_cost(inputs)
    units = (ours["stats_table_writes"] + ours["stats_heads_index_writes"]) / cost.PRICES["dynamodb_write_request_unit"]
    source = inputs.writes_per_second * cost.SECONDS_PER_MONTH
    assert float(quoted[1]) == round(units / source * 100, 2)


def test_the_top_sample_is_what_top_prints_after_the_burst_replay(moto_endpoint: str) -> None:
    # docs/cli.md's `hotkeys top` sample reads the stats table a replay of the burst sample fills: the replay
    # runs against a moto server (as `replay --endpoint-url` does for a user) and says which table it
    # created; the sample's command then runs against it, with that table's name.
    created = _run(f"hotkeys replay events/hot-key-burst.json.gz --endpoint-url {moto_endpoint}")
    named = [re.search(r"stats table (\S+),", line) for line in created]
    stats_table = next(found[1] for found in named if found)
    block = _block_after("## `hotkeys top`", CLI)
    command, sample = block[0].removeprefix("$ "), block[1:]
    assert command.startswith("hotkeys top --stats-table HotKeyDetector-DetectorStatsTable... ")
    command = command.replace("HotKeyDetector-DetectorStatsTable...", stats_table)
    printed = _run(f"{command} --endpoint-url {moto_endpoint}")
    assert printed == _normalised("\n".join(sample))


def test_the_watch_sample_is_what_watch_prints_on_the_table_its_page_makes(moto_endpoint: str) -> None:
    # docs/cli.md's `watch` sample: the command that makes a live table on a moto server, then `watch` on it,
    # both as printed (the page's endpoint replaced by the test's server; the window is the minute it ran in)
    block = _block_after("## `hotkeys watch --table NAME`", CLI)
    make, watch = (line.removeprefix("$ ") for line in block if line.startswith("$ "))
    assert make == "python -m events.live --endpoint-url http://127.0.0.1:5000"
    # (moto's in-process servers share one backend: another test's `tickets` would add to the sample's records)
    dynamodb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    if "tickets" in dynamodb.list_tables()["TableNames"]:
        dynamodb.delete_table(TableName="tickets")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}", "AWS_ACCESS_KEY_ID": "x"}
    env["AWS_SECRET_ACCESS_KEY"] = "x"
    done = subprocess.run(
        [sys.executable, *shlex.split(make)[1:-1], moto_endpoint],
        check=False,
        cwd=ROOT,
        env=env,
        text=True,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.replace(moto_endpoint, "http://127.0.0.1:5000").splitlines() == [block[1]]
    printed = _run(watch.replace("http://127.0.0.1:5000", moto_endpoint))
    window = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:00Z")
    assert [window.sub("WINDOW", line) for line in printed] == [window.sub("WINDOW", line) for line in block[3:]]


def test_the_incident_sample_is_what_a_replay_of_the_generated_burst_prints(tmp_path: Path) -> None:
    # docs/alerts.md's incident: the generate command it names, then the replay of that file
    text = _text(ALERTS)[_text(ALERTS).index("An incident has a life") :]
    generate = re.search(r"`(hotkeys generate --out w\.json\.gz[^`]*)`", text.replace("\n", " "))
    assert generate, "docs/alerts.md's incident names its generate command"
    path = tmp_path / "w.json.gz"
    _run(generate[1].replace("w.json.gz", str(path)))
    block = _block_after("An incident has a life", ALERTS)
    command, sample = block[0].removeprefix("$ "), block[1:]
    assert command == "hotkeys replay /tmp/readme-incident.json.gz"
    _follows(_normalised("\n".join(sample)), _run(f"hotkeys replay {path}"))


def test_the_commands_named_for_a_replays_stats_table_read_it(moto_endpoint: str) -> None:
    # docs/cli.md names the commands a replay's stats table on a moto server is left there for; each must
    # run against it (issue #36: `watch` was named, and fails there: it reads a live table's stream).
    sentence = re.search(r"leaves its stats table there and names it, for (.+?)(?:\(|\.)", _text(CLI), re.S)
    assert sentence, "docs/cli.md's sentence on the replay's stats table moved"
    named = re.findall(r"`(\w+)`", sentence[1])
    assert named == ["top"]
    created = _run(f"hotkeys replay events/hot-key-burst.json.gz --endpoint-url {moto_endpoint}")
    stats_table = next(found[1] for found in map(re.compile(r"stats table (\S+),").search, created) if found)
    for command in named:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "hotkeys.cli.main",
                command,
                "--stats-table",
                stats_table,
                "--endpoint-url",
                moto_endpoint,
            ],
            check=False,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and "event#42" in done.stdout, (command, done.stderr)


def test_the_what_if_sample_is_what_a_replay_of_the_generated_workload_prints(tmp_path: Path) -> None:
    # docs/what-if.md's example: its generate command (into a fresh folder), then its replay of those files
    block = _block_after("# Before you create it", WHAT_IF)
    generate, replay = (line.removeprefix("$ ") for line in block if line.startswith("$ "))
    assert generate.startswith("hotkeys generate --out /tmp/what-if.json.gz ")
    wrote = _run(generate.replace("/tmp/", f"{tmp_path}/"))
    assert [line.replace(f"{tmp_path}/", "/tmp/") for line in wrote] == block[1:3]
    printed = _run(replay.replace("/tmp/", f"{tmp_path}/"))
    _follows(_normalised("\n".join(block[4:])), printed)


def test_the_data_health_sample_is_what_a_replay_of_the_generated_workload_prints(tmp_path: Path) -> None:
    block = _block_after("# What the items written say", DATA_HEALTH)
    generate, replay = (line.removeprefix("$ ") for line in block[:2])
    assert generate.startswith("hotkeys generate --out /tmp/health.json.gz ")
    _run(generate.replace("/tmp/", f"{tmp_path}/"))
    _follows(_normalised("\n".join(block[2:])), _run(replay.replace("/tmp/", f"{tmp_path}/")))
