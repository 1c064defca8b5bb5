"""Lazily created, cached boto3 clients with deliberate retry and timeout settings.

Standard retry mode with 3 attempts and short timeouts: a throttled or slow call
fails the invocation within seconds (well inside the function timeout), and
Lambda's own retry (with bisection) takes over, instead of the SDK hiding a
problem behind minutes of backoff. In Lambda the target is boto3's default (the
function's region); the CLI passes the region and endpoint the user chose.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class AwsTarget:
    """Where AWS is: a region and an endpoint (moto, LocalStack), or None for boto3's own defaults."""

    region: str | None = None
    endpoint_url: str | None = None


class AwsClients:
    """boto3 clients of one session and target, made on first use and kept (one per service).

    Passed as a value: the function makes one per container, the CLI one per command, a test one
    per test; nothing reads or writes process-wide state to choose an endpoint.
    """

    def __init__(self, target: AwsTarget | None = None, session: boto3.session.Session | None = None) -> None:
        self.target = target or AwsTarget()
        self._session = session or boto3.session.Session(region_name=self.target.region)
        self._clients: dict[str, Any] = {}
        self._resources: dict[str, Any] = {}

    @property
    def region(self) -> str | None:
        name = self._session.region_name
        return str(name) if name else None

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self._session.client(
                service, config=SDK_CONFIG, endpoint_url=self.target.endpoint_url
            )
        return self._clients[service]

    def resource(self, service: str) -> Any:
        if service not in self._resources:
            self._resources[service] = self._session.resource(
                service, config=SDK_CONFIG, endpoint_url=self.target.endpoint_url
            )
        return self._resources[service]
