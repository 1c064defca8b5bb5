"""One picture per key in the replay and its report: throttled keys (recorded Contributor Insights answers,
validated by botocore's Stubber against the service models) beside the writes the stream saw land."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

from hotkeys.cli.main import main

EVENTS = Path(__file__).resolve().parents[2] / "events"
RULE = "DynamoDBContributorInsights-PKT-tenant-events-1796000000000"


def _replay(args: list[str]) -> tuple[int, list[str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["replay", *args])
    return status, out.getvalue().splitlines()


def test_the_demo_sample_shows_attempted_vs_landed_after_the_verdict(aws: None, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    status, lines = _replay([str(EVENTS / "hot-key-burst.json.gz"), "--report", str(page)])
    assert status == 0
    title = next(i for i, line in enumerate(lines) if "Throttled keys beside their landed writes" in line)
    assert lines[0].startswith("1 hot key") and title > 1  # the verdict still comes first
    rows = [line for line in lines[title:] if "tickets" in line and "│" in line]
    cells = [[cell.strip() for cell in row.strip("│").split("│")] for row in rows]
    assert [(c[2], c[3], c[4]) for c in cells] == [
        ("venue#7", "none", "4,100"),
        ("event#42", "18,000", "2,310"),
        ("venue#7", "none", "1,250"),
    ]
    assert cells[0][5].startswith("throttled only") and cells[1][5].startswith("throttled and landed")
    text = page.read_text()
    section = text[text.index("id='throttles'") :]
    assert section.count("<tr class='hot'>") == 2 and "event#42</td><td>18,000</td><td>2,310</td>" in section


def _tenant_sample(tmp_path: Path, recorded: dict[str, Any]) -> Path:
    """The composite-key sample (tenant-events) in a folder of its own, with ``recorded`` as its insights."""
    shutil.copy(EVENTS / "composite-key.json", tmp_path / "composite-key.json")
    (tmp_path / "tables").mkdir()
    shutil.copy(EVENTS / "tables" / "tenant-events.json", tmp_path / "tables" / "tenant-events.json")
    (tmp_path / "insights").mkdir()
    (tmp_path / "insights" / "tenant-events.json").write_text(json.dumps(recorded))
    return tmp_path / "composite-key.json"


def _described(status: str = "ENABLED") -> dict[str, Any]:
    return {
        "TableName": "tenant-events",
        "ContributorInsightsStatus": status,
        "ContributorInsightsRuleList": [RULE] if status == "ENABLED" else [],
    }


def _report(value: Any) -> dict[str, Any]:
    return {
        "Contributors": [
            {
                "Keys": ["tenant#acme"],
                "ApproximateAggregateValue": 3.0,
                "Datapoints": [{"Timestamp": "2026-12-01T00:00:00Z", "ApproximateValue": value}],
            }
        ]
    }


def test_contributor_insights_off_is_one_line(aws: None, tmp_path: Path) -> None:
    sample = _tenant_sample(tmp_path, {"describe_contributor_insights": [_described("DISABLED")]})
    status, lines = _replay([str(sample)])
    assert status == 0
    said = [line for line in lines if line.startswith("Throttled keys")]
    assert said == ["Throttled keys: Contributor Insights is disabled on tenant-events."]


def test_a_recorded_answer_outside_the_service_model_is_refused_in_one_line(aws: None, tmp_path: Path) -> None:
    recorded = {"describe_contributor_insights": [_described()], "get_insight_rule_report": {RULE: _report("three")}}
    status, lines = _replay([str(_tenant_sample(tmp_path, recorded))])
    assert status == 0
    (said,) = [line for line in lines if line.startswith("Throttled keys")]
    assert "the recorded get_insight_rule_report answer does not match the service model" in said


def test_a_valid_recording_joins_the_composite_key_table(aws: None, tmp_path: Path) -> None:
    recorded = {"describe_contributor_insights": [_described()], "get_insight_rule_report": {RULE: _report(3.0)}}
    status, lines = _replay([str(_tenant_sample(tmp_path, recorded)), "--json"])
    assert status == 0
    rows = json.loads("\n".join(lines))["throttles"]["rows"]
    assert [(r["key"], r["landed_wcu"], r["throttled_requests"], r["status"]) for r in rows] == [
        ("tenant#acme", 60, 3, "throttled and landed")
    ]
