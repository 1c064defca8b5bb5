"""Shared fixtures: a clean AWS environment (moto, fake credentials) and event builders."""

from __future__ import annotations

import io
import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer

from hotkeys.detector.config import Settings
from hotkeys.detector.observability import logger
from hotkeys.emulator.local import create_stats_table

EVENTS_DIR = Path(__file__).resolve().parent.parent / "events"


def _share_botocore_models() -> None:
    """One botocore data loader per test process instead of one per session.

    Tests create hundreds of boto3 sessions (one per AwsClients, as the function and the CLI do once
    per container or command); each new session re-reads and re-parses the service models from disk,
    a quarter of a fault schedule's time. The models are read-only: sharing the loader changes no
    behaviour, only how often the same JSON files are parsed.
    """
    create_loader = botocore.session.create_loader
    loaders: dict[Any, Any] = {}

    def shared(search_path_string: Any = None) -> Any:
        if search_path_string not in loaders:
            loaders[search_path_string] = create_loader(search_path_string)
        return loaders[search_path_string]

    botocore.session.create_loader = shared


_share_botocore_models()


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
    # Benchmarks the tests run append their entry here, not to docs/measurements.md (bench/measurements.py)
    monkeypatch.setenv("HOTKEYS_MEASUREMENTS_LOG", os.devnull)
    yield


@pytest.fixture(autouse=True)
def no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-xdist's workers run with COLUMNS=80 and LINES=24, and a pipe takes COLUMNS when it is set:
    each test starts as a pipe without them (a test that wants a width sets it)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def fresh_metrics() -> Iterator[None]:
    """Powertools keeps one metric set per process (class-level, shared by every ``Metrics``), and with
    metrics disabled, as tests run, nothing flushes it: values one test added would ride along in
    another's EMF line, or reach Powertools' 100 values and print a line mid-test. Each test starts and
    ends with none, whatever ran before it in this worker."""
    from hotkeys.detector.observability import metrics

    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto server in a thread, for what runs in another process or must go over HTTP."""
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def topic(aws: None) -> dict[str, str]:
    """An alert topic with an SQS subscriber that keeps a copy of every message."""
    return subscribed_topic("hot-keys", "alert-copies")


def subscribed_topic(name: str, queue: str) -> dict[str, str]:
    """A topic on moto with an SQS subscriber that keeps a copy of every message: its ARN and queue URL."""
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    topic_arn = sns.create_topic(Name=name)["TopicArn"]
    queue_url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    return {"arn": topic_arn, "queue": queue_url}


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the functions log (powertools' JSON lines), read with ``log_lines``."""
    stream = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", stream)
    return stream


def log_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
