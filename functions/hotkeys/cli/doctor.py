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

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from hotkeys.deployment import (
    EARLIER_MAPPING_TYPE,
    EVENT_SOURCE,
    ITERATOR_AGE_ALARM_MS,
    MAPPING_TYPES,
    NOT_CREATED_PREFIX,
    POWERTOOLS_PARAMETER,
    POWERTOOLS_VERSION,
    STREAM_ENABLER_TYPE,
)
from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
from hotkeys.detector.consumer.layout import heads_pk
from hotkeys.detector.consumer.ports import StatsReader
from hotkeys.detector.consumer.snapshots import LAYOUT_PK, WindowRetired, merged_health
from hotkeys.detector.domain.health import IGNORED, Health, TtlVerdict, ttl_problem
from hotkeys.detector.throttling.throttle_sources import Source, insights_command
from hotkeys.throttling import (
    INDEX_DIMENSION,
    NAMESPACE,
    PARTITION_UNITS,
    TABLE_DIMENSION,
    THROTTLE_METRICS,
)

OK, WARN, FAIL = "ok", "warn", "fail"
FULL_VIEW = "NEW_AND_OLD_IMAGES"


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str
    detail: str
    fix: str = ""


@dataclass
class Clients:
    cloudformation: Any
    dynamodb: Any
    streams: Any
    lambda_: Any
    cloudwatch: Any
    sqs: Any
    sns: Any
    ssm: Any
    # Checks of what a deploy cannot verify (keys, the webhook secret); skipped where a client is None.
    kms: Any = None
    iam: Any = None
    secretsmanager: Any = None
    # The stats table's windows (stats table name -> its reader), for what the stream shows; None: not read.
    stats: Callable[[str], StatsReader] | None = None


@dataclass
class StackView:
    """What the stack says about itself: outputs and physical ids by resource type."""

    name: str
    outputs: dict[str, str]
    resources: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # type → [(logical, physical)]

    def of_type(self, kind: str) -> list[tuple[str, str]]:
        return self.resources.get(kind, [])

    def mapping_ids(self) -> list[str]:
        """The UUIDs of the stack's event source mappings: its custom resources' (infra/stream_mapping.py),
        and an earlier release's CloudFormation mappings until the stack is updated."""
        return [uuid for kind in MAPPING_TYPES for _, uuid in self.of_type(kind)]


class StackNotFound(LookupError):
    pass


def read_stack(cloudformation: Any, name: str) -> StackView:
    try:
        stacks = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if "does not exist" in error.response.get("Error", {}).get("Message", ""):
            raise StackNotFound(f"no stack named {name!r} here (check --stack and --region)") from None
        raise
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    view = StackView(name=name, outputs=outputs)
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=name):
        for resource in page["StackResourceSummaries"]:
            view.resources.setdefault(resource["ResourceType"], []).append(
                (resource["LogicalResourceId"], resource.get("PhysicalResourceId", ""))
            )
    return view


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
    consumer_role = _RoleOf(clients, consumer)
    for mapping in mappings:
        misplaced = _check_stream_location(mapping)
        if misplaced:
            checks.append(misplaced)
        else:
            checks.extend(_check_stream(clients, mapping, bool(stack.of_type(STREAM_ENABLER_TYPE))))
            checks.extend(_check_source_key(clients, mapping, consumer_role))
        checks.append(_check_mapping(mapping, window_seconds))
    # Who else reads each stream: another stack on the same table is a second reader.
    checks.extend(readers_check(clients, m) for m in mappings if not _check_stream_location(m))
    for table in sorted(
        {_table_of(str(m.get("EventSourceArn", ""))) for m in mappings if not _check_stream_location(m)}
    ):
        checks.extend(throttling_checks(clients, table, moment))
        checks.append(ttl_check(clients, table, _written(clients, stack, table), moment))
    if consumer:
        checks.extend(_check_function_health(clients, consumer, moment))
        checks.append(_check_layer(clients, consumer))
    checks.extend(_check_webhook_secret(clients, stack))
    checks.extend(_check_queues(clients, stack))
    checks.extend(_check_topic(clients, stack))
    checks.extend(_check_recent_windows(clients, stack, mappings, window_seconds, moment))
    return checks


