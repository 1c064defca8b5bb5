"""The replay's HTML report: a key-by-time heat map with exact figures, viewable offline."""

from __future__ import annotations

import contextlib
import html
import io
import itertools
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import main
from hotkeys.cli.report import Panel, Row, colour_at, plotly_script_name, render, scale_position, write
from hotkeys.detector.config import Settings

EVENTS = Path(__file__).resolve().parents[2] / "events"


class ReportParser(HTMLParser):
    """The report's exact figures (the heat-data JSON), what it loads from elsewhere, and where its parts are."""

    def __init__(self) -> None:
        super().__init__()
        self.panels: list[dict[str, Any]] = []
        self.external: list[tuple[str, str]] = []
        self.order: list[str] = []  # ids and panels' tables, in document order
        self.verdict: list[str] = []  # the verdict section's text, one entry per paragraph or item
        self._in_data = False
        self._in_verdict = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self._in_data = tag == "script" and values.get("id") == "heat-data"
        for name in ("src", "href"):
            if values.get(name):
                self.external.append((tag, str(values[name])))
        if values.get("id"):
            self.order.append(str(values["id"]))
        if values.get("class") == "panel":
            self.order.append(f"panel:{values.get('data-table')}")
        if values.get("id") == "verdict" or self._in_verdict:
            self._in_verdict += 1
            if tag in ("p", "li"):
                self.verdict.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._in_verdict:
            self._in_verdict -= 1

    def handle_data(self, data: str) -> None:
        if self._in_data:
            self.panels = json.loads(data)
            self._in_data = False
        if self._in_verdict and self.verdict:
            self.verdict[-1] += data

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


