"""``hotkeys doctor``'s checks of the event source mappings and the streams they read, and of who else
reads each stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from hotkeys.cli.doctor_model import FAIL, OK, WARN, Check, Clients, source_label, table_of
from hotkeys.deployment import EVENT_SOURCE

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_lambda.type_defs import ListEventSourceMappingsRequestTypeDef

# What repairs a mapping deleted, disabled, filtered or changed outside the stack, or a stream the stack turns
# on that was turned off or replaced: every deploy updates the stack's mappings and streams (REDEPLOY_PROPERTY).
REPAIR = "cdk deploy (every deploy puts the stack's mappings back as deployed)"
FULL_VIEW = "NEW_AND_OLD_IMAGES"


def read_mapping(lambda_: LambdaClient, uuid: str) -> dict[str, Any] | None:
    """The mapping, or None when Lambda has none by that UUID (deleted outside the stack)."""
    try:
        return dict(lambda_.get_event_source_mapping(UUID=uuid))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise


def check_stream(clients: Clients, mapping: dict[str, Any], enabled_by_stack: bool) -> list[Check]:
    """``enabled_by_stack``: the stack turns the table's stream on (-c enableStream), and follows it."""
    arn = str(mapping.get("EventSourceArn", ""))
    table = table_of(arn)
    name = f"stream of {table}"
    try:
        description = clients.dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as error:
        return [Check(name, FAIL, f"cannot describe table {table}: {error}", "check the table exists in this region")]
    specification = description.get("StreamSpecification")
    if not specification or not specification.get("StreamEnabled"):
        return [
            Check(
                name,
                FAIL,
                "the table's stream is off",
                REPAIR if enabled_by_stack else f"cdk deploy with -c tableName={table} -c enableStream=true",
            )
        ]
    checks = []
    view = specification.get("StreamViewType")
    if view != FULL_VIEW:
        checks.append(
            Check(
                name,
                FAIL,
                f"view type {view}: item sizes are key-only and the TTL archive gets keys without items",
                f"aws dynamodb update-table --table-name {table} --stream-specification StreamEnabled=false, "
                "then redeploy with -c enableStream=true",
            )
        )
    if description.get("LatestStreamArn") != arn:
        checks.append(
            Check(
                name,
                FAIL,
                "the mapping reads an old stream (the table's stream was turned off and on since the deploy)",
                # A stack that turned the stream on reads the table's current one at each deploy; one given
                # the stream's ARN maps the ARN it is given.
                REPAIR
                if enabled_by_stack
                else f"cdk deploy with {description.get('LatestStreamArn')} for {table} in -c tableStreamArns",
            )
        )
    status = clients.streams.describe_stream(StreamArn=arn, Limit=1)["StreamDescription"].get("StreamStatus")
    if status != "ENABLED":
        checks.append(Check(name, FAIL, f"stream status {status}", "wait for ENABLED, or re-enable the stream"))
    return checks or [Check(name, OK, f"ENABLED, {FULL_VIEW}, the table's current stream")]


def _expected_mapping(window_seconds: int) -> dict[str, Any]:
    settings = EVENT_SOURCE
    return {
        "BatchSize": settings.batch_size,
        "TumblingWindowInSeconds": window_seconds,
        "BisectBatchOnFunctionError": settings.bisect_batch_on_error,
        "MaximumRetryAttempts": settings.retry_attempts,
        "ParallelizationFactor": 1,
        # (without it Lambda ignores the consumer's batchItemFailures: the records it names count as processed)
        "FunctionResponseTypes": ["ReportBatchItemFailures"] if settings.report_batch_item_failures else [],
    }


def check_mapping(mapping: dict[str, Any], window_seconds: int) -> Check:
    name = f"event source mapping {mapping.get('UUID', '?')} ({source_label(str(mapping.get('EventSourceArn', '')))})"
    state = mapping.get("State")
    if state != "Enabled":
        return Check(name, FAIL, f"state {state}: its stream is not read", REPAIR)
    drift = {
        key: (mapping.get(key), wanted)
        for key, wanted in _expected_mapping(window_seconds).items()
        if mapping.get(key) != wanted
    }
    if drift:
        detail = ", ".join(f"{key} is {have}, the stack sets {want}" for key, (have, want) in drift.items())
        return Check(name, FAIL, f"{detail} (changed outside the stack)", REPAIR)
    filters = (mapping.get("FilterCriteria") or {}).get("Filters")
    if filters:
        return Check(
            name,
            FAIL,
            f"{len(filters)} filter(s) added outside the stack: the records they drop are never counted",
            f"{REPAIR} (it removes them)",
        )
    result = str(mapping.get("LastProcessingResult") or "")
    if result.startswith("PROBLEM"):
        return Check(name, FAIL, f"last processing result: {result}", "see the function's logs and the Errors alarm")
    return Check(name, OK, f"Enabled, settings as deployed, last result: {result or 'none yet'}")