# -- event source mappings and streams ---------------------------------------------------------
# What repairs a mapping deleted, disabled, filtered or changed outside the stack, or a stream the stack turns
# on that was turned off or replaced: every deploy updates the stack's mappings and streams (REDEPLOY_PROPERTY).
REPAIR = "cdk deploy (every deploy puts the stack's mappings back as deployed)"


def read_mapping(lambda_: Any, uuid: str) -> dict[str, Any] | None:
    """The mapping, or None when Lambda has none by that UUID (deleted outside the stack)."""
    try:
        return dict(lambda_.get_event_source_mapping(UUID=uuid))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise


def _consumer_name(mappings: list[dict[str, Any]]) -> str | None:
    arns = {str(m.get("FunctionArn", "")) for m in mappings if m.get("FunctionArn")}
    return next(iter(arns)).split(":")[-1] if arns else None


def _window_seconds(clients: Clients, function: str | None) -> int:
    if not function:
        return EVENT_SOURCE.tumbling_window_seconds
    configuration = clients.lambda_.get_function_configuration(FunctionName=function)
    variables = configuration.get("Environment", {}).get("Variables", {})
    return int(variables.get("WINDOW_SECONDS", EVENT_SOURCE.tumbling_window_seconds))


def _table_of(stream_arn: str) -> str:
    return stream_arn.split(":table/", 1)[-1].split("/stream/", 1)[0]


def _check_stream(clients: Clients, mapping: dict[str, Any], enabled_by_stack: bool) -> list[Check]:
    """``enabled_by_stack``: the stack turns the table's stream on (-c enableStream), and follows it."""
    arn = str(mapping.get("EventSourceArn", ""))
    table = _table_of(arn)
    name = f"stream of {table}"
    try:
        description = clients.dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as error:
        return [Check(name, FAIL, f"cannot describe table {table}: {error}", "check the table exists in this region")]
    specification = description.get("StreamSpecification") or {}
    if not specification.get("StreamEnabled"):
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
    }


def _check_mapping(mapping: dict[str, Any], window_seconds: int) -> Check:
    name = f"event source mapping {mapping.get('UUID', '?')} ({_table_of(str(mapping.get('EventSourceArn', '')))})"
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


# -- the readers of a stream -------------------------------------------------------------------------------
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


def stream_mappings(lambda_: Any, stream_arn: str) -> list[dict[str, Any]]:
    """Every event source mapping of ``stream_arn`` in the account and region, whichever function's."""
    found: list[dict[str, Any]] = []
    marker: str | None = None
    while True:
        page = lambda_.list_event_source_mappings(EventSourceArn=stream_arn, **({"Marker": marker} if marker else {}))
        found.extend(page.get("EventSourceMappings", []))
        marker = page.get("NextMarker")
        if not marker:
            return found


def readers_check(clients: Clients, mapping: dict[str, Any]) -> Check:
    """How many event source mappings read the stream the stack's ``mapping`` reads: more than
    ``MAX_STREAM_READERS`` is a warning naming the table and each reader's function."""
    stream = str(mapping.get("EventSourceArn", ""))
    table = _table_of(stream)
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
        "the others; two detector stacks on one table are two readers (watch it from one stack)",
    )


def _function_name(mapping: dict[str, Any]) -> str:
    """``arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]`` -> NAME."""
    parts = str(mapping.get("FunctionArn", "")).split(":")
    return parts[6] if len(parts) > 6 else ":".join(parts)


# -- throttling: Contributor Insights, DynamoDB's throttle metrics, capacity caps ------------------------
THROTTLED_KEYS, FULL_MODE = "THROTTLED_KEYS", "ACCESSED_AND_THROTTLED_KEYS"


@dataclass(frozen=True)
class _Scope:
    """A watched table (``index`` None) or one of its GSIs, with its DescribeTable description."""

    table: str
    index: str | None
    description: dict[str, Any]

    @property
    def label(self) -> str:
        return self.table if self.index is None else f"{self.table} index {self.index}"

    def arguments(self) -> dict[str, str]:
        return {"TableName": self.table} | ({"IndexName": self.index} if self.index is not None else {})

    def dimensions(self) -> list[dict[str, str]]:
        table = [{"Name": TABLE_DIMENSION, "Value": self.table}]
        return table + ([{"Name": INDEX_DIMENSION, "Value": self.index}] if self.index is not None else [])


