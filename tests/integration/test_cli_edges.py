"""The CLI's rough edges found by trying it as a new user (issue #27, item 5): each one line, at once."""

from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from hotkeys.cli import replay_view
from hotkeys.cli.main import build_parser, main
from hotkeys.emulator import generate
from hotkeys.emulator.io import read_event_file
from hotkeys.emulator.local import create_stats_table
from tests.support import create_source_table

ROOT = Path(__file__).resolve().parents[2]


def _one_line_error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def no_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay that starts fails the test: the mistake must be caught before it."""

    def started(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("the replay started")

    monkeypatch.setattr(replay_view, "plan_replay", started)


@pytest.mark.usefixtures("no_replay")
def test_a_report_into_a_folder_fails_before_the_replay(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Given --report naming a folder, not a file
    # When replaying
    assert main(["replay", "events/mixed-traffic.json", "--report", str(tmp_path)]) == 2
    # Then one line says so before any record is read, and names a file that would do
    err = _one_line_error(capsys)
    assert "is a folder" in err and str(tmp_path / "report.html") in err


@pytest.mark.usefixtures("no_replay")
@pytest.mark.parametrize("where", ["chmod-555", "sysfs"])
def test_a_report_into_a_read_only_folder_fails_before_the_replay(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given a folder nobody may write into (a 0555 folder for a user; sysfs refuses root too)
    if where == "chmod-555":
        if os.geteuid() == 0:
            pytest.skip("root writes into a 0555 folder")
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o555)
    else:
        folder = Path("/sys")
        if not folder.is_dir():
            pytest.skip("no sysfs here")
    # When replaying with --report in it
    assert main(["replay", "events/mixed-traffic.json", "--report", str(folder / "report.html")]) == 2
    # Then one line says it cannot be written, before the replay, and nothing is left behind
    assert "--report: cannot write" in _one_line_error(capsys)
    assert not (folder / "report.html").exists()


def test_an_existing_report_is_not_touched_by_the_check(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Given a report already written, and a replay that then fails on its input
    report = tmp_path / "report.html"
    report.write_text("yesterday's")
    # When the replay is refused after the check (a missing event file)
    assert main(["replay", str(tmp_path / "missing.json"), "--report", str(report)]) == 2
    # Then the old report is intact
    assert report.read_text() == "yesterday's"
    assert "event file not found" in _one_line_error(capsys)


@pytest.mark.parametrize(
    "twice",
    [["events/mixed-traffic.json"] * 2, ["events/mixed-traffic.json", "./events/../events/mixed-traffic.json"]],
)
@pytest.mark.usefixtures("aws")
def test_the_same_event_file_twice_is_refused(twice: list[str], capsys: pytest.CaptureFixture) -> None:
    # When the same file is named twice (as such, or by another path)
    assert main(["replay", *twice]) == 2
    # Then the replay does not count its records twice: one line says why it stops
    err = _one_line_error(capsys)
    assert "given more than once" in err and "mixed-traffic.json" in err


def test_generate_interrupted_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given an event file written yesterday, and a generation that is interrupted (Ctrl-C) half-way
    out = tmp_path / "load.json.gz"
    main(["generate", "--out", str(out), "--rate", "5", "--duration", "10", "--seed", "2"])
    before = out.read_bytes()
    real_stream = generate.stream

    def interrupted(workload: generate.Workload) -> Iterator[tuple[int, dict[str, Any]]]:
        for index, item in enumerate(real_stream(workload)):
            if index == 500:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(generate, "stream", interrupted)
    capsys.readouterr()
    # When generating into the same name again
    assert main(["generate", "--out", str(out), "--rate", "100", "--duration", "60"]) == 130
    # Then the old file is intact, no partial file remains beside it, and one line says nothing was written
    assert out.read_bytes() == before and read_event_file(out)["Records"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["load.json.gz"]
    assert "interrupted: nothing was written" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("hot", "message"),
    [
        ("k:10wcu@100s+30s", "runs from 100 s to 130 s, past --duration 120 s"),
        ("k:10wcu@130s", "starts at 130 s, past --duration 120 s"),
    ],
)
def test_generate_refuses_a_hot_key_past_the_duration(
    hot: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["generate", "--out", str(tmp_path / "x.json"), "--duration", "120", "--hot", hot]) == 2
    assert message in _one_line_error(capsys)
    assert not list(tmp_path.iterdir())


def test_a_hot_key_without_a_duration_stays_hot_to_the_end_not_past_it(tmp_path: Path) -> None:
    # Given a hot key from 100 s with no duration, in a 120 s workload of nothing else
    out = tmp_path / "x.json"
    assert main(["generate", "--out", str(out), "--rate", "0", "--duration", "120", "--hot", "k:10wcu@100s"]) == 0
    records = read_event_file(out)["Records"]
    # Then it is hot for the last 20 s, at its rate, and no record lies past the workload's end
    times = [record["dynamodb"]["ApproximateCreationDateTime"] for record in records]
    assert len(records) == 10 * 20
    assert min(times) == generate.T0 + 100 and max(times) < generate.T0 + 120


def test_generate_refuses_a_workload_too_big_to_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # Given a mistyped rate (a billion records per second)
    def started(_workload: generate.Workload) -> Iterator[tuple[int, dict[str, Any]]]:
        raise AssertionError("the generation started")

    monkeypatch.setattr(generate, "stream", started)
    # When generating a second of it
    assert main(["generate", "--out", str(tmp_path / "x.json"), "--rate", "1e9", "--duration", "1"]) == 2
    # Then one line refuses it at once, with the figures, and nothing is written
    err = _one_line_error(capsys)
    assert "1,000,000,000 records" in err and f"{generate.MAX_RECORDS:,}" in err
    assert not list(tmp_path.iterdir())
    # and the bound is the one the workload checks itself (the samples stay far below it)
    with pytest.raises(generate.GenerateError):
        generate.Workload(rate=generate.MAX_RECORDS + 1, duration=1).validate()
    generate.Workload(rate=generate.MAX_RECORDS, duration=1).validate()


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (["region"], "--attribute must look like 'region=4' (NAME=CARDINALITY), got 'region'"),
        (["=4"], "--attribute '=4': the name is empty"),
        (["region=0"], "--attribute 'region=0': the cardinality must be between 1 and 1,000,000"),
        (["customer=1000001"], "the cardinality must be between 1 and 1,000,000"),
        (["status=4"], "--attribute 'status=4': the items already have 'status'"),
        (["region=4", "region=8"], "--attribute 'region' is given more than once"),
    ],
)
def test_generate_refuses_a_bad_attribute(
    attributes: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    flags = [flag for attribute in attributes for flag in ("--attribute", attribute)]
    assert main(["generate", "--out", str(tmp_path / "x.json"), "--duration", "5", *flags]) == 2
    assert message in _one_line_error(capsys)
    assert not list(tmp_path.iterdir())


def test_generate_json_names_the_attributes_its_items_carry(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Given a workload whose items carry a region and a customer
    out = tmp_path / "x.json"
    flags = ["--attribute", "region=4", "--attribute", "customer=100000"]
    assert main(["generate", "--out", str(out), "--rate", "10", "--duration", "5", *flags, "--json"]) == 0
    # Then --json says so, and the items carry them
    (written,) = json.loads(capsys.readouterr().out)
    assert written == {"path": str(out), "records": 50, "attributes": {"region": 4, "customer": 100000}}
    images = [
        record["dynamodb"].get("NewImage") or record["dynamodb"]["OldImage"]
        for record in read_event_file(out)["Records"]
    ]
    assert all(image["region"]["S"].startswith("region#") and "customer" in image for image in images)
    # and without --attribute, none
    assert main(["generate", "--out", str(out), "--rate", "10", "--duration", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["attributes"] == {}


def test_top_names_an_unknown_stats_table(aws: None, capsys: pytest.CaptureFixture) -> None:
    assert main(["top", "--stats-table", "no-such-stats"]) == 2
    err = _one_line_error(capsys)
    assert "'no-such-stats'" in err and "no such table" in err


def test_top_says_a_source_table_is_not_a_stats_table(aws: None, capsys: pytest.CaptureFixture) -> None:
    # Given a source table (keyed by pk alone) and a real stats table
    create_source_table("orders")
    create_stats_table(boto3.client("dynamodb"), "stats")
    # When top is pointed at the source table
    assert main(["top", "--stats-table", "orders"]) == 2
    # Then it says that is not a stats table, instead of "No figures yet"
    err = _one_line_error(capsys)
    assert "'orders' is not the detector's stats table" in err and "pk (HASH)" in err
    # while the stats table itself answers (empty)
    assert main(["top", "--stats-table", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "rows": [],
        "families": [],
        "throttles": None,
        "health": {},
        "hot_rows_beyond_limit": 0,
        "hot_rows_outside_index": 0,
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "events/hot-key-burst.json.gz"],
        ["replay", "events/mixed-traffic.json", "--json"],
        ["cost", "--writes-per-second", "10000"],
    ],
)
def test_every_command_ends_the_same_way_when_its_reader_goes_away(argv: list[str]) -> None:
    # Given stdout is a pipe nobody reads any more (`hotkeys replay ... | head -1`, after head exits)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hotkeys.cli.main", *argv],
            stdout=writer,
            stderr=subprocess.PIPE,
            check=False,
            cwd=ROOT,
        )
    finally:
        os.close(writer)
    # Then it ends as a SIGPIPE'd process would (as `top --json | head` does), with nothing on stderr
    assert done.returncode == 141 and done.stderr == b""


def _epilogs() -> dict[str, str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    return {name: sub.epilog or "" for name, sub in commands.choices.items()}  # type: ignore[union-attr]


def test_the_help_examples_name_files_that_exist() -> None:
    # Every event file or glob an example names (run from the repository's root) matches files
    samples = {path.name for path in (ROOT / "events").iterdir() if path.name.endswith((".json", ".json.gz"))}
    for command, epilog in _epilogs().items():
        for token in epilog.split():
            if token.startswith("events/"):
                assert glob.glob(str(ROOT / token)), (command, token)
    # and the example that replays every sample names each of them, the gzip'd hot ones included
    replay_lines = [line for line in _epilogs()["replay"].splitlines() if "*" in line]
    matched = {
        Path(name).name for line in replay_lines for token in line.split() for name in glob.glob(str(ROOT / token))
    }
    assert matched == samples


@pytest.mark.parametrize("compressed", [True, False], ids=["gzipped", "plain"])
def test_a_dash_replays_standard_input_as_the_same_file_would(compressed: bool, tmp_path: Path) -> None:
    # (a pipe, as a user gives it: `gunzip -c capture.json.gz | hotkeys replay -`)
    sample = ROOT / "events" / "hot-key-burst.json.gz"
    data = sample.read_bytes() if compressed else gzip.decompress(sample.read_bytes())
    command = [sys.executable, "-m", "hotkeys.cli.main", "replay", "--json"]
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    piped = subprocess.run([*command, "-"], input=data, capture_output=True, check=True, env=env, cwd=tmp_path)
    named = subprocess.run([*command, str(sample)], capture_output=True, check=True, env=env, cwd=tmp_path)
    ours, theirs = json.loads(piped.stdout), json.loads(named.stdout)
    assert (ours["records"], ours["counted"]) == (theirs["records"], theirs["counted"]) == (18_600, 18_600)
    assert [a["subject"] for a in ours["alerts"]] == [a["subject"] for a in theirs["alerts"]]


def test_standard_input_that_is_no_event_is_named_so_and_given_twice_refused(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{}")))
    assert main(["replay", "-"]) == 2
    assert _one_line_error(capsys) == (
        "hotkeys: standard input is not a DynamoDB stream event (no 'Records' list), nor a Kinesis one (a Lambda "
        "Kinesis event, or a JSON list of decoded changes)"
    )
    assert main(["replay", "-", "-"]) == 2
    assert "given more than once" in _one_line_error(capsys)
