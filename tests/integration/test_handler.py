"""The Lambda entry point end to end: real event files, real moto table, the documented response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hotkeys.cli.replay import FakeLambdaContext
from hotkeys.detector.config import ConfigError
from hotkeys.detector.pipeline import NotAStreamEvent
from hotkeys.detector.state import STATE_VERSION
from tests.conftest import load_event


@pytest.fixture
def lambda_env(monkeypatch: pytest.MonkeyPatch, stats_table_name: str) -> str:
    monkeypatch.setenv("STATS_TABLE_NAME", stats_table_name)
    monkeypatch.setenv("TTL_ATTRIBUTE", "expireAt")
    return stats_table_name


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    from hotkeys.detector.app import handler

    return handler(event, FakeLambdaContext())


def test_a_plain_event_file_returns_the_partial_batch_response(lambda_env: str) -> None:
    # Given the poison-record sample (no tumbling-window fields, as `sam local invoke -e` sends it)
    event = load_event("poison-record.json")
    # When the handler runs
    response = invoke(event)
    # Then exactly the poison record is reported, and no state is returned (no tumbling window)
    poison = event["Records"][3]["dynamodb"]["SequenceNumber"]
    assert response == {"batchItemFailures": [{"itemIdentifier": poison}]}


def test_a_tumbling_window_invocation_returns_its_state(lambda_env: str) -> None:
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
    import os

    os.environ["PARTITION_KEY_ATTRIBUTE"] = "tenant"
    try:
        response = invoke(event)
    finally:
        del os.environ["PARTITION_KEY_ATTRIBUTE"]
    assert response["batchItemFailures"] == []
    assert isinstance(response["state"], dict) and response["state"]["v"] == STATE_VERSION
    json.dumps(response)  # the runtime must be able to serialize it


def test_a_missing_setting_is_named(monkeypatch: pytest.MonkeyPatch, aws: None) -> None:
    with pytest.raises(ConfigError, match="STATS_TABLE_NAME"):
        invoke(load_event("poison-record.json"))


@pytest.mark.parametrize("name,value", [("WINDOW_SECONDS", "0"), ("ALERT_THRESHOLD", "high"), ("KEY_DISPLAY", "hash")])
def test_invalid_settings_are_named(lambda_env: str, monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        invoke(load_event("poison-record.json"))


@pytest.mark.parametrize("event", [{}, {"Records": "nope"}, {"Records": [{"eventSource": "aws:sqs", "body": "x"}]}])
def test_an_event_that_is_not_a_stream_event_gets_a_clear_error(lambda_env: str, event: dict) -> None:
    with pytest.raises(NotAStreamEvent, match="not a DynamoDB stream event"):
        invoke(event)
