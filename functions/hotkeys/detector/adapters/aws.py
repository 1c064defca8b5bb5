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


def sdk_config(option_defaults: Any = None) -> Config:
    """The SDK settings; ``account_id_endpoint_mode`` only where botocore knows it (1.37+).

    Account-id endpoints break local endpoints (moto) for DynamoDB Streams. Older SDKs (the
    Lambda runtime's boto3 is not pinned and varies by region) have no such endpoints, and
    their ``Config`` rejects the option: passing it unconditionally would fail every
    invocation at import.
    """
    known = Config.OPTION_DEFAULTS if option_defaults is None else option_defaults
    settings: dict[str, Any] = {
        "retries": {"max_attempts": 3, "mode": "standard"},
        "connect_timeout": 2,
        "read_timeout": 5,
    }
    if "account_id_endpoint_mode" in known:
        settings["account_id_endpoint_mode"] = "disabled"
    return Config(**settings)


SDK_CONFIG = sdk_config()


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
