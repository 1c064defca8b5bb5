"""What a person reads (issue #36): every table fits its terminal whole, `top` shows the partitions a
user least expects, its text points at what its JSON holds, bad or empty input says so, the JSON
streams parse, and the help says each thing once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from hotkeys.cli import throttle_view
from hotkeys.cli.common import render_top
from hotkeys.cli.main import main
from hotkeys.cli.rows import TopRow
from hotkeys.detector.config import Settings
from hotkeys.detector.throttling.throttles import THROTTLED_AND_LANDED, THROTTLED_ONLY

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
DEFAULTS = Settings(stats_table_name="s")


def _replayed(stats_table_name: str, *files: str) -> None:
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay([str(EVENTS / name) for name in files], LocalResources(stats_table=stats_table_name))


def test_top_shows_a_hot_index_partition_without_being_asked(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a payments table whose by-status index has PENDING and AUTHORIZED at 90% of a partition
    _replayed(stats_table_name, "gsi-back-pressure.json.gz")
    # When plain `top` runs
    assert main(["top", "--stats-table", stats_table_name, "--last", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # Then the hot index partitions are its first rows, named with their index
    assert {(row["index"], row["key"]) for row in rows[:2]} == {("by-status", "PENDING"), ("by-status", "AUTHORIZED")}
    # and `--index table` leaves them out, `--index by-status` shows them alone
    assert main(["top", "--stats-table", stats_table_name, "--last", "1", "--json", "--index", "table"]) == 0
    assert {row["index"] for row in json.loads(capsys.readouterr().out)["rows"]} == {None}
    assert main(["top", "--stats-table", stats_table_name, "--last", "1", "--json", "--index", "by-status"]) == 0
    assert {row["index"] for row in json.loads(capsys.readouterr().out)["rows"]} == {"by-status"}


def _row(table: str, index: str | None, key: str, average: float) -> dict[str, Any]:
    return {
        "window_start": "2026-12-01T00:00:00Z",
        "window_seconds": 60,
        "table": table,
        "index": index,
        "key": key,
        "wcu_per_second": 3 * average,
        "at_most_wcu_per_second": 3 * average,
        "share": 0.4,
        "writes": 18_058,
        "wcu": 18_058,
        "error_bound": 0,
    }


DEMO_ROWS = [
    _row("payments", "by-status", "PENDING", 301.0),
    _row("payments", "by-status", "AUTHORIZED", 300.9),
    _row("tickets", None, "event#42", 300.0),
    _row("payments", "by-status", "SETTLED", 150.4),
]


@pytest.mark.parametrize("width", range(80, 201, 5))
def test_no_key_table_or_window_start_is_split_at_any_width_from_80_to_200(width: int) -> None:
    # Given the demo's hottest rows, index partitions among them, and a terminal this wide
    console = Console(width=width, record=True, color_system=None)
    # When the top table is printed
    render_top(console, [TopRow.from_json(row) for row in DEMO_ROWS], DEFAULTS, title="Hottest partition keys")
    lines = console.export_text().splitlines()
    # Then each window start, table (with its index) and key is whole on one line, and nothing is cut
    for row in DEMO_ROWS:
        where = "payments index by-status" if row["index"] else row["table"]
        for text in (row["window_start"], where, row["key"]):
            assert any(text in line for line in lines), (width, text, "\n".join(lines))
    assert "…" not in "".join(lines) and max(map(len, lines)) <= width
    # and at 131 columns or more the wide table shows every column (the rate's upper end and the counts)
    assert ("at most" in "".join(lines)) == (width >= 131), width


THROTTLED = [
    {
        "window_start": "2026-12-01T00:00:00Z",
        "table": "payments",
        "index": "by-status",
        "key": "AUTHORIZED",
        "landed_wcu": None,
        "unlisted_bound": 0,
        "throttled_requests": 4_100,
        "status": THROTTLED_ONLY,
    },
    {
        "window_start": "2026-12-01T00:01:00Z",
        "table": "tickets",
        "index": None,
        "key": "venue#7",
        "landed_wcu": 1_234,
        "throttled_requests": 1_250,
        "status": THROTTLED_AND_LANDED,
    },
]


@pytest.mark.parametrize("width", range(40, 201, 5))
def test_no_throttled_key_or_its_window_start_is_split_at_any_width_from_40_to_200(width: int) -> None:
    # Given throttled keys (an index partition among them) and a terminal this wide
    console = Console(width=width, record=True, color_system=None, force_terminal=True)
    # When the throttled-keys picture is printed (top and the replay print it alike)
    throttle_view.render(console, {"rows": THROTTLED})
    lines = console.export_text().splitlines()
    # Then each window start, table (with its index) and key is whole on one line, nothing is cut, no line
    # is wider than the terminal, and each count is there
    for row in THROTTLED:
        where = "payments index by-status" if row["index"] else row["table"]
        for text in (row["window_start"], where, row["key"]):
            assert any(text in line for line in lines), (width, text, "\n".join(lines))
    assert "…" not in "".join(lines) and max(map(len, lines)) <= width, "\n".join(lines)
    assert all(any(count in line for line in lines) for count in ("4,100", "1,250", "1,234")), "\n".join(lines)


def test_top_text_points_at_json_that_holds_what_it_left_out(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given several tables replayed on an endpoint without Contributor Insights (one note per source)
    _replayed(stats_table_name, "gsi-back-pressure.json.gz", "hot-key-burst.json.gz", "mixed-traffic.json")
    assert main(["top", "--stats-table", stats_table_name, "--since", "2026-12-01"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Throttled keys"))
    more = re.search(r"and (\d+) more notes? \(--json lists them\)", line)
    assert more, line
    # When the same top runs with --json
    assert main(["top", "--stats-table", stats_table_name, "--since", "2026-12-01", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    # Then the JSON holds every note the line summed up, the families and the rows
    assert len(found["throttles"]["notes"]) == int(more[1]) + 1
    assert found["rows"] and isinstance(found["families"], list)
    # and `top --help` says it shows the throttled keys
    assert main(["top", "--help"]) == 0
    assert "throttled" in " ".join(capsys.readouterr().out.split())


def test_an_input_with_no_records_is_no_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"Records": []}')
    # When a replay gets a file with no records
    assert main(["replay", str(empty)]) == 2
    out, err = capsys.readouterr()
    # Then it says so in one line, and prints no verdict
    assert out == "" and err == f"hotkeys: no stream records in {empty}: nothing to judge\n"
    # and generate refuses to write such a file
    assert main(["generate", "--out", str(tmp_path / "w.json"), "--rate", "0"]) == 2
    assert "no records" in capsys.readouterr().err and not (tmp_path / "w.json").exists()


def test_the_functions_logs_leave_the_json_on_stdout_whole() -> None:
    # `HOTKEYS_LOG_LEVEL=INFO hotkeys replay ... --json | python -m json.tool`
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'functions'}{os.pathsep}{ROOT}", "HOTKEYS_LOG_LEVEL": "INFO"}
    done = subprocess.run(
        [sys.executable, "-m", "hotkeys.cli.main", "replay", "events/share-small-table.json.gz", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] > 0
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith('{"level"')]
    assert logged and {entry["level"] for entry in logged} <= {"INFO", "WARNING", "ERROR"}


def test_make_demo_says_what_it_installs_before_it_installs_and_installs_what_the_demo_needs(tmp_path: Path) -> None:
    # A fresh machine: no virtualenv yet (make -n prints the recipe it would run)
    done = subprocess.run(
        ["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    lines = done.stdout.splitlines()
    said = next(i for i, line in enumerate(lines) if line.startswith("echo") and "installing" in line)
    installs = next(i for i, line in enumerate(lines) if "pip install" in line)
    # the CLI and moto's in-process mocks (the `local` extra), not plotly nor moto's server (issue #47)
    assert said < installs and "-e '.[local]'" in lines[installs]


def test_help_says_each_default_once_and_the_report_needs_its_script(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "self-contained" not in text and "plotly's script" in text
    # one "(default" per option's help, never two
    for option in re.split(r"\s(?=--[a-z])", text):
        assert option.count("(default") <= 1, option


def test_records_with_a_new_image_only_are_not_said_to_carry_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import load_event

    event = load_event("mixed-traffic.json")
    records = event["Records"][:5]
    for record in records:
        record["dynamodb"]["StreamViewType"] = "NEW_IMAGE"
        record["dynamodb"].pop("OldImage", None)
    path = tmp_path / "new-image.json"
    path.write_text(json.dumps({"Records": records}))
    assert main(["replay", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "carry no item images" not in first and "one item image, not both" in first


@pytest.mark.parametrize(
    ("number", "counted"),
    [
        ("1e400", False),
        ("1E+126", False),
        ("1E-131", False),
        ("1" * 39, False),
        ("9.9999999999999999999999999999999999999E+125", True),
        ("-1E-130", True),
        ("1" * 38, True),
        ("42", True),
    ],
)
def test_a_number_key_outside_dynamodbs_range_is_dead_lettered(
    number: str, counted: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # DynamoDB's numbers: "up to 38 digits of precision", magnitude 1E-130 to 9.99...E+125 (38 digits)
    from tests.conftest import load_event

    record = load_event("mixed-traffic.json")["Records"][0]
    record["dynamodb"]["Keys"] = {"pk": {"N": number}}
    record["dynamodb"]["NewImage"] = {"pk": {"N": number}}
    record["dynamodb"].pop("OldImage", None)
    path = tmp_path / "number.json"
    path.write_text(json.dumps({"Records": [record]}))
    main(["replay", str(path), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert (result["counted"] == 1) == counted, result["not_counted"]
    assert (len(result["dead_letters"]) == 0) == counted


def test_the_demo_verdict_quotes_the_figures_the_tables_and_alerts_show(capsys: pytest.CaptureFixture[str]) -> None:
    # Given the demo (`make demo`: every sample), as JSON: the stored rows, the alerts, the throttled keys
    from hotkeys.cli.verdict import verdict

    files = sorted(str(path) for path in EVENTS.glob("*.json")) + sorted(str(path) for path in EVENTS.glob("*.json.gz"))
    assert main(["replay", *files, "--json", "--limit", "50"]) == 0
    result = json.loads(capsys.readouterr().out)
    lines = verdict(result, DEFAULTS)
    from hotkeys.cli.report import render

    page = render(result, [], DEFAULTS, verdict=lines)
    # Then every key DynamoDB throttled is named once, with the throttled-keys table's count per window
    for row in result["throttles"]["rows"]:
        named = [line for line in lines if re.search(rf"\b{re.escape(row['key'])}\b", line) and line.startswith("  ")]
        assert len(named) == 1, (row["key"], named)
        counted = f"{row['throttled_requests']:,}"
        assert re.search(rf"{counted}( requests)? in the window starting {row['window_start']}", named[0]), named[0]
    # and every hot key's rate and % of the limit are the stored row's, the top table's and the alerts'
    checked = 0
    for line in lines:
        found = re.match(r"  (\S+?)(?: index (\S+): |/)(\S+) peaked at ([\d,]+) WCU/s \((\d+)% of the", line)
        if not found:
            continue
        checked += 1
        table, index, key = (found[1], found[2], found[3]) if found[2] else (found[1], None, found[3])
        stored = max(
            (r for r in result["alerted_figures"] if (r["table"], r["index"], r["key"]) == (table, index, key)),
            key=lambda r: r["wcu_per_second"],
        )
        assert int(found[4].replace(",", "")) == round(stored["wcu_per_second"])
        assert int(found[5]) == round(100 * stored["wcu_per_second"] / 1000)
        top = [
            r
            for r in result["top"]
            if (r["table"], r["index"], r["key"], r["window_start"]) == (table, index, key, stored["window_start"])
        ]
        assert top and top[0]["wcu_per_second"] == stored["wcu_per_second"]
        # and the report's top-keys row for that key and window shows the same rate and % of the limit
        row_html = re.search(
            rf"<td class='k'>{re.escape(stored['window_start'])}</td><td class='k'>[^<]*</td>"
            rf"<td class='k'>{re.escape(key)}</td><td>([\d,.]+)</td><td>[\d,.]+</td><td>([\d.]+)%</td>",
            page,
        )
        assert row_html, (key, stored["window_start"])
        assert float(row_html[1].replace(",", "")) == stored["wcu_per_second"]
        assert round(float(row_html[2])) == int(found[5])
        mine = [a for a in result["alerts"] if (a["table"], a.get("index"), a["key"]) == (table, index, key)]
        resolved = [a for a in mine if a["status"] == "resolved" and a["reason"] == "partition_limit"]
        assert resolved and resolved[-1]["peak_wcu_per_second"] == stored["wcu_per_second"], (key, mine)
        # (every message's peak is at least the rate it quotes)
        quoted = [(a["status"], a["wcu_per_second"], a["peak_wcu_per_second"]) for a in mine]
        assert all(peak >= rate for status, rate, peak in quoted if status != "resolved"), quoted
        alerted = re.search(r"alerted at ([\d,]+) WCU/s", line)
        if alerted:  # the rate the incident fired at: its firing message's, as its subscriber first read it
            firing = next(
                a
                for a in result["alerts"]
                if (a["table"], a.get("index"), a["key"]) == (table, index, key)
                and a["status"] == "firing"
                and a["reason"] == "partition_limit"
            )
            assert int(alerted[1].replace(",", "")) == round(firing["wcu_per_second"])
    assert checked == 3  # the demo's three hot keys


@pytest.mark.parametrize("text", [".", "-.", "1.2.3", "\u0663", "1__0", "--1"])
def test_a_number_that_is_no_number_is_refused_where_it_is_sized(text: str) -> None:
    from hotkeys.detector.domain.sizing import SizingError, image_size

    with pytest.raises(SizingError):
        image_size({"n": {"N": text}})
    with pytest.raises(SizingError):
        image_size({"l": {"L": [{"N": text}]}})


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--archive-prefix", "x/"], "--archive-prefix"),
        (["--archive-replicated-ttl", "true"], "--archive-replicated-ttl"),
    ],
)
def test_redrive_refuses_settings_of_an_archive_it_is_told_does_not_exist(
    flags: list[str], named: str, stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    dlq = boto3.client("sqs").create_queue(QueueName="dlq")["QueueUrl"]
    argv = ["redrive", "--no-stack", "--dlq-url", dlq, "--stats-table", stats_table_name, "--no-archive", *flags]
    # When redrive is told there is no archive, and given one of the archive's settings
    assert main(argv) == 2
    # Then it says the two contradict, in one line, before reading anything
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--no-archive contradicts" in err and named in err


def test_a_log_level_that_is_no_level_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOTKEYS_LOG_LEVEL", "bogus")
    assert main(["replay", str(EVENTS / "poison-record.json"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["records"] > 0
    said = [line for line in captured.err.splitlines() if "HOTKEYS_LOG_LEVEL" in line]
    assert said == [
        "hotkeys: HOTKEYS_LOG_LEVEL=bogus is not a level (DEBUG, INFO, WARNING or ERROR): "
        "the function's logs stay quiet"
    ]


@pytest.fixture(scope="module")
def demo_result() -> dict[str, Any]:
    """The demo's replay (every sample), as JSON."""
    import contextlib
    import io

    files = sorted(str(path) for path in EVENTS.glob("*.json")) + sorted(str(path) for path in EVENTS.glob("*.json.gz"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["replay", *files, "--json"]) == 0
    return dict(json.loads(printed.getvalue()))


def _prose(console: Console, result: dict[str, Any]) -> None:
    """What a replay prints as prose: the verdict, the alerts, the throttled keys, the DLQ."""
    from hotkeys.cli import replay_view
    from hotkeys.cli.common import say
    from hotkeys.cli.throttle_view import render

    for line in replay_view.verdict(result, DEFAULTS):
        say(console, line)
    replay_view._render_alerts(console, result["alerts"])
    render(console, result.get("throttles"))
    replay_view._render_dead_letters(console, result["dead_letters"])


@pytest.mark.parametrize("width", [60, 72, 80, 100, 120, 160, 200])
def test_prose_wraps_on_a_terminal_with_hanging_indents_and_is_whole_in_a_pipe(
    demo_result: dict[str, Any], width: int
) -> None:
    import io

    terminal = Console(width=width, force_terminal=True, color_system=None, record=True, file=io.StringIO())
    piped = Console(width=width, force_terminal=False, record=True, file=io.StringIO())
    _prose(terminal, demo_result)
    _prose(piped, demo_result)
    wrapped, whole = terminal.export_text().splitlines(), piped.export_text().splitlines()
    # In a pipe each line is whole (scripts and the samples read it so); on a terminal, fitted to its width
    assert max(map(len, whole)) > width >= max(len(line) for line in wrapped if " " in line.strip())
    # and each piped line is its wrapped lines joined: the first at the line's own indent, the others further in
    position = 0
    for line in whole:
        indent = len(line) - len(line.lstrip(" "))
        first = wrapped[position]
        assert first.startswith(" " * indent) and not first[indent:].startswith(" "), (line, first)
        parts = [first.strip()]
        position += 1
        text = " ".join(line.split())
        while len(" ".join(" ".join(parts).split())) < len(text):
            assert wrapped[position].startswith(" " * (indent + 4)), (width, line, wrapped[position])
            parts.append(wrapped[position].strip())
            position += 1
        assert " ".join(" ".join(parts).split()) == text, (width, line)
    assert position == len(wrapped)
    # and no key or window start is cut
    for alert in demo_result["alerts"]:
        assert any(alert["key"] in line for line in wrapped), alert["key"]
