"""The replay's HTML report: a key-by-time heat map with exact figures, viewable offline."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hotkeys.cli.main import main

EVENTS = Path(__file__).resolve().parents[2] / "events"


class HeatMapParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[int]] = {}
        self.external: list[str] = []
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "tr" and "data-key" in values:
            self._key = str(values["data-key"])
            self.rows[self._key] = []
        elif tag == "td" and "data-wcu" in values and self._key is not None:
            self.rows[self._key].append(int(str(values["data-wcu"])))
        elif tag in ("script", "link", "img") or (tag == "a" and str(values.get("href", "")).startswith("http")):
            self.external.append(tag)


@pytest.fixture
def report(tmp_path: Path, capsys: pytest.CaptureFixture) -> Path:
    path = tmp_path / "report.html"
    assert main(["replay", str(EVENTS / "hot-key-burst.json.gz"), "--report", str(path)]) == 0
    assert f"Report written to {path}" in capsys.readouterr().out
    return path


def test_the_heat_map_holds_the_exact_write_units(report: Path) -> None:
    parser = HeatMapParser()
    parser.feed(report.read_text())
    # The burst key leads; its cells add up to its 18,000 write units, all within 20 s (2-3 buckets)
    first = next(iter(parser.rows))
    assert first == "event#42"
    assert sum(parser.rows[first]) == 18_000
    assert sum(1 for wcu in parser.rows[first] if wcu) <= 3
    assert max(parser.rows[first]) >= 8_000  # ≥ 800 WCU/s in a 10 s bucket
    assert parser.external == []  # self-contained


@pytest.mark.skipif(
    not shutil.which("chromium"), reason="headless Chromium is not installed (apt-get install chromium)"
)
def test_the_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'p'}",
            "--window-size=1400,900",
            f"--screenshot={shot}",
            report.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page with colour, not a blank one


def test_composite_keys_are_mapped_by_partition_key_whatever_the_order_of_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Given the composite-key sample with each record's Keys listing the sort key first
    import json
    import shutil as files

    folder = tmp_path / "events"
    (folder / "tables").mkdir(parents=True)
    files.copy(EVENTS / "tables" / "tenant-events.json", folder / "tables")
    event = json.loads((EVENTS / "composite-key.json").read_text())
    for record in event["Records"]:
        keys = record["dynamodb"]["Keys"]
        record["dynamodb"]["Keys"] = {"sk": keys["sk"], "tenant": keys["tenant"]}
    (folder / "composite-key.json").write_text(json.dumps(event))
    path = tmp_path / "report.html"
    # When replayed with a report
    assert main(["replay", str(folder / "composite-key.json"), "--report", str(path)]) == 0
    parser = HeatMapParser()
    parser.feed(path.read_text())
    # Then the heat map's rows are tenants (the handler's partition keys), never sort keys
    assert parser.rows and all(key.startswith("tenant#") for key in parser.rows), list(parser.rows)


def test_a_report_into_a_missing_folder_is_refused_before_replaying(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    target = tmp_path / "no-such-folder" / "report.html"
    assert main(["replay", str(EVENTS / "hot-key-burst.json.gz"), "--report", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().count("\n") == 0 and "--report" in captured.err and "does not exist" in captured.err
    assert "Replayed" not in captured.out
