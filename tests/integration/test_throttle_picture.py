"""One picture per key in the replay and its report: throttled keys (recorded Contributor Insights answers,
validated by botocore's Stubber against the service models) beside the writes the stream saw land."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from rich.console import Console

from hotkeys.cli.main import main
from hotkeys.cli.top import show_throttles
from hotkeys.detector.consumer.snapshots import WindowFigures
from hotkeys.detector.domain.summary import Entry, Summary

EVENTS = Path(__file__).resolve().parents[2] / "events"
RULE = "DynamoDBContributorInsights-PKT-tenant-events-1796000000000"
T0 = 1_796_083_200  # 2026-12-01T00:00:00Z


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
    assert said == [
        "Throttled keys: Contributor Insights is disabled on tenant-events; to name its throttled keys: "
        "aws dynamodb update-contributor-insights --table-name tenant-events "
        "--contributor-insights-action ENABLE --contributor-insights-mode THROTTLED_KEYS."
    ]


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


def test_top_on_an_endpoint_without_contributor_insights_says_so_in_one_line(
    stats_table_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from hotkeys.cli.replay import run_replay
    from hotkeys.emulator.local import LocalResources

    run_replay([str(EVENTS / "composite-key.json")], LocalResources(stats_table_name))
    assert main(["top", "--stats-table", stats_table_name, "--last", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if "Throttled keys" in line] == [
        "Throttled keys: tenant-events: the endpoint does not implement Contributor Insights."
    ]


class StubbedAws:
    """``AwsClients``' one method, on clients whose every call a Stubber answers and validates."""

    def __init__(self) -> None:
        session = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x", region_name="us-east-1")
        self.clients = {name: session.client(name) for name in ("dynamodb", "cloudwatch")}

    def client(self, name: str) -> Any:
        return self.clients[name]


def _window(index: str | None, keys: dict[str, int]) -> WindowFigures:
    entries = {key: Entry(1, wcu, T0, wcu, [T0], [wcu]) for key, wcu in keys.items()}
    merged = Summary(entries, pruned=0, writes=len(keys), wcu=sum(keys.values()))
    return WindowFigures("payments", T0, 60, merged, index=index)


def test_top_reads_the_table_and_every_index_of_it(capsys: pytest.CaptureFixture[str]) -> None:
    aws = StubbedAws()
    table_rule = "DynamoDBContributorInsights-PKT-payments-1796000000000"
    index_rule = "DynamoDBContributorInsights-PKT-payments-by-status-1796000000000"
    at = datetime.fromtimestamp(T0, tz=UTC)
    with Stubber(aws.clients["dynamodb"]) as ddb, Stubber(aws.clients["cloudwatch"]) as cw:
        ddb.add_response(
            "describe_table",
            {"Table": {"TableName": "payments", "GlobalSecondaryIndexes": [{"IndexName": "by-status"}]}},
            {"TableName": "payments"},
        )
        for index, rule, key, value in (
            (None, table_rule, "payment#1", 2.0),
            ("by-status", index_rule, "PENDING", 640.0),
        ):
            ddb.add_response(
                "describe_contributor_insights",
                {
                    "TableName": "payments",
                    "ContributorInsightsStatus": "ENABLED",
                    "ContributorInsightsRuleList": [rule],
                },
                {"TableName": "payments", **({"IndexName": index} if index else {})},
            )
            cw.add_response(
                "get_insight_rule_report",
                {
                    "Contributors": [
                        {
                            "Keys": [key],
                            "ApproximateAggregateValue": value,
                            "Datapoints": [{"Timestamp": at, "ApproximateValue": value}],
                        }
                    ]
                },
            )
        show_throttles(Console(width=200), aws, [_window(None, {"payment#1": 4})])
        ddb.assert_no_pending_responses()
        cw.assert_no_pending_responses()
    out = capsys.readouterr().out
    assert "PENDING" in out and "payments index by-status" in out and "throttled only" in out
    assert "payment#1" in out and "throttled and landed" in out