def throttling_checks(clients: Clients, table: str, now: float) -> list[Check]:
    try:
        description = clients.dynamodb.describe_table(TableName=table)["Table"]
    except ClientError:
        return []  # reported by the stream check
    scopes = [_Scope(table, None, description)] + [
        _Scope(table, str(index["IndexName"]), index) for index in description.get("GlobalSecondaryIndexes") or []
    ]
    provisioned = (description.get("BillingModeSummary") or {}).get("BillingMode") == "PROVISIONED" or (
        "BillingModeSummary" not in description
        and int((description.get("ProvisionedThroughput") or {}).get("WriteCapacityUnits") or 0) > 0
    )
    checks = []
    for scope in scopes:
        checks.append(_check_insights(clients, scope))
        checks.append(_check_throttle_events(clients, scope, now))
        checks.append(_check_headroom(scope, provisioned))
    return checks


def _check_insights(clients: Clients, scope: _Scope) -> Check:
    """Contributor Insights' status and mode (DescribeContributorInsights); off: the command that enables it."""
    name = f"contributor insights of {scope.label}"
    enable = insights_command(Source(scope.table, scope.index))
    try:
        answer = clients.dynamodb.describe_contributor_insights(**scope.arguments())
    except ClientError as error:
        return Check(name, WARN, f"cannot read it here: {error.response.get('Error', {}).get('Code', error)}")
    status = str(answer.get("ContributorInsightsStatus", "DISABLED"))
    # An answer without a mode predates modes: the full one was the only one.
    mode = str(answer.get("ContributorInsightsMode") or FULL_MODE)
    if status in ("ENABLED", "ENABLING"):
        if mode == THROTTLED_KEYS:
            return Check(name, OK, f"{status}, {THROTTLED_KEYS}: throttled reads and writes are named by key")
        return Check(name, OK, f"{status}, {mode}: every request is an event (billed), throttled keys included")
    if status == "FAILED":
        failure = answer.get("FailureException") or {}
        return Check(
            name,
            WARN,
            f"FAILED: {failure.get('ExceptionName', '?')}: {failure.get('ExceptionDescription', '')}".rstrip(": "),
            enable,
        )
    return Check(
        name,
        WARN,
        f"{status}: throttled keys of this {'index' if scope.index else 'table'} are not named "
        "(an index added after the deploy, -c throttledKeyInsights=false or lean=true, or left off by a stack whose "
        "keys are protected: -c tableKmsKeyArns or keyDisplay=hash, where its reports would show them in plaintext)",
        enable,
    )


def _check_throttle_events(clients: Clients, scope: _Scope, now: float) -> Check:
    """The last hour's sum of each throttle metric of this table or index (one GetMetricData call)."""
    name = f"throttles of {scope.label} (last hour)"
    end = datetime.fromtimestamp(now, tz=UTC)
    queries = [
        {
            "Id": f"m{number}",
            "MetricStat": {
                "Metric": {"Namespace": NAMESPACE, "MetricName": metric.name, "Dimensions": scope.dimensions()},
                "Period": 3600,
                "Stat": "Sum",
            },
            "ReturnData": True,
        }
        for number, metric in enumerate(THROTTLE_METRICS)
    ]
    try:
        results = clients.cloudwatch.get_metric_data(
            MetricDataQueries=queries, StartTime=end - timedelta(hours=1), EndTime=end
        )["MetricDataResults"]
    except ClientError as error:
        return Check(name, WARN, f"cannot read DynamoDB's metrics here: {error.response.get('Error', {}).get('Code')}")
    by_id = {str(result["Id"]): sum(float(v) for v in result.get("Values", [])) for result in results}
    counts = [(metric, by_id.get(f"m{number}", 0.0)) for number, metric in enumerate(THROTTLE_METRICS)]
    seen = [(metric, count) for metric, count in counts if count > 0]
    if not seen:
        return Check(name, OK, "none")
    detail = "; ".join(
        f"{count:,.0f} {metric.operation.lower()} events: {metric.cause.meaning} ({metric.name})"
        for metric, count in seen
    )
    fixes = list(dict.fromkeys(metric.cause.fix for metric, _ in seen))
    return Check(name, WARN, detail, "; ".join(fixes))


