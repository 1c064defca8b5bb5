"""``hotkeys doctor``: is the deployed detector actually watching? One verdict per check, with the fix.

Reads the stack's outputs and resources (CloudFormation), then checks what a person on call
needs to trust: every mapped stream is ENABLED with NEW_AND_OLD_IMAGES and is the table's
current stream; every event source mapping is Enabled, its last processing result is OK and
its settings are the stack's; no more than 2 event source mappings read each stream (any function's: another
stack on the same table is one); the function's iterator age and errors over the last hour; the
depth of every dead-letter and undelivered-alert queue; whether CloudWatch may publish to the
alert topic and anyone is subscribed; a recent window in the stats table per watched table;
and that the Powertools layer is the one the code was tested with. Per watched table and each of its
GSIs: the Contributor Insights mode, the last hour's throttle events by cause (DynamoDB's metrics), and
an on-demand maximum, provisioned capacity or warm throughput that caps the headroom the detector's
advice assumes (one partition's 1,000 write and 3,000 read units a second). It also checks what a deploy
cannot: that each stream is in the function's region and account, that a table under a
customer-managed KMS key has that key granted to the consumer, and that the webhook subscriber may
read its secret (its complete ARN, and its customer-managed key).

All AWS access goes through ``Clients`` (plain boto3 clients), so tests can back them with moto
and stub what moto does not model.
"""

from __future__ import annotations

import time
from typing import Any

from hotkeys.cli.doctor_access import RoleOf, check_source_key, check_stream_location, check_webhook_secret
from hotkeys.cli.doctor_alerting import check_queues, check_topic
from hotkeys.cli.doctor_data import check_recent_windows, latest_written, ttl_check
from hotkeys.cli.doctor_function import check_function_health, check_layer
from hotkeys.cli.doctor_model import (
    FAIL,
    OK,
    WARN,
    Check,
    Clients,
    StackNotFound,
    StackView,
    clients_from,
    failed,
    is_kinesis,
    read_stack,
    table_of,
    to_json,
)
from hotkeys.cli.doctor_streams import (
    REPAIR,
    check_mapping,
    check_stream,
    read_mapping,
    readers_check,
    stream_mappings,
)
from hotkeys.cli.doctor_throttling import throttling_checks
from hotkeys.deployment import (
    EARLIER_MAPPING_TYPE,
    EVENT_SOURCE,
    KINESIS_STREAMING_ID_PREFIX,
    KINESIS_STREAMING_TYPE,
    NOT_CREATED_PREFIX,
    STREAM_ENABLER_TYPE,
)

# What the CLI, the readers of a deployment (deployed.py) and the tests import from here, whichever module holds it.
__all__ = [
    "FAIL",
    "OK",
    "REPAIR",
    "WARN",
    "Check",
    "Clients",
    "StackNotFound",
    "clients_from",
    "diagnose",
    "failed",
    "read_mapping",
    "read_stack",
    "stream_mappings",
    "throttling_checks",
    "to_json",
]


