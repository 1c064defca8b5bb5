"""The replay's HTML report: a key-by-time heat map with exact figures, viewable offline."""

from __future__ import annotations

import itertools
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import main
from hotkeys.cli.report import colour_at, scale_position

EVENTS = Path(__file__).resolve().parents[2] / "events"


class ReportParser(HTMLParser):
    """The report's exact figures (the heat-data JSON) and anything it would fetch from elsewhere."""

    def __init__(self) -> None:
        super().__init__()
        self.panels: list[dict[str, Any]] = []
        self.external: list[str] = []
        self._in_data = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self._in_data = tag == "script" and values.get("id") == "heat-data"
        if values.get("src") or str(values.get("href", "")).startswith("http"):
            self.external.append(tag)

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.panels = json.loads(data)
            self._in_data = False

    def rows(self, table: str | None = None) -> dict[str, list[int]]:
        return {
            (row["key"] if row["index"] is None else f"[{row['index']}] {row['key']}"): row["wcu"]
            for panel in self.panels
            if table is None or panel["table"] == table
            for row in panel["rows"]
        }


def parsed(path: Path) -> ReportParser:
    parser = ReportParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    samples = ["hot-key-burst.json.gz", "gsi-back-pressure.json.gz"]
    assert main(["replay", *(str(EVENTS / s) for s in samples), "--report", str(path)]) == 0
    return path


def test_the_heat_map_holds_the_exact_write_units(report: Path) -> None:
    parser = parsed(report)
    # One panel per table, on one time axis
    assert [panel["table"] for panel in parser.panels] == ["payments", "tickets"]
    assert len({tuple(panel["buckets"]) for panel in parser.panels}) == 1
    buckets = parser.panels[0]["buckets"]
    assert all(b - a == 10 for a, b in itertools.pairwise(buckets))  # an even axis
    # The burst key leads its table (ordered by peak); its cells add up to its 18,000 write units
    tickets = parser.rows("tickets")
    first = next(iter(tickets))
    assert first == "event#42"
    assert sum(tickets[first]) == 18_000
    assert sum(1 for wcu in tickets[first] if wcu) <= 3
    assert max(tickets[first]) >= 8_000  # ≥ 800 WCU/s in a 10 s bucket
    peaks = [max(wcu) for wcu in tickets.values()]
    assert peaks == sorted(peaks, reverse=True)
    # Index partitions are rows of their table's panel; "N of M keys shown"
    assert next(iter(parser.rows("payments"))).startswith("[by-status] ")
    tickets_panel = next(p for p in parser.panels if p["table"] == "tickets")
    assert len(tickets_panel["rows"]) == 30 < tickets_panel["total_keys"]
    assert f"tickets: 30 of {tickets_panel['total_keys']:,} keys shown" in report.read_text(encoding="utf-8")
    assert parser.external == []  # self-contained: plotly.js is inlined


def test_the_colour_scale_is_logarithmic_between_a_ten_thousandth_of_the_limit_and_the_limit() -> None:
    assert scale_position(1000, 1000) == 1.0 == scale_position(5000, 1000)
    assert scale_position(0.1, 1000) == 0.0
    assert scale_position(1, 1000) == pytest.approx(0.25)
    assert scale_position(50, 1000) == pytest.approx(0.6747, abs=1e-3)
    # 0.1% and 5% of the limit are 0.42 of the scale apart (a linear scale put them 0.05 apart)
    assert colour_at(scale_position(1, 1000)) != colour_at(scale_position(50, 1000))
    assert colour_at(0.0) == "#fff7bc" and colour_at(1.0) == "#7f0000"


BROWSER = shutil.which("chromium")
BROWSER_SKIP = (
    "headless Chromium is not installed: `make test` installs Debian's chromium when it runs as root with apt-get; "
    "otherwise apt-get install chromium"
)


@pytest.mark.skipif(BROWSER is None, reason=BROWSER_SKIP)
def test_the_report_renders_in_headless_chromium_with_the_hot_key_dark_at_its_peak(
    report: Path, tmp_path: Path
) -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    parser = parsed(report)
    tickets = next(panel for panel in parser.panels if panel["table"] == "tickets")
    burst = next(row for row in tickets["rows"] if row["key"] == "event#42")["wcu"]
    cold_row = tickets["rows"][-1]
    peak_bucket = burst.index(max(burst))
    cold_bucket = next(i for i, wcu in enumerate(cold_row["wcu"]) if wcu)
    shot = tmp_path / "tickets.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=BROWSER, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        # Given the report opened from disk (no network: everything is inlined)
        page.goto(report.as_uri())
        page.wait_for_selector("#heat-tickets .main-svg")
        # When the tickets panel is captured, and its cells located through plotly's own axes
        panel = page.locator("#heat-tickets")
        panel.screenshot(path=str(shot))
        where = page.evaluate(
            LOCATE_CELLS,
            {
                "id": "heat-tickets",
                "cells": [
                    [tickets["buckets"][peak_bucket], "event#42"],
                    [tickets["buckets"][cold_bucket], cold_row["key"]],
                ],
            },
        )
        page_shot = tmp_path / "page.png"
        page.screenshot(path=str(page_shot), full_page=True)
        browser.close()
    image = Image.open(shot).convert("RGB")
    # Then the page is a picture of the expected size, not a blank one
    width, height = Image.open(page_shot).size
    assert width == 1400 and height > 1500
    assert image.size[0] > 1000 and image.size[1] > 30 * 20
    # And the burst key's cell at its peak has the scale's colour for 900 WCU/s (dark red), a cold cell a pale one
    for (x, y), wcu in zip(where, [max(burst), cold_row["wcu"][cold_bucket]], strict=True):
        expected = colour_at(scale_position(wcu / 10, 1000))
        assert _close(image.getpixel((round(x), round(y))), expected), (
            wcu,
            image.getpixel((round(x), round(y))),
            expected,
        )
    assert sum(image.getpixel((round(where[0][0]), round(where[0][1])))) < 300  # dark
    assert sum(image.getpixel((round(where[1][0]), round(where[1][1])))) > 600  # pale


CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# A point inside each cell, left of its centre (the alert marker sits on the centre), in the panel's pixels.
LOCATE_CELLS = """({id, cells}) => {
  const gd = document.getElementById(id);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
  const box = gd.getBoundingClientRect(), panel = gd.parentElement.getBoundingClientRect();
  const step = Math.abs(xa.d2p(10000) - xa.d2p(0));
  return cells.map(([epoch, key]) => {
    const label = ya._categories.find((c) => c === key || c.endsWith('] ' + key));
    return [xa._offset + xa.d2p(epoch * 1000) - step * 0.3 + box.left - panel.left,
            ya._offset + ya.d2p(label) + box.top - panel.top];
  });
}"""


def _close(pixel: tuple[int, int, int], colour: str, tolerance: int = 14) -> bool:
    expected = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, expected, strict=True))


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
    rows = parsed(path).rows()
    # Then the heat map's rows are tenants (the handler's partition keys), never sort keys
    assert rows and all(key.startswith("tenant#") for key in rows), list(rows)


def test_a_report_into_a_missing_folder_is_refused_before_replaying(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    target = tmp_path / "no-such-folder" / "report.html"
    assert main(["replay", str(EVENTS / "hot-key-burst.json.gz"), "--report", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().count("\n") == 0 and "--report" in captured.err and "does not exist" in captured.err
    assert "Replayed" not in captured.out