def _check_headroom(scope: _Scope, provisioned: bool) -> Check:
    """Settings below one partition's throughput: the table or index throttles before any key reaches the
    partition limit the detector's alerts and advice measure against."""
    name = f"headroom of {scope.label}"
    what = "index" if scope.index is not None else "table"
    caps = []
    on_demand = scope.description.get("OnDemandThroughput") or {}
    warm = scope.description.get("WarmThroughput") or {}
    capacity = scope.description.get("ProvisionedThroughput") or {}
    for operation, unit in (("Write", "write"), ("Read", "read")):
        partition = PARTITION_UNITS[operation]
        maximum = int(on_demand.get(f"Max{operation}RequestUnits") or 0)
        if 0 < maximum < partition:  # -1 (or absent): no maximum
            caps.append(
                f"on-demand maximum of {maximum:,} {unit} request units a second, below one partition's "
                f"{partition:,}: the whole {what} throttles (…MaxOnDemandThroughputExceeded) before any key "
                "reaches the partition limit"
            )
        units = int(capacity.get(f"{operation}CapacityUnits") or 0)
        if provisioned and 0 < units < partition:
            caps.append(
                f"provisioned {units:,} {unit} capacity units, below one partition's {partition:,}: the {what} "
                "throttles (…ProvisionedThroughputExceeded) before any key reaches the partition limit"
            )
        warmed = int(warm.get(f"{operation}UnitsPerSecond") or 0)
        if 0 < warmed < partition:
            caps.append(
                f"warm throughput of {warmed:,} {unit} units a second, below one partition's {partition:,}: "
                "a burst above it can throttle while DynamoDB scales"
            )
    if caps:
        return Check(
            name,
            WARN,
            "; ".join(caps),
            "a key alert's percentages are of the partition limit; these settings bind first: raise them "
            f"(aws dynamodb update-table --table-name {scope.table} ...) or read alerts against them",
        )
    parts = []
    if on_demand:
        parts.append(
            "on-demand maximum "
            + ", ".join(
                f"{on_demand.get(f'Max{op}RequestUnits')} {op.lower()}"
                for op in ("Write", "Read")
                if f"Max{op}RequestUnits" in on_demand
            )
        )
    if warm:
        parts.append(f"warm {warm.get('WriteUnitsPerSecond')} write / {warm.get('ReadUnitsPerSecond')} read units/s")
    return Check(name, OK, (", ".join(parts) + ": " if parts else "") + "nothing caps a key below one partition")


# -- the function ---------------------------------------------------------------------------------
def _statistic(clients: Clients, function: str, metric: str, statistic: str, now: float) -> float | None:
    end = datetime.fromtimestamp(now, tz=UTC)
    points = clients.cloudwatch.get_metric_statistics(
        Namespace="AWS/Lambda",
        MetricName=metric,
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        StartTime=end - timedelta(hours=1),
        EndTime=end,
        Period=3600,
        Statistics=[statistic],
    )["Datapoints"]
    values = [float(point[statistic]) for point in points]
    if not values:
        return None
    return max(values) if statistic == "Maximum" else sum(values)


def _check_function_health(clients: Clients, function: str, now: float) -> list[Check]:
    age = _statistic(clients, function, "IteratorAge", "Maximum", now)
    errors = _statistic(clients, function, "Errors", "Sum", now)
    checks = []
    if age is None:
        checks.append(Check("iterator age (last hour)", OK, "no data: no records in the last hour"))
    elif age >= ITERATOR_AGE_ALARM_MS:
        checks.append(
            Check(
                "iterator age (last hour)",
                FAIL,
                f"the detector lags its stream by up to {age / 60_000:.0f} min",
                "records older than the maximum record age go to the DLQ: find the cause in the function's logs "
                "(errors, a final invocation that keeps failing, throttles)",
            )
        )
    else:
        checks.append(Check("iterator age (last hour)", OK, f"at most {age / 1000:.1f} s behind"))
    if errors:
        checks.append(
            Check(
                "function errors (last hour)",
                WARN,
                f"{errors:.0f} failed invocations (retried and bisected by Lambda)",
                "persistent errors end in the DLQ: see the logs ('malformed stream record', AWS errors)",
            )
        )
    else:
        checks.append(Check("function errors (last hour)", OK, "none"))
    return checks