# DynamoDB Streams API reference, LimitExceededException: "More than 2 processes are reading from the same
# streams shard at the same time. Exceeding this limit may result in request throttling." Each event source
# mapping reads every shard of its stream.
MAX_STREAM_READERS = 2
# States of a mapping that does not poll its stream (Lambda's EventSourceMappingConfiguration.State).
_NOT_READING = frozenset({"Disabled", "Disabling", "Deleting"})
UNSEEN_READERS = (
    "readers outside Lambda (the Kinesis Client Library with the DynamoDB Streams adapter, your own "
    "GetRecords loops) and other accounts' functions are not listed by Lambda, so not counted here"
)


def stream_mappings(lambda_: LambdaClient, stream_arn: str) -> list[dict[str, Any]]:
    """Every event source mapping of ``stream_arn`` in the account and region, whichever function's."""
    found: list[dict[str, Any]] = []
    request: ListEventSourceMappingsRequestTypeDef = {"EventSourceArn": stream_arn}
    while True:
        page = lambda_.list_event_source_mappings(**request)
        found.extend(dict(mapping) for mapping in page.get("EventSourceMappings", []))
        marker = page.get("NextMarker")
        if not marker:
            return found
        request["Marker"] = marker


def readers_check(clients: Clients, mapping: dict[str, Any]) -> Check:
    """How many event source mappings read the stream the stack's ``mapping`` reads: more than
    ``MAX_STREAM_READERS`` is a warning naming the table and each reader's function."""
    stream = str(mapping.get("EventSourceArn", ""))
    table = table_of(stream)
    name = f"readers of the stream of {table}"
    try:
        listed = stream_mappings(clients.lambda_, stream)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", error)
        return Check(name, WARN, f"cannot list the stream's event source mappings here: {code}")
    ours = mapping.get("UUID")
    readers = {str(m.get("UUID")): m for m in listed if m.get("State") not in _NOT_READING}
    if mapping.get("State") not in _NOT_READING:
        # (the stack's own, just read by its UUID, even if the listing has not caught up with it)
        readers.setdefault(str(ours), mapping)
    functions = sorted(
        _function_name(m) + (" (this stack's consumer)" if uuid == ours else "") for uuid, m in readers.items()
    )
    count = f"{len(readers)} Lambda event source mapping{'s' if len(readers) != 1 else ''} read it"
    if len(readers) <= MAX_STREAM_READERS:
        return Check(name, OK, f"{count}: {', '.join(functions) or 'none'}")
    return Check(
        name,
        WARN,
        f"{count} ({', '.join(functions)}): DynamoDB Streams allows {MAX_STREAM_READERS} readers of a shard at "
        "a time, more 'may result in request throttling' (every reader lags, this stack's consumer too); "
        f"{UNSEEN_READERS}",
        f"let at most {MAX_STREAM_READERS} read the stream of {table}: one function can pass its records on to "
        "the others; two detector stacks on one table are two readers (watch it from one stack); or let the "
        f"detector read the table's changes from Kinesis Data Streams instead of its DynamoDB stream: cdk deploy "
        f"with -c tableName={table} -c kinesisStreamArn=arn:aws:kinesis:... (a stream the table already sends to) "
        "or -c enableKinesis=true (the stack creates one), with -c kinesisEnhancedFanOut=true for a read "
        "throughput of its own (docs/deploy.md, 'Reading from Kinesis Data Streams')",
    )


def _function_name(mapping: dict[str, Any]) -> str:
    """``arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]`` -> NAME."""
    parts = str(mapping.get("FunctionArn", "")).split(":")
    return parts[6] if len(parts) > 6 else ":".join(parts)
