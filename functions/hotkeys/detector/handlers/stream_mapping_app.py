"""Deploy-time custom resource (``Custom::StreamMapping``): the event source mapping of one function on one
DynamoDB stream (or, in the Kinesis modes, one Kinesis data stream or enhanced fan-out consumer), owned by the
stack under the mapping's UUID (the physical id, which the CLI reads).

Used by the CDK provider framework (``on_event`` only; a returned dict is the response, an exception FAILED).
This handler reads the request, makes the clients and answers; what each request does, and why, is
``provisioning.stream_mapping``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.provisioning.mapping_settings import coerce_settings
from hotkeys.detector.provisioning.stream_mapping import (
    MappingSpec,
    UpdateRequest,
    create,
    deadline_of,
    delete,
    kept_on_rollback,
    update,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient

__all__ = ["on_event"]


@cache  # one set of clients per container
def _clients() -> AwsClients:
    return AwsClients()


def on_event(
    event: dict[str, Any],
    context: Any = None,
    lambda_client: LambdaClient | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    cloudformation: CloudFormationClient | None = None,
) -> dict[str, Any]:
    kind = event["RequestType"]
    client = lambda_client or _clients().client("lambda")
    deadline = deadline_of(context, clock, sleep)
    if kind == "Delete":
        uuid = str(event.get("PhysicalResourceId", ""))
        source = str((event.get("ResourceProperties") or {}).get("EventSourceArn", ""))
        stack = event.get("StackId")
        if not kept_on_rollback(
            lambda: cloudformation or _clients().client("cloudformation"), client, stack, source, uuid
        ):
            delete(client, uuid, deadline)
        return {"PhysicalResourceId": uuid}
    properties = event["ResourceProperties"]
    spec = MappingSpec(
        str(properties["FunctionName"]),
        str(properties["EventSourceArn"]),
        coerce_settings(client.meta.service_model, properties.get("Settings")),
    )
    if kind == "Create":
        return {"PhysicalResourceId": create(client, spec, deadline)}
    if kind == "Update":
        request = UpdateRequest(
            str(event.get("PhysicalResourceId", "")),
            event.get("OldResourceProperties") or {},
            properties.get("Settings") or {},
        )
        return {"PhysicalResourceId": update(client, spec, deadline, request)}
    raise ValueError(f"unknown RequestType {kind!r}")