def _check_layer(clients: Clients, function: str) -> Check:
    layers = [
        str(layer["Arn"])
        for layer in clients.lambda_.get_function_configuration(FunctionName=function).get("Layers", [])
    ]
    name = "Powertools layer"
    try:
        expected = clients.ssm.get_parameter(Name=POWERTOOLS_PARAMETER)["Parameter"]["Value"]
    except ClientError:
        return Check(name, WARN, f"cannot read {POWERTOOLS_PARAMETER} here; layers: {', '.join(layers) or 'none'}")
    if expected in layers:
        return Check(name, OK, f"Powertools {POWERTOOLS_VERSION}, as tested")
    return Check(
        name,
        WARN,
        f"the function's layers ({', '.join(layers) or 'none'}) are not Powertools {POWERTOOLS_VERSION} ({expected})",
        "redeploy without -c powertoolsLayerArn, or with the ARN above",
    )


# -- what only a deployed account shows: where the stream is, keys, the webhook secret ---------------
def _region_and_account(arn: str) -> tuple[str, str] | None:
    parts = arn.split(":")
    return (parts[3], parts[4]) if len(parts) >= 6 and parts[0] == "arn" else None


def _check_stream_location(mapping: dict[str, Any]) -> Check | None:
    """A stream of another region or account than the function's: Lambda cannot read it, and the function
    describes the table by name in its own account and region (indexes, TTL attribute)."""
    stream = str(mapping.get("EventSourceArn", ""))
    where, function = _region_and_account(stream), _region_and_account(str(mapping.get("FunctionArn", "")))
    if where is None or function is None or where == function:
        return None
    return Check(
        f"stream of {_table_of(stream)}",
        FAIL,
        f"the stream is in {where[0]}, account {where[1]}; the function in {function[0]}, account {function[1]}",
        f"deploy the stack with credentials of account {where[1]} in {where[0]} (AWS_REGION={where[0]})",
    )


class _RoleOf:
    """The name of a function's execution role, read once and only if a check needs it."""

    def __init__(self, clients: Clients, function: str | None) -> None:
        self._clients, self._function, self._name = clients, function, ""

    def __call__(self) -> str | None:
        if not self._function:
            return None
        if not self._name:
            configuration = self._clients.lambda_.get_function_configuration(FunctionName=self._function)
            self._name = str(configuration.get("Role", "")).rsplit("/", 1)[-1]
        return self._name or None


def _role_allows(clients: Clients, role: str, action: str, resource: str) -> bool:
    """Whether an inline policy of ``role`` (the stack grants through inline policies) allows ``action`` on
    ``resource``, with IAM's wildcards (``*``, ``?``) in the policy's actions and resources."""
    from fnmatch import fnmatchcase

    pages = clients.iam.get_paginator("list_role_policies").paginate(RoleName=role)
    for name in (name for page in pages for name in page.get("PolicyNames", [])):
        document = clients.iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        if isinstance(document, str):
            from urllib.parse import unquote

            document = json.loads(unquote(document))
        for statement in _as_list(document.get("Statement")):
            if statement.get("Effect") != "Allow":
                continue
            actions = [str(a).lower() for a in _as_list(statement.get("Action"))]
            resources = [str(r) for r in _as_list(statement.get("Resource"))]
            if any(fnmatchcase(action.lower(), a) for a in actions) and any(
                fnmatchcase(resource, r) for r in resources
            ):
                return True
    return False


def _customer_key(clients: Clients, key: str) -> str | None:
    """The key's ARN if it is a customer-managed key (an AWS-managed key needs no grant of ours)."""
    metadata = clients.kms.describe_key(KeyId=key)["KeyMetadata"]
    return str(metadata["Arn"]) if metadata.get("KeyManager") == "CUSTOMER" else None


def _check_source_key(clients: Clients, mapping: dict[str, Any], role: Callable[[], str | None]) -> list[Check]:
    """A source table under a customer-managed key: the consumer needs kms:Decrypt on it (-c tableKmsKeyArns)."""
    table = _table_of(str(mapping.get("EventSourceArn", "")))
    if clients.kms is None or clients.iam is None:
        return []
    try:
        sse = clients.dynamodb.describe_table(TableName=table)["Table"].get("SSEDescription") or {}
    except ClientError:
        return []  # reported by the stream check
    key = sse.get("KMSMasterKeyArn")
    if sse.get("SSEType") != "KMS" or not key:
        return []
    name = f"encryption of {table}"
    try:
        customer_key = _customer_key(clients, str(key))
        role_name = role()
        if customer_key is None or role_name is None:
            return [Check(name, OK, "AWS-managed KMS key" if customer_key is None else f"key {customer_key}")]
        allowed = _role_allows(clients, role_name, "kms:Decrypt", customer_key)
    except ClientError as error:
        return [Check(name, WARN, f"cannot check the table's key and the consumer's role here: {error}")]
    if allowed:
        return [Check(name, OK, f"customer-managed key {customer_key}; the consumer may decrypt with it")]
    return [
        Check(
            name,
            FAIL,
            f"the table is encrypted with the customer-managed key {customer_key}, which the consumer may not use: "
            "its stream cannot be read",
            f"redeploy with -c tableKmsKeyArns={customer_key} (the key policy must allow this account's IAM policies)",
        )
    ]