SAMPLES = ["hot-key-burst.json.gz", "gsi-back-pressure.json.gz", "share-small-table.json.gz"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The report of three samples (tables whose names' order is not their heat's), and what replay printed."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["replay", *(str(EVENTS / s) for s in SAMPLES), "--report", str(path)]) == 0
    return path, printed.getvalue()


@pytest.fixture(scope="module")
def report(replayed: tuple[Path, str]) -> Path:
    return replayed[0]


def test_the_heat_map_holds_the_exact_write_units(report: Path) -> None:
    parser = parsed(report)
    # One panel per table, on one time axis
    assert sorted(panel["table"] for panel in parser.panels) == ["payments", "profiles", "tickets"]
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
    # Nothing is fetched from elsewhere: one script, beside the report, relative
    assert parser.external == [("script", plotly_script_name())]
    assert (report.parent / plotly_script_name()).is_file()


def test_the_report_leads_with_the_verdict_and_the_alerts(replayed: tuple[Path, str]) -> None:
    report, printed = replayed
    parser = parsed(report)
    # The verdict, then the alerts, before any heat map or the top keys
    first_panel = next(i for i, part in enumerate(parser.order) if part.startswith("panel:"))
    assert parser.order.index("verdict") < parser.order.index("alerts") < first_panel < parser.order.index("top")
    # And the verdict is the replay's own, word for word: each of its lines is one the terminal printed
    said = [line.strip() for line in printed.splitlines()]
    assert "hot key" in parser.verdict[0]
    assert len(parser.verdict) > 3 and all(line in said for line in parser.verdict), parser.verdict
    assert any(line.startswith("tickets/event#42 ") for line in parser.verdict)


def test_the_report_lists_share_alerts_apart_from_hot_keys(replayed: tuple[Path, str]) -> None:
    import re

    report, _printed = replayed
    page = report.read_text(encoding="utf-8")

    def subjects(anchor: str) -> list[str]:
        found = re.search(f"<table class='top' id='{anchor}'>(.*?)</table>", page, re.S)
        assert found is not None, anchor
        return [html.unescape(cell) for cell in re.findall(r"<td class='k'>(\[[^<]*)</td>", found.group(1))]

    # Given the burst, the index back-pressure and the celebrity of a small table replayed together
    limit, share = subjects("alerts-partition-limit"), subjects("alerts-share")
    # Then the partition-limit incidents are one table, the share-of-table incidents another (each in the
    # order the messages went out)
    assert sorted(s for s in limit if s.startswith("[hot key]")) == [
        "[hot key] payments index by-status: AUTHORIZED at 850 WCU/s (85% of partition limit)",
        "[hot key] payments index by-status: PENDING at 840 WCU/s (84% of partition limit)",
        "[hot key] tickets: event#42 at 895 WCU/s (89% of partition limit)",
    ]
    assert sorted(s for s in share if s.startswith("[heavy share]")) == [
        "[heavy share] profiles: celebrity#1 14% of table writes (16 WCU/s)",
        "[heavy share] tickets: event#42 98% of table writes (900 WCU/s)",
    ]
    assert all("of table writes" in s for s in share if s.startswith("[resolved]"))
    # And the verdict counts three hot keys; the celebrity is a share of its table, not one of them
    verdict = parsed(report).verdict
    assert verdict[0] == "3 hot keys (at or near the partition limit; DynamoDB throttled 1 of them):"
    assert not any(line.startswith("profiles/celebrity#1") for line in verdict[1:4])
    assert any(line.startswith("profiles/celebrity#1 took 14% of the table's writes") for line in verdict[4:])


def test_tables_are_ordered_hottest_first(report: Path) -> None:
    parser = parsed(report)
    tables = [panel["table"] for panel in parser.panels]
    # Ordered by the hottest key's peak bucket as a share of the limit, whatever the names' order
    shares = [max(max(row["wcu"]) for row in panel["rows"]) / 10 / 1000 for panel in parser.panels]
    assert shares == sorted(shares, reverse=True) and shares[0] >= 0.8 > shares[-1]
    assert tables[-1] == "profiles" and tables != sorted(tables)
    # The picture follows the same order as the figures
    assert [part.removeprefix("panel:") for part in parser.order if part.startswith("panel:")] == tables


def _distance(one: str, other: str) -> float:
    return sum((a - b) ** 2 for a, b in zip(_rgb(one), _rgb(other), strict=True)) ** 0.5


def _rgb(colour: str) -> list[int]:
    return [int(colour[i : i + 2], 16) for i in (1, 3, 5)]


def test_the_colour_scale_is_linear_in_the_share_of_the_limit_with_a_step_at_the_threshold() -> None:
    assert scale_position(1000, 1000) == 1.0 == scale_position(5000, 1000)
    assert scale_position(0, 1000) == 0.0
    assert scale_position(300, 1000) == pytest.approx(0.3) and scale_position(900, 1000) == pytest.approx(0.9)
    # 30% and 90% of the limit are far apart at a glance (the old log scale put them 55 apart, both dark red)
    thirty, ninety = colour_at(scale_position(300, 1000), 0.8), colour_at(scale_position(900, 1000), 0.8)
    assert _distance(thirty, ninety) > 150, (thirty, ninety)
    assert sum(_rgb(thirty)) > 500 and sum(_rgb(ninety)) < 300  # pale against dark
    # The alert threshold is a step: just below it and at it differ more than 30% and 60% do
    assert _distance(colour_at(0.799, 0.8), colour_at(0.8, 0.8)) > _distance(colour_at(0.3, 0.8), colour_at(0.6, 0.8))
    assert _distance(colour_at(0.499, 0.5), colour_at(0.5, 0.5)) > 100  # the step follows the threshold
    assert colour_at(0.0, 0.8) == "#fff7bc" and colour_at(1.0, 0.8) == "#67000d" == colour_at(1.0, 1.0)


def test_over_the_limit_has_colours_of_its_own_and_a_share_keeps_its_colour_whatever_the_scale() -> None:
    from hotkeys.cli.report import scale_top

    # A panel whose hottest cell is at 131% of the limit gets a scale that runs past it
    top = scale_top(1.31)
    assert top > 1.31 and scale_top(1.0) == 1.0
    at_limit, over = (
        colour_at(scale_position(1000, 1000, top), 0.8, top),
        colour_at(scale_position(1310, 1000, top), 0.8, top),
    )
    # 131% does not look like 100% (issue #36), and each share below the limit keeps the colour it has
    # on a scale that stops at the limit
    assert _distance(at_limit, over) > 40, (at_limit, over)
    for share in (0.0, 0.3, 0.79, 0.8, 0.9, 1.0):
        assert colour_at(scale_position(share * 1000, 1000, top), 0.8, top) == colour_at(share, 0.8), share


def test_the_reports_labels_say_one_thing_each(tmp_path: Path) -> None:
    alert = {
        "table": "t",
        "key": "k",
        "status": "firing",
        "reason": "partition_limit",
        "subject": "[hot key] t: k at 882 WCU/s",
        "window_start": "2026-12-01T00:00:00Z",
        "wcu_per_second": 882.5,
        "percent_of_limit": 88.2,
        "share": 0.975,
    }
    row = {
        "table": "t",
        "index": None,
        "key": "k",
        "window_start": "2026-12-01T00:00:00Z",
        "window_seconds": 60,
        "wcu_per_second": 900.0,
        "at_most_wcu_per_second": 900.0,
        "share": 0.98,
        "writes": 1,
        "wcu": 1,
        "error_bound": 0,
    }
    page = render({"alerts": [alert], "top": [row]}, [], Settings("s"), verdict=["Verdict."])
    heads = {
        table: re.findall(r"<th[^>]*>([^<]+)</th>", re.search(rf"id='{table}'>(.*?)</thead>", page, re.S)[1])
        for table in ("alerts-partition-limit", "top")
    }
    # The alert's figures (when it was sent) and the window's stored figures never share a label
    assert not set(heads["alerts-partition-limit"]) & set(heads["top"]) - {"window", "key", "table"}
    assert "WCU/s when sent" in heads["alerts-partition-limit"]
    # and the error bound is named as the CLI names it
    assert "up to +" in heads["top"] and not any("±" in head for head in heads["top"])


def test_a_report_is_small_and_shares_one_script_per_folder(tmp_path: Path) -> None:
    # Given two replays of a 6-record file reported into one folder
    for name in ("one.html", "two.html"):
        assert main(["replay", str(EVENTS / "poison-record.json"), "--report", str(tmp_path / name)]) == 0
    # Then each page is small (it was ~4.8 MB with plotly.js inlined) and the folder holds plotly.js once
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["one.html", "two.html", plotly_script_name()])
    assert all((tmp_path / name).stat().st_size < 50_000 for name in ("one.html", "two.html"))
    from plotly.offline import get_plotlyjs

    script = tmp_path / plotly_script_name()
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    # And a damaged script (an interrupted copy, an edit) is replaced by the next report
    script.write_text("truncated", encoding="utf-8")
    write(tmp_path / "three.html", "<!doctype html>")
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    assert not [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")]


BROWSER = shutil.which("chromium")
BROWSER_SKIP = (
    "headless Chromium is not installed: `make test` installs Debian's chromium when it runs as root with apt-get; "
    "otherwise apt-get install chromium"
)


@pytest.mark.skipif(BROWSER is None, reason=BROWSER_SKIP)
def test_the_report_renders_offline_in_headless_chromium_hottest_first_with_the_hot_key_dark_at_its_peak(
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
        # Given the report opened from disk with every request but a local file's refused (offline)
        requested = _offline(page)
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
        tops = page.evaluate(TOPS)
        missing_script_shown = page.locator("#no-plotly").is_visible()
        page_shot = tmp_path / "page.png"
        page.screenshot(path=str(page_shot), full_page=True)
        browser.close()
    # Then plotly.js came from the one script beside the report, and nothing else was asked for
    assert requested == [report.as_uri(), (report.parent / plotly_script_name()).as_uri()]
    assert not missing_script_shown
    # And on screen, the verdict and the alerts come first, then the tables hottest first (the figures' order)
    assert tops["verdict"] < tops["alerts"] < min(y for _table, y in tops["panels"])
    on_screen = [table for table, _y in sorted(tops["panels"], key=lambda p: p[1])]
    assert on_screen == [p["table"] for p in parser.panels] and on_screen[-1] == "profiles"
    peaks = {p["table"]: max(max(row["wcu"]) for row in p["rows"]) for p in parser.panels}
    assert [peaks[table] for table in on_screen] == sorted(peaks.values(), reverse=True)
    image = Image.open(shot).convert("RGB")
    # And the page is a picture of the expected size, not a blank one
    width, height = Image.open(page_shot).size
    assert width == 1400 and height > 1500
    assert image.size[0] > 1000 and image.size[1] > 30 * 20
    # And the burst key's cell at its peak has the scale's colour for 900 WCU/s (dark red), a cold cell a pale one
    for (x, y), wcu in zip(where, [max(burst), cold_row["wcu"][cold_bucket]], strict=True):
        expected = colour_at(scale_position(wcu / 10, 1000), 0.8)
        assert _close(image.getpixel((round(x), round(y))), expected), (
            wcu,
            image.getpixel((round(x), round(y))),
            expected,
        )
    assert sum(image.getpixel((round(where[0][0]), round(where[0][1])))) < 300  # dark
    assert sum(image.getpixel((round(where[1][0]), round(where[1][1])))) > 600  # pale


BUCKETS = [1_796_083_200 + 10 * i for i in range(6)]


def _side_by_side(tmp_path: Path, first: tuple[str, int], second: tuple[str, int], then: Any = None) -> Any:
    """Two keys of one table in Chromium, the first writing ``first[1]`` WCU per bucket in the first three
    buckets, the second ``second[1]`` in the last three: each one's cell colour, and what ``then(page,
    report)`` returns (run before the browser closes)."""
    from PIL import Image
    from playwright.sync_api import sync_playwright

    rows = [Row(None, first[0], [first[1]] * 3 + [0] * 3), Row(None, second[0], [0] * 3 + [second[1]] * 3)]
    path = tmp_path / "report.html"
    write(
        path, render({"alerts": [], "top": []}, [Panel("t", 10, BUCKETS, rows, 2)], Settings("s"), verdict=["Verdict."])
    )
    shot = tmp_path / "t.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=BROWSER, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        _offline(page)
        page.goto(path.as_uri())
        page.wait_for_selector("#heat-t .main-svg")
        page.locator("#heat-t").screenshot(path=str(shot))
        cells = [[BUCKETS[1], first[0]], [BUCKETS[4], second[0]]]
        where = page.evaluate(LOCATE_CELLS, {"id": "heat-t", "cells": cells})
        found = then(page, path) if then is not None else None
        browser.close()
    image = Image.open(shot).convert("RGB")
    return [image.getpixel((round(x), round(y))) for x, y in where], found


@pytest.mark.skipif(BROWSER is None, reason=BROWSER_SKIP)
def test_in_chromium_30_and_90_percent_of_the_limit_look_different_and_a_page_without_its_script_says_so(
    tmp_path: Path,
) -> None:
    def moved(page: Any, report: Path) -> tuple[bool, str, str]:
        # the same page moved without its script
        alone = tmp_path / "moved" / "report.html"
        alone.parent.mkdir()
        shutil.copy(report, alone)
        page.goto(alone.as_uri())
        missing = page.locator("#no-plotly")
        return missing.is_visible(), missing.inner_text(), page.locator("#verdict").inner_text()

    # Given a report with a key at 90% of the limit and one at 30%, side by side in time
    (hot, warm), (missing_shown, missing_text, verdict_shown) = _side_by_side(
        tmp_path, ("at-90", 9_000), ("at-30", 3_000), moved
    )
    # Then each cell shows the scale's colour, and the two are far apart: dark red against pale yellow
    assert _close(hot, colour_at(0.9, 0.8)) and _close(warm, colour_at(0.3, 0.8)), (hot, warm)
    assert sum((a - b) ** 2 for a, b in zip(hot, warm, strict=True)) ** 0.5 > 150
    # And a page moved without its script still shows its verdict and says what is missing
    assert missing_shown and plotly_script_name() in missing_text
    assert verdict_shown == "Verdict."


@pytest.mark.skipif(BROWSER is None, reason=BROWSER_SKIP)
def test_in_chromium_131_percent_of_the_limit_does_not_look_like_100(tmp_path: Path) -> None:
    from hotkeys.cli.report import scale_top

    # Given a key at the limit and one at 131% of it, side by side in time
    (limit, over), _ = _side_by_side(tmp_path, ("at-100", 10_000), ("at-131", 13_100))
    # Then each shows the scale's colour: the limit's dark red, and past it another colour
    top = scale_top(1.31)
    assert _close(limit, colour_at(1.0, 0.8)) and _close(over, colour_at(1.31 / top, 0.8, top)), (limit, over)
    assert sum((a - b) ** 2 for a, b in zip(limit, over, strict=True)) ** 0.5 > 60


def test_over_the_limit_the_scales_top_says_it_holds_every_share_above_it() -> None:
    # Given a key at 250% of the limit (the scale's colours stop at OVER_LIMIT times it)
    rows = [Row(None, "at-250", [25_000] * 3)]
    page = render({"alerts": [], "top": []}, [Panel("t", 10, BUCKETS[:3], rows, 1)], Settings("s"), verdict=["V."])
    # Then the colour bar's top tick says the shares above it share its colour
    assert "200% (2,000 WCU\\u002fs) and more" in page  # (as plotly writes its JSON)
    # and a table within the limit has no such tick
    within = render(
        {"alerts": [], "top": []},
        [Panel("t", 10, BUCKETS[:3], [Row(None, "at-90", [9_000] * 3)], 1)],
        Settings("s"),
        verdict=["V."],
    )
    assert "and more" not in within


def _offline(page: Any) -> list[str]:
    """Refuse every request but a local file's (no network); returns the list of what was asked for."""
    requested: list[str] = []

    def route(route: Any) -> None:
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", route)
    return requested


TOPS = """() => {
  const top = (e) => e.getBoundingClientRect().top + window.scrollY;
  return {
    verdict: top(document.getElementById('verdict')),
    alerts: top(document.getElementById('alerts')),
    panels: [...document.querySelectorAll('.panel')].map((e) => [e.dataset.table, top(e)]),
  };
}"""


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


def test_a_report_into_a_missing_folder_makes_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # (the issue's own example: `--report rep/m1.html` with rep/ not made yet)
    target = tmp_path / "rep" / "runs" / "report.html"
    assert main(["replay", str(EVENTS / "hot-key-burst.json.gz"), "--report", str(target)]) == 0
    assert target.is_file() and (target.parent / plotly_script_name()).is_file()


def test_a_report_whose_folder_cannot_be_made_is_refused_before_replaying(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # (a file where the folder would be)
    (tmp_path / "rep").write_text("not a folder")
    target = tmp_path / "rep" / "report.html"
    assert main(["replay", str(EVENTS / "hot-key-burst.json.gz"), "--report", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip().count("\n") == 0 and "cannot make the folder" in captured.err
    assert "Replayed" not in captured.out


def test_the_report_names_its_rate_columns_as_the_terminal_table_does() -> None:
    import re

    from hotkeys.cli.common import top_table

    page = render({"alerts": [], "top": []}, [], Settings("s"), verdict=[])
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page[page.index("id='top'") :])
    terminal = [str(column.header) for column in top_table([], Settings("s"), "t").columns]

    def rates(names: list[str]) -> list[str]:
        return [name for name in names if "WCU/s" in name or "%" in name]

    assert rates(heads) == rates(terminal) == ["WCU/s", "% of limit"]


def test_the_heat_maps_columns_are_the_burst_buckets_the_stored_figures_were_counted_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a replay whose burst buckets are 20 seconds long (the default is 10)
    path = tmp_path / "report.html"
    sample = str(EVENTS / "hot-key-burst.json.gz")
    assert main(["replay", sample, "--alert-min-span-seconds", "20", "--report", str(path), "--json"]) == 0
    stored = json.loads(capsys.readouterr().out)
    # Then the heat map's columns are 20 seconds, and the page says so
    (panel,) = parsed(path).panels
    assert panel["bucket_seconds"] == 20
    assert all(b - a == 20 for a, b in itertools.pairwise(panel["buckets"]))
    assert "second in 20-second buckets" in path.read_text(encoding="utf-8")
    # and the burst key's heaviest column is one stored bucket (13,500 units: 675 WCU/s), while its rate
    # is the burst's own, 18,000 units over its 20 s, which the bucket boundary cut in two
    heat = parsed(path).rows("tickets")["event#42"]
    rates = [row["wcu_per_second"] for row in stored["top"] if row["key"] == "event#42"]
    assert max(heat) == 13_500 and max(rates) == 900.0 > max(heat) / 20
