"""For applications: name every throttled DynamoDB request's table, index, reason and partition key in an
EMF log line, even without Contributor Insights (issue #28).

    import boto3
    from hotkeys.throttle_hook import register

    dynamodb = boto3.client("dynamodb")
    register(dynamodb, partition_keys={"orders": "pk", "orders/by-status": "status"})

In Lambda, the line printed on stdout becomes a CloudWatch metric (``ThrottledRequests`` in namespace
``HotKeyDetector/Throttles``, by table, index and reason) and a searchable log record carrying the key.
Elsewhere pass ``emit`` (a function taking the line) to write it where the CloudWatch agent reads EMF.

How: two botocore event handlers on that client only. ``before-parameter-build`` keeps a reference to the
call's parameters in the request context (one dict assignment per call); ``after-call`` looks at the
parsed response and, only when its error code is a throttle, writes the line. The DynamoDB API reference
documents ``ThrottlingReasons`` (``reason``, ``resource``) on ``ProvisionedThroughputExceededException``
and ``RequestLimitExceeded``, and ``throttlingReasons`` (sic, lower case in the service model) on
``ThrottlingException``; both spellings are read. A reason reads ``<Table|Index><Read|Write><limit>``.

What it sees: the request's final outcome, after the SDK's own retries (``after-call`` is emitted once
per API call). An attempt the SDK retried successfully is not reported (the table's throttle metrics
count it). The partition key: from ``Key``/``Item`` of single-item calls, and from a Query's
``KeyConditionExpression`` when its partition-key condition is ``attribute = :value``; DynamoDB's request
does not say which key attribute is the partition key, so ``partition_keys`` maps ``table`` (or
``table/index``) to it; without it, every attribute of ``Key`` is written (a PutItem's ``Item`` holds every
attribute, so it then names none). Batch and transactional
calls carry many keys: the line names the table only.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAMESPACE = "HotKeyDetector/Throttles"
THROTTLE_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
_PARAMS = "hotkeys.throttle_hook.params"
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_EQUALS = re.compile(r"^\s*\(?\s*(#?[\w.-]+)\s*=\s*(:[\w-]+)")


class ThrottleHook:
    """The handlers registered on one client (``unregister`` removes them)."""

    def __init__(
        self, client: DynamoDBClient, partition_keys: Mapping[str, str], emit: Callable[[str], None], namespace: str
    ) -> None:
        self._client = client
        self._partition_keys = dict(partition_keys)
        self._emit = emit
        self._namespace = namespace
        self.emitted = 0

    def remember(self, params: Any, context: Any = None, **_: Any) -> None:
        if context is not None:
            context[_PARAMS] = params

    def after_call(self, parsed: Any = None, context: Any = None, model: Any = None, **_: Any) -> None:
        error = parsed.get("Error") if isinstance(parsed, dict) else None
        if not error or error.get("Code") not in THROTTLE_CODES:
            return
        params = context.get(_PARAMS) if isinstance(context, dict) else None
        self._emit(self.line(error["Code"], parsed, params if isinstance(params, dict) else {}, model))
        self.emitted += 1

    def line(self, code: str, parsed: Mapping[str, Any], params: Mapping[str, Any], model: Any = None) -> str:
        reasons = parsed.get("ThrottlingReasons") or parsed.get("throttlingReasons") or []
        first = reasons[0] if reasons and isinstance(reasons[0], Mapping) else {}
        resource = str(first.get("resource") or "")
        table = str(params.get("TableName") or _table_of(resource) or "")
        index = params.get("IndexName") or _index_of(resource)
        where = f"{table}/{index}" if index else table
        record: dict[str, Any] = {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": self._namespace,
                        "Dimensions": [["TableName", "Reason"], ["TableName", "IndexName", "Reason"]]
                        if index
                        else [["TableName", "Reason"]],
                        "Metrics": [{"Name": "ThrottledRequests", "Unit": "Count"}],
                    }
                ],
            },
            "TableName": table,
            **({"IndexName": str(index)} if index else {}),
            "Reason": str(first.get("reason") or code),
            "Resource": resource or None,
            "Operation": getattr(model, "name", None),
            "PartitionKey": _partition_key(params, self._partition_keys.get(where)),
            "ThrottledRequests": 1,
        }
        return json.dumps(record, default=str)

    def unregister(self) -> None:
        events = self._client.meta.events
        events.unregister("before-parameter-build.dynamodb", self.remember, unique_id=_unique("remember", self))
        events.unregister("after-call.dynamodb", self.after_call, unique_id=_unique("after", self))


def register(
    client: DynamoDBClient,
    *,
    partition_keys: Mapping[str, str] | None = None,
    emit: Callable[[str], None] | None = None,
    namespace: str = NAMESPACE,
) -> ThrottleHook:
    """Registers the hook on ``client`` (a boto3 DynamoDB client); returns it (``emitted`` counts lines)."""
    hook = ThrottleHook(client, partition_keys or {}, emit or _print, namespace)
    events = client.meta.events
    events.register("before-parameter-build.dynamodb", hook.remember, unique_id=_unique("remember", hook))
    events.register("after-call.dynamodb", hook.after_call, unique_id=_unique("after", hook))
    return hook


def _unique(name: str, hook: ThrottleHook) -> str:
    return f"hotkeys-throttle-hook-{name}-{id(hook)}"


def _print(line: str) -> None:
    print(line, flush=True)


def _table_of(resource: str) -> str | None:
    """``arn:aws:dynamodb:REGION:ACCOUNT:table/NAME[/index/INDEX]`` -> NAME."""
    _, found, rest = resource.partition(":table/")
    return rest.split("/", 1)[0] if found and rest else None


def _index_of(resource: str) -> str | None:
    _, found, rest = resource.partition("/index/")
    return rest.split("/", 1)[0] if found and rest else None


def _partition_key(params: Mapping[str, Any], attribute: str | None) -> Any:
    key = params.get("Key") or params.get("Item")
    if isinstance(key, Mapping):
        if attribute is not None:
            return _value(key.get(attribute))
        return None if "Item" in params and "Key" not in params else {k: _value(v) for k, v in key.items()}
    condition = params.get("KeyConditionExpression")
    if isinstance(condition, str) and attribute is not None:
        names = params.get("ExpressionAttributeNames") or {}
        values = params.get("ExpressionAttributeValues") or {}
        for clause in _AND.split(condition):
            match = _EQUALS.match(clause)
            if match and names.get(match.group(1), match.group(1)) == attribute:
                return _value(values.get(match.group(2)))
    return None


def _value(typed: Any) -> Any:
    """A key attribute value as text: S and N as written, B as base64 when boto3 was given bytes."""
    if isinstance(typed, Mapping) and len(typed) == 1:
        ((kind, raw),) = typed.items()
        if kind == "B" and isinstance(raw, (bytes, bytearray)):
            import base64

            return base64.b64encode(bytes(raw)).decode("ascii")
        return raw
    return typed