def _check_webhook_secret(clients: Clients, stack: StackView) -> list[Check]:
    """The webhook subscriber can read its secret: the secret exists, the role's grant matches its complete
    ARN (a partial ARN was once granted as given), and a customer-managed key is granted too."""
    senders = [physical for logical, physical in stack.of_type("AWS::Lambda::Function") if "WebhookSender" in logical]
    if not senders or clients.secretsmanager is None or clients.iam is None or clients.kms is None:
        return []
    name = "webhook secret"
    configuration = clients.lambda_.get_function_configuration(FunctionName=senders[0])
    secret = configuration.get("Environment", {}).get("Variables", {}).get("WEBHOOK_SECRET_ARN", "")
    role = str(configuration.get("Role", "")).rsplit("/", 1)[-1]
    try:
        description = clients.secretsmanager.describe_secret(SecretId=secret)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            return [
                Check(
                    name,
                    FAIL,
                    f"no secret {secret} here",
                    "create it, or redeploy with the right -c slackWebhookSecretArn",
                )
            ]
        return [Check(name, WARN, f"cannot describe {secret} here: {code}")]
    complete = str(description["ARN"])
    try:
        if not _role_allows(clients, role, "secretsmanager:GetSecretValue", complete):
            return [
                Check(
                    name,
                    FAIL,
                    f"the subscriber's role may not read {complete} (granted on another ARN): alerts are not posted",
                    "redeploy this version of the stack (a partial ARN is granted with its 6-character suffix)",
                )
            ]
        key = description.get("KmsKeyId")
        customer_key = _customer_key(clients, str(key)) if key else None
        if customer_key and not _role_allows(clients, role, "kms:Decrypt", customer_key):
            return [
                Check(
                    name,
                    FAIL,
                    f"the secret is encrypted with the customer-managed key {customer_key}, which the subscriber may "
                    "not use: alerts are not posted",
                    f"redeploy with -c slackWebhookKeyArn={customer_key}",
                )
            ]
    except ClientError as error:
        return [Check(name, WARN, f"cannot check the subscriber's role or the secret's key here: {error}")]
    return [Check(name, OK, "the subscriber may read it" + (" and decrypt it" if key else ""))]


# -- queues and the topic ---------------------------------------------------------------------------
def _queue_depth(clients: Clients, url: str) -> int:
    attributes = clients.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes.get("ApproximateNumberOfMessages", 0)) + int(
        attributes.get("ApproximateNumberOfMessagesNotVisible", 0)
    )


def _check_queues(clients: Clients, stack: StackView) -> list[Check]:
    dlq = stack.outputs.get("DeadLetterQueueUrl")
    checks = []
    for logical, url in stack.of_type("AWS::SQS::Queue"):
        depth = _queue_depth(clients, url)
        stream_dlq = url == dlq
        name = "stream DLQ" if stream_dlq else f"undelivered alerts ({logical})"
        if not depth:
            checks.append(Check(name, OK, "empty"))
        elif stream_dlq:
            checks.append(
                Check(
                    name,
                    FAIL,
                    f"{depth} batches given up on (their records are not counted)",
                    f"hotkeys redrive --stack {stack.name} (within the stream's 24 h)",
                )
            )
        else:
            checks.append(
                Check(
                    name,
                    FAIL,
                    f"{depth} alert messages could not be delivered",
                    "check the subscriber; the messages keep the alerts",
                )
            )
    return checks


