"""The Lambda entry point end to end: real event files, real moto table, the documented response."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import boto3
import pytest

from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import ConfigError
from hotkeys.detector.consumer.pipeline import NotAStreamEvent
from hotkeys.detector.consumer.state import STATE_VERSION
from hotkeys.detector.handlers.app import build_handler, container_from
from hotkeys.emulator.local import create_stats_table
from tests.conftest import load_event


@pytest.fixture
def lambda_env(stats_table_name: str) -> dict[str, str]:
    return {"STATS_TABLE_NAME": stats_table_name, "TTL_ATTRIBUTE": "expireAt"}


def invoke(event: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    """The decorated handler in a fresh container with this environment (as Lambda starts one)."""
    handler = build_handler(lambda: container_from(environment, AwsClients()))
    return handler(event, FakeLambdaContext())  # type: ignore[arg-type]


def test_a_plain_event_file_returns_the_partial_batch_response(lambda_env: dict[str, str]) -> None:
    # Given the poison-record sample (no tumbling-window fields, as `sam local invoke -e` sends it)
    event = load_event("poison-record.json")
    # When the handler runs
    response = invoke(event, lambda_env)
    # Then exactly the poison record is reported, and no state is returned (no tumbling window)
    poison = event["Records"][3]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": poison}]}


def test_a_tumbling_window_invocation_returns_its_state(lambda_env: dict[str, str]) -> None:
    event = load_event("composite-key.json")
    event.update(
        {
            "shardId": "shardId-1",
            "state": {},
            "isFinalInvokeForWindow": False,
            "window": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-01T00:01:00Z"},
        }
    )
    # The composite table has no description on this backend: the partition key is given instead
    response = invoke(event, {**lambda_env, "PARTITION_KEY_ATTRIBUTE": "tenant"})
    assert response["batchItemFailures"] == []
    assert isinstance(response["state"], dict) and response["state"]["v"] == STATE_VERSION
    json.dumps(response)  # the runtime must be able to serialize it


def test_a_missing_setting_is_named(aws: None) -> None:
    with pytest.raises(ConfigError, match="STATS_TABLE_NAME"):
        invoke(load_event("poison-record.json"), {})


@pytest.mark.parametrize("name,value", [("WINDOW_SECONDS", "0"), ("ALERT_THRESHOLD", "high"), ("KEY_DISPLAY", "hash")])
def test_invalid_settings_are_named(lambda_env: dict[str, str], name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        invoke(load_event("poison-record.json"), {**lambda_env, name: value})


@pytest.mark.parametrize("event", [{}, {"Records": "nope"}, {"Records": [{"eventSource": "aws:sqs", "body": "x"}]}])
def test_an_event_that_is_not_a_stream_event_gets_a_clear_error(lambda_env: dict[str, str], event: dict) -> None:
    with pytest.raises(NotAStreamEvent, match="not a DynamoDB stream event"):
        invoke(event, lambda_env)


LAMBDA_LIKE = """
import json, sys
from hotkeys.detector.handlers.app import handler
from hotkeys.cli.replay import FakeLambdaContext
event = json.load(open(sys.argv[1]))
try:
    print(json.dumps(handler(event, FakeLambdaContext())))
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error)}))
"""


def run_as_lambda(environment: dict[str, str], event_file: str) -> dict[str, Any]:
    """The module-level handler in its own process, configured only by its environment (as in Lambda)."""
    keep = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "HOME", "LANG", "PYTHON", "VIRTUAL_ENV"))}
    credentials = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    quiet = {
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
    }
    result = subprocess.run(
        [sys.executable, "-c", LAMBDA_LIKE, event_file],
        env={**keep, **credentials, **quiet, **environment},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def test_the_deployed_handler_reads_its_settings_and_endpoint_from_the_environment_once(
    moto_endpoint: str, tmp_path: Any
) -> None:
    # Given a stats table on a moto server and the poison-record sample on disk
    dynamodb = boto3.client("dynamodb", endpoint_url=moto_endpoint, region_name="us-east-1")
    create_stats_table(dynamodb, "handler-process-stats")
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(load_event("poison-record.json")))
    # When the module-level handler runs in a fresh process configured only by its environment
    environment = {"STATS_TABLE_NAME": "handler-process-stats", "AWS_ENDPOINT_URL": moto_endpoint}
    response = run_as_lambda(environment, str(event_file))
    # Then it answers as the in-process handler does
    poison = load_event("poison-record.json")["Records"][3]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": poison}]}
    # And without its table name it names the variable
    assert run_as_lambda({"AWS_ENDPOINT_URL": moto_endpoint}, str(event_file)) == {
        "error": "ConfigError",
        "message": "STATS_TABLE_NAME is required: the name of the detector's stats table",
    }


# What the Lambda runtime does before the handler: parse the event's JSON text in the function's process.
# A 1,000-record event of 20-attribute items, built before the count starts; the young collections that
# parse runs are counted (CPython's own counter, not a clock).
GC_PROBE = """
import gc, json, sys
if sys.argv[1] == "function":
    import hotkeys.detector.handlers.app
image = {f"attribute{n}": {"S": "value" * 4} for n in range(20)}
text = json.dumps({"Records": [{"dynamodb": {"NewImage": image, "OldImage": image}} for _ in range(1000)]})
young, oldest = gc.get_stats()[0]["collections"], gc.get_stats()[2]["collections"]
json.loads(text)
print(gc.get_stats()[0]["collections"] - young, gc.get_stats()[2]["collections"] - oldest, gc.get_freeze_count())
"""


def _parse_collections(process: str) -> tuple[int, int, int]:
    """(young collections, full collections) while parsing the event, and objects frozen, in a fresh
    interpreter that imported the function's module first (``function``) or nothing (``plain``)."""
    output = subprocess.run(
        [sys.executable, "-c", GC_PROBE, process], check=True, capture_output=True, text=True
    ).stdout
    young, full, frozen = (int(part) for part in output.split())
    return young, full, frozen


def test_importing_the_function_spares_the_runtimes_parse_most_garbage_collections() -> None:
    # Given a fresh interpreter as CPython starts it, and one that imported the function (its init phase)
    plain_young, _plain_full, plain_frozen = _parse_collections("plain")
    young, full, frozen = _parse_collections("function")
    # Then after the import the initialised heap is frozen (full collections skip it) and parsing an event
    # runs a small fraction of the young collections it runs by default, and no full collection
    assert plain_frozen == 0 and frozen > 1000
    assert plain_young >= 20, plain_young  # the default policy collects often during such a parse
    assert young * 5 <= plain_young, (young, plain_young)
    assert full == 0
