"""Shared fixtures: a clean AWS environment (moto, fake credentials) and event builders."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hotkeys.cli.local import create_stats_table
from hotkeys.detector.adapters.aws import reset_clients
from hotkeys.detector.config import Settings
from hotkeys.detector.wiring import reset_ports

EVENTS_DIR = Path(__file__).resolve().parent.parent / "events"


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "AWS_ENDPOINT_URL",
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "STATS_TABLE_NAME",
        "ALERT_TOPIC_ARN",
        "ARCHIVE_BUCKET_NAME",
        "PARTITION_KEY_ATTRIBUTE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    reset_clients()
    reset_ports()
    yield
    reset_clients()
    reset_ports()


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture
def stats_table_name(aws: None) -> str:
    name = f"hotkeys-stats-{uuid.uuid4().hex[:8]}"
    create_stats_table(boto3.client("dynamodb"), name)
    return name


@pytest.fixture
def settings(stats_table_name: str) -> Settings:
    return Settings(stats_table_name=stats_table_name)


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS_DIR / name).read_text())