def _allows_cloudwatch(policy: dict[str, Any]) -> bool:
    for statement in _as_list(policy.get("Statement")):
        principal = statement.get("Principal", {})
        services = _as_list(principal.get("Service")) if isinstance(principal, dict) else []
        if (
            statement.get("Effect") == "Allow"
            and "cloudwatch.amazonaws.com" in services
            and {"sns:Publish", "SNS:Publish", "sns:*"} & set(_as_list(statement.get("Action")))
        ):
            return True
    return False


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _check_topic(clients: Clients, stack: StackView) -> list[Check]:
    topic = stack.outputs.get("AlertTopicArn")
    if not topic:
        return [Check("alert topic", FAIL, "the stack has no AlertTopicArn output", "redeploy")]
    attributes = clients.sns.get_topic_attributes(TopicArn=topic)["Attributes"]
    policy = json.loads(attributes.get("Policy") or "{}")
    checks = []
    if _allows_cloudwatch(policy):
        checks.append(Check("alarms → topic", OK, "CloudWatch may publish to the alert topic"))
    else:
        checks.append(
            Check(
                "alarms → topic",
                FAIL,
                "the topic policy does not allow cloudwatch.amazonaws.com to publish: alarm actions fail",
                "redeploy this version of the stack (it adds the Allow statement)",
            )
        )
    subscriptions = _subscriptions(clients, topic)
    confirmed = [s for s in subscriptions if s.get("SubscriptionArn", "").startswith("arn:")]
    pending = len(subscriptions) - len(confirmed)
    if confirmed:
        protocols = sorted({str(s.get("Protocol")) for s in confirmed})
        detail = f"{len(confirmed)} confirmed ({', '.join(protocols)})" + (f", {pending} pending" if pending else "")
        checks.append(Check("alert subscribers", OK, detail))
    else:
        checks.append(
            Check(
                "alert subscribers",
                WARN if pending else FAIL,
                f"no confirmed subscription ({pending} pending confirmation)" if pending else "nobody is subscribed",
                "confirm the e-mail AWS sent, or deploy with -c alertEmails=... / -c slackWorkspaceId=...",
            )
        )
    return checks


def _subscriptions(clients: Clients, topic: str) -> list[dict[str, Any]]:
    pages = clients.sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic)
    return [subscription for page in pages for subscription in page.get("Subscriptions", [])]


# -- TTL: the table's setting, DynamoDB's deletions, and what the items written carry ----------------------
def ttl_check(clients: Clients, table: str, written: Health | None, now: float) -> Check:
    """TTL on or off (DescribeTimeToLive), the items DynamoDB's TTL deleted in the last 24 h
    (``TimeToLiveDeletedItemCount``), beside the latest window's items written (``written``, if read)."""
    name = f"TTL of {table}"
    try:
        description = clients.dynamodb.describe_time_to_live(TableName=table).get("TimeToLiveDescription", {})
    except ClientError as error:
        return Check(name, WARN, f"cannot read it here: {error.response.get('Error', {}).get('Code', error)}")
    status = str(description.get("TimeToLiveStatus", "DISABLED"))
    attribute = description.get("AttributeName")
    if status not in ("ENABLED", "ENABLING") or not attribute:
        return Check(name, OK, f"{status}: no item expires (the TTL archive receives nothing from {table})")
    deleted = _ttl_deletions(clients, table, now)
    judged = sum(written.verdicts) if written is not None else 0
    ignored = {verdict: written.verdicts[verdict] for verdict in sorted(IGNORED)} if written is not None else {}
    if any(ignored.values()):
        parts = [f"{count:,} {ttl_problem(verdict, attribute)[0]}" for verdict, count in ignored.items() if count]
        fixes = [ttl_problem(verdict, attribute)[1] for verdict, count in ignored.items() if count]
        detail = f"on {attribute}; of {judged:,} items written in the latest window, " + ", ".join(parts)
        return Check(name, WARN, detail + ": TTL never deletes them", "; ".join(fixes))
    carried = judged - (written.verdicts[TtlVerdict.MISSING] if written is not None else 0)
    if written is not None and judged and not carried:
        return Check(
            name,
            WARN,
            f"on {attribute}, but none of the {judged:,} items written in the latest window carries it",
            f"set {attribute} (epoch seconds, a Number) on the items that should expire",
        )
    if deleted == 0 and carried:
        return Check(
            name,
            WARN,
            f"on {attribute} and items carry it, but DynamoDB's TTL deleted none in 24 h",
            "check that the values are epoch seconds in the past for expired items (TTL deletes within days)",
        )
    seen = "" if deleted is None else f"; {deleted:,.0f} items deleted by TTL in 24 h"
    return Check(name, OK, f"{status} on {attribute}{seen}")


