"""Two stacks in one account and region keep to themselves (issue #46 item 5): no alarm of one watches a
metric of the other's, the default stack keeps the namespace and dimension of every earlier release, and
another stack's functions write where its alarms and dashboard read.

Both stacks here watch the same existing table, the case where they come closest: then, and only then, they
share DynamoDB's own metrics of that table (``AWS/DynamoDB`` by ``TableName``), on which each stack's throttle
and unread-stream alarms fire together, as both watch it. Every other ``AWS/`` metric is per resource (a
function, a queue), and each stack's resources are its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import EXISTING_STREAM, synth_template, written_out

ROOT = Path(__file__).resolve().parents[2]
OTHER = "Orders-Staging"
WATCHING = {"tableName": "orders", "tableStreamArn": EXISTING_STREAM, "alertEmails": "oncall@example.com"}

Metric = tuple[str, str, str]  # namespace, metric name (or a Metrics Insights query), dimensions (JSON)


@pytest.fixture(scope="module")
def stacks() -> dict[str, dict[str, Any]]:
    """The default stack and another, each watching the same table."""
    return {name: synth_template({**WATCHING, "stackName": name}) for name in ("HotKeyDetector", OTHER)}


def _resolved(stack: str, value: Any) -> Any:
    """A template value with every reference to a resource written as that stack's resource (a Ref to the
    same logical id in two stacks names two resources); pseudo parameters stay as they are."""
    return written_out(
        value,
        lambda name: name if name.startswith("AWS::") else f"{stack}:{name}",
        lambda logical, attribute: f"{stack}:{logical}.{attribute}",
    )


def alarm_metrics(stack: str, template: dict[str, Any]) -> set[Metric]:
    """Every metric an alarm of ``template`` evaluates: a single metric's, each of a metric-math alarm's
    metrics, and each Metrics Insights query (its namespace from its FROM clause)."""
    found: set[Metric] = set()
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        properties = _resolved(stack, resource["Properties"])
        if "MetricName" in properties:
            found.add(_metric(properties))
        for query in properties.get("Metrics", []):
            if "MetricStat" in query:
                found.add(_metric(query["MetricStat"]["Metric"]))
            elif str(query.get("Expression", "")).lstrip().upper().startswith("SELECT"):
                namespace = re.search(r'FROM\s+(?:SCHEMA\(\s*)?"?([^",)\s]+)', query["Expression"])
                assert namespace, query
                found.add((namespace.group(1), query["Expression"], "[]"))
    return found


def _metric(properties: dict[str, Any]) -> Metric:
    dimensions = sorted((d["Name"], str(d["Value"])) for d in properties.get("Dimensions", []))
    return (str(properties["Namespace"]), str(properties["MetricName"]), json.dumps(dimensions))


def test_two_stacks_share_no_alarm_metric_but_the_watched_tables_own(stacks: dict[str, dict[str, Any]]) -> None:
    mine, other = (alarm_metrics(name, template) for name, template in stacks.items())
    # Each stack alarms on its own functions' metrics (the test compares something)
    assert {m for m in mine if m[0] == "HotKeyDetector"} and {m for m in other if m[0] == f"HotKeyDetector/{OTHER}"}
    shared = mine & other
    # Then the only metrics both stacks' alarms watch are DynamoDB's of the table both watch: none of the
    # functions' own, nor Lambda's or SQS's (per function and queue, each stack's own)
    assert shared, "both stacks watch orders: DynamoDB's metrics of orders are both stacks' (the test's premise)"
    for namespace, name, dimensions in shared:
        assert namespace == "AWS/DynamoDB", (namespace, name, dimensions)
        assert ("TableName", "orders") in [tuple(d) for d in json.loads(dimensions)] or "'orders'" in name
    # nor an alarm's name, where the stack gives one (the throttle alarms', by the stack's name)
    names = [
        {str(r["Properties"]["AlarmName"]) for r in template["Resources"].values() if "AlarmName" in r["Properties"]}
        for template in stacks.values()
    ]
    assert names[0] and names[1] and not names[0] & names[1]


def test_the_default_stack_keeps_the_namespace_and_dimension_of_every_earlier_release(
    stacks: dict[str, dict[str, Any]],
) -> None:
    template = stacks["HotKeyDetector"]
    ours = [m for m in alarm_metrics("HotKeyDetector", template) if not m[0].startswith("AWS/")]
    assert {m[1] for m in ours} >= {"RecordsWithoutImages", "StatesDiscarded", "JudgeLooksFailed"}
    for namespace, name, dimensions in ours:
        assert (namespace, dimensions) == ("HotKeyDetector", '[["service", "hotkey-detector"]]'), name
    for function in _functions(template):
        assert function["POWERTOOLS_METRICS_NAMESPACE"] == "HotKeyDetector"
    assert "SEARCH('{HotKeyDetector,service} IndexWriteUnits', 'Sum', 60)" in _dashboard(template)


def test_another_stacks_functions_write_where_its_alarms_and_dashboard_read(
    stacks: dict[str, dict[str, Any]],
) -> None:
    template = stacks[OTHER]
    ours = [m for m in alarm_metrics(OTHER, template) if not m[0].startswith("AWS/")]
    assert ours
    # Given the environment the stack gives every function of the project (the consumer, the judge, ...)
    environments = _functions(template)
    assert {env["POWERTOOLS_METRICS_NAMESPACE"] for env in environments} == {f"HotKeyDetector/{OTHER}"}
    (consumer,) = [env for env in environments if "ARCHIVE_BUCKET_NAME" in env]
    # When the function's package writes a metric in a process with that environment
    line = _emitted(consumer)
    (directive,) = line["_aws"]["CloudWatchMetrics"]
    dimensions = json.dumps(sorted((name, line[name]) for name in directive["Dimensions"][0]))
    # Then every alarm on the stack's own metrics reads that namespace and dimension
    for namespace, name, alarm_dimensions in ours:
        assert (namespace, alarm_dimensions) == (directive["Namespace"], dimensions), name
    # and the dashboard searches that namespace (quoted: it holds a '/' and a '-'), not the default stack's
    dashboard = _dashboard(template)
    assert f"SEARCH('{{\"HotKeyDetector/{OTHER}\",service}} IndexWriteUnits', 'Sum', 60)" in dashboard
    assert "{HotKeyDetector,service}" not in dashboard


def _functions(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The environment of each of the project's functions (those the stack gives a metrics namespace)."""
    found = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Lambda::Function":
            variables = resource["Properties"].get("Environment", {}).get("Variables", {})
            if "POWERTOOLS_SERVICE_NAME" in variables:
                found.append(variables)
    assert found
    return found


def _dashboard(template: dict[str, Any]) -> str:
    (dashboard,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    return json.dumps(dashboard["Properties"]["DashboardBody"]).replace("\\", "")


def _emitted(environment: dict[str, Any]) -> dict[str, Any]:
    """The EMF line the function package writes for one metric, in a fresh process with ``environment``'s
    Powertools variables (the module reads them when it is imported, as in Lambda)."""
    script = (
        "import json; from hotkeys.detector.observability import metrics; "
        "metrics.add_metric(name='RecordsCounted', unit='Count', value=1); "
        "print(json.dumps(metrics.serialize_metric_set()))"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("POWERTOOLS_")},
        **{k: str(v) for k, v in environment.items() if k.startswith("POWERTOOLS_")},
        "PYTHONPATH": str(ROOT / "functions"),
    }
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return line


def test_a_stack_named_after_the_throttle_hooks_namespace_is_refused() -> None:
    from infra.app_factory import build_app
    from infra.option_schema import ContextError

    # (the hook's metrics are the application's: HotKeyDetector/Throttles)
    with pytest.raises(ContextError, match="namespace would be the throttle hook's"):
        build_app({"stackName": "Throttles"})