def diagnose(clients: Clients, stack_name: str, now: float | None = None) -> list[Check]:
    stack = read_stack(clients.cloudformation, stack_name)
    moment = time.time() if now is None else now
    checks: list[Check] = []
    mappings = []
    earlier = {uuid for _, uuid in stack.of_type(EARLIER_MAPPING_TYPE)}
    for uuid in stack.mapping_ids():
        if uuid.startswith(NOT_CREATED_PREFIX):  # (stream_mapping_app: a displaced mapping was still deleting)
            stream = uuid.removeprefix(NOT_CREATED_PREFIX)
            detail = (
                f"the stack's mapping of {stream} was not created (the mapping it displaced was still being deleted "
                "when the deploy ended): its stream is not read"
            )
            fix = (
                f"{REPAIR}, once `aws lambda list-event-source-mappings --event-source-arn {stream}` shows no mapping "
                "Deleting (a deploy while one is still deleting waits for it, then again answers without a mapping)"
            )
            checks.append(Check("event source mappings", FAIL, detail, fix))
            continue
        mapping = read_mapping(clients.lambda_, uuid)
        if mapping is None:
            detail = f"the stack's mapping {uuid} is not in Lambda: its stream is not read"
            if uuid in earlier:
                # (an upgrade to this release that rolled back keeps the mapping it made: readers below name it)
                detail = (
                    f"the stack's mapping {uuid} (an earlier release's) is not in Lambda: its stream is not read, "
                    "unless by the mapping an upgrade to this release kept when it rolled back"
                )
            checks.append(Check("event source mappings", FAIL, detail, REPAIR))
        else:
            mappings.append(mapping)
    if not mappings and not checks:
        checks.append(Check("event source mappings", FAIL, "the stack has no event source mapping", "redeploy"))
    consumer = _consumer_name(mappings)
    window_seconds = _window_seconds(clients, consumer)
    consumer_role = RoleOf(clients, consumer)
    for mapping in mappings:
        misplaced = check_stream_location(mapping)
        if misplaced:
            checks.append(misplaced)
        elif not is_kinesis(str(mapping.get("EventSourceArn", ""))):
            # (a Kinesis mode's mapping reads a Kinesis stream: its table checks below come from the stack)
            checks.extend(check_stream(clients, mapping, bool(stack.of_type(STREAM_ENABLER_TYPE))))
            checks.extend(check_source_key(clients, mapping, consumer_role))
        checks.append(check_mapping(mapping, window_seconds))
    checks.extend(_table_checks(clients, stack, mappings, moment))
    if consumer:
        checks.extend(check_function_health(clients, consumer, moment))
        checks.append(check_layer(clients, consumer))
    checks.extend(check_webhook_secret(clients, stack))
    checks.extend(check_queues(clients, stack))
    checks.extend(check_topic(clients, stack))
    # (every DynamoDB stream's table, a misplaced one's too, and a Kinesis mode's tables)
    recent = {
        table_of(str(m.get("EventSourceArn", ""))) for m in mappings if not is_kinesis(str(m.get("EventSourceArn", "")))
    }
    checks.extend(check_recent_windows(clients, stack, sorted(recent | _kinesis_tables(stack)), window_seconds, moment))
    return checks


def _table_checks(clients: Clients, stack: StackView, mappings: list[dict[str, Any]], moment: float) -> list[Check]:
    """Who else reads each DynamoDB stream (another stack on the same table is a second reader), then each
    table's throttles and TTL; a Kinesis mode's tables come from the stack, its stream has no such limit."""
    streams = [m for m in mappings if not check_stream_location(m) and not is_kinesis(str(m.get("EventSourceArn", "")))]
    checks = [readers_check(clients, m) for m in streams]
    tables = {table_of(str(m.get("EventSourceArn", ""))) for m in streams} | _kinesis_tables(stack)
    for table in sorted(tables):
        checks.extend(throttling_checks(clients, table, moment))
        checks.append(ttl_check(clients, table, latest_written(clients, stack, table), moment))
    return checks


def _kinesis_tables(stack: StackView) -> set[str]:
    """The tables a -c enableKinesis stack streams to its Kinesis data stream, from its destinations' physical ids
    (``kinesis-streaming:<table>:<stream ARN>``). A -c kinesisStreamArn stack names its tables nowhere doctor reads:
    their table checks are skipped rather than guessed."""
    prefix = f"{KINESIS_STREAMING_ID_PREFIX}:"
    return {
        physical.removeprefix(prefix).split(":", 1)[0]
        for _, physical in stack.of_type(KINESIS_STREAMING_TYPE)
        if physical.startswith(prefix)
    }


def _consumer_name(mappings: list[dict[str, Any]]) -> str | None:
    arns = {str(m.get("FunctionArn", "")) for m in mappings if m.get("FunctionArn")}
    return next(iter(arns)).split(":")[-1] if arns else None


def _window_seconds(clients: Clients, function: str | None) -> int:
    if not function:
        return EVENT_SOURCE.tumbling_window_seconds
    configuration = clients.lambda_.get_function_configuration(FunctionName=function)
    variables = configuration.get("Environment", {}).get("Variables", {})
    return int(variables.get("WINDOW_SECONDS", EVENT_SOURCE.tumbling_window_seconds))
