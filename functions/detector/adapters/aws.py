"""Lazily created, cached boto3 clients with deliberate retry and timeout settings.

Standard retry mode with 3 attempts and short timeouts: a throttled or slow call
fails the invocation within seconds (well inside the function timeout), and
Lambda's own retry (with bisection) takes over, instead of the SDK hiding a
problem behind minutes of backoff. ``AWS_ENDPOINT_URL`` and ``AWS_REGION`` are
honoured by boto3 itself.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

SDK_CONFIG = Config(
    retries={"max_attempts": 3, "mode": "standard"},
    connect_timeout=2,
    read_timeout=5,
    # Account-id endpoints break local endpoints (moto) for DynamoDB Streams.
    account_id_endpoint_mode="disabled",
)


@cache
def client(service: str) -> Any:
    return boto3.session.Session().client(service, config=SDK_CONFIG)


@cache
def resource(service: str) -> Any:
    return boto3.session.Session().resource(service, config=SDK_CONFIG)


def reset_clients() -> None:
    """Forget cached clients (tests switch endpoints and credentials)."""
    client.cache_clear()
    resource.cache_clear()