def _ttl_deletions(clients: Clients, table: str, now: float) -> float | None:
    """The table's TimeToLiveDeletedItemCount over the last 24 h (None: not readable here)."""
    end = datetime.fromtimestamp(now, tz=UTC)
    query = {
        "Id": "ttl",
        "MetricStat": {
            "Metric": {
                "Namespace": NAMESPACE,
                "MetricName": "TimeToLiveDeletedItemCount",
                "Dimensions": [{"Name": TABLE_DIMENSION, "Value": table}],
            },
            "Period": 3600,
            "Stat": "Sum",
        },
        "ReturnData": True,
    }
    try:
        results = clients.cloudwatch.get_metric_data(
            MetricDataQueries=[query], StartTime=end - timedelta(hours=24), EndTime=end
        )["MetricDataResults"]
    except ClientError:
        return None
    return sum(float(value) for result in results for value in result.get("Values", []))


def _written(clients: Clients, stack: StackView, table: str) -> Health | None:
    """The items written to ``table`` in its latest stored window, merged over its shards (None: unread)."""
    stats = stack.outputs.get("StatsTableName")
    if clients.stats is None or not stats:
        return None
    reader = clients.stats(stats)
    try:
        latest = reader.latest_window(table)
        return None if latest is None else merged_health(reader.window_segments(table, latest))
    except (ClientError, WindowRetired):
        return None


# -- the stats table ----------------------------------------------------------------------------------
def _check_recent_windows(
    clients: Clients, stack: StackView, mappings: list[dict[str, Any]], window_seconds: int, now: float
) -> list[Check]:
    stats = stack.outputs.get("StatsTableName")
    if not stats:
        return [Check("stats table", FAIL, "the stack has no StatsTableName output", "redeploy")]
    since = int(now) - 86_400
    checks = []
    for table in sorted({_table_of(str(m.get("EventSourceArn", ""))) for m in mappings}):
        name = f"recent figures for {table}"
        found = _latest_window(clients, stats, table)
        latest = {table: found} if found is not None and found >= since else {}
        if table not in latest:
            checks.append(
                Check(
                    name,
                    WARN,
                    "no window in the last 24 h: no writes since the deploy, or nothing is counted",
                    "write to the table, then run doctor again; if still nothing, check the mapping above",
                )
            )
            continue
        age = now - (latest[table] + window_seconds)
        verdict = OK if age <= 3600 else WARN
        checks.append(
            Check(
                name,
                verdict,
                f"latest window {datetime.fromtimestamp(latest[table], tz=UTC):%Y-%m-%dT%H:%M:%SZ} "
                f"({max(0, age) / 60:.0f} min ago)",
            )
        )
    return checks


def _latest_window(clients: Clients, stats: str, table: str) -> int | None:
    """The latest window with a head of ``table``: the window-heads index, newest first, in each of the
    table's head buckets (its layout item; one bucket without one)."""
    layout = clients.dynamodb.get_item(TableName=stats, Key={"pk": {"S": LAYOUT_PK}, "sk": {"S": table}}).get("Item")
    counts = [int(pair["L"][1]["N"]) for pair in layout["counts"]["L"]] if layout and "counts" in layout else [1]
    latest: int | None = None
    for bucket in range(max(counts)):
        page = clients.dynamodb.query(
            TableName=stats,
            IndexName=HEADS_INDEX,
            KeyConditionExpression="heads_pk = :pk",
            ExpressionAttributeValues={":pk": {"S": heads_pk(table, bucket)}},
            ScanIndexForward=False,
            Limit=1,
        )
        for item in page.get("Items", []):
            latest = max(latest or 0, int(item["window_start"]["N"]))
    return latest


def failed(checks: Iterable[Check]) -> bool:
    return any(check.verdict == FAIL for check in checks)


def to_json(checks: list[Check]) -> list[dict[str, str]]:
    return [asdict(check) for check in checks]


ClientFactory = Callable[[str], Any]


def clients_from(make: ClientFactory) -> Clients:
    return Clients(
        cloudformation=make("cloudformation"),
        dynamodb=make("dynamodb"),
        streams=make("dynamodbstreams"),
        lambda_=make("lambda"),
        cloudwatch=make("cloudwatch"),
        sqs=make("sqs"),
        sns=make("sns"),
        ssm=make("ssm"),
        kms=make("kms"),
        iam=make("iam"),
        secretsmanager=make("secretsmanager"),
    )
