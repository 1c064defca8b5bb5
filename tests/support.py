"""Record builders for tests: real Lambda-format DynamoDB stream records."""

from __future__ import annotations

from typing import Any

import boto3

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import Alert
from hotkeys.detector.alerts.rules import Reason
from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

TABLE = "orders"


def payload_for(size_bytes: int) -> str:
    """A string that brings an item ({pk, payload}) to about ``size_bytes``."""
    return "x" * max(0, size_bytes)


def create_source_table(
    name: str,
    view: str | None = "NEW_AND_OLD_IMAGES",
    *,
    status_index: bool = False,
    status_projection: str = "KEYS_ONLY",
    endpoint_url: str | None = None,
) -> str | None:
    """A table keyed by ``pk`` (on the current backend, or ``endpoint_url``), with a stream of
    ``view`` (None: no stream) and, with ``status_index``, ``by-status``: a GSI on ``status``
    projecting ``status_projection``; returns the stream's ARN."""
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url)
    stream = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": view}} if view else {}
    definitions = [{"AttributeName": "pk", "AttributeType": "S"}]
    indexes: dict[str, Any] = {}
    if status_index:
        definitions.append({"AttributeName": "status", "AttributeType": "S"})
        indexes["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "by-status",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": status_projection},
            }
        ]
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=definitions,
        BillingMode="PAY_PER_REQUEST",
        **stream,
        **indexes,
    )
    return dynamodb.describe_table(TableName=name)["Table"].get("LatestStreamArn")


def write_record(
    key: str,
    position: int,
    event_time: int,
    *,
    table: str = TABLE,
    payload_bytes: int = 100,
    event_name: str = "MODIFY",
    shard: int = 0,
) -> dict[str, Any]:
    image = {"pk": key, "payload": payload_for(payload_bytes)}
    return stream_record(
        ItemChange(
            event_name=event_name,
            keys={"pk": key},
            new_image=None if event_name == "REMOVE" else image,
            old_image=None if event_name == "INSERT" else image,
        ),
        table=table,
        sequence=sequence_number(shard, position),
        event_time=event_time,
    )


def ttl_record(key: str, position: int, event_time: int, *, table: str = TABLE, shard: int = 0) -> dict[str, Any]:
    return stream_record(
        ItemChange(
            event_name="REMOVE",
            keys={"pk": key},
            old_image={"pk": key, "expireAt": event_time - 3600, "payload": "old"},
            ttl_delete=True,
        ),
        table=table,
        sequence=sequence_number(shard, position),
        event_time=event_time,
    )


def wcu_of(payload_bytes: int, key: str) -> int:
    size = len("pk") + len(key) + len("payload") + payload_bytes
    return max(1, -(-size // 1024))


# A typical alert: event#123 of orders at 930 WCU/s, 93% of the partition limit.
ORDERS_ALERT = Alert(
    table="orders",
    key="event#123",
    window_start=1_796_083_200,
    window_seconds=60,
    wcu=55_800,
    wcu_per_second=930.0,
    partition_wcu_limit=1000,
    share=0.42,
    reason=Reason.PARTITION_LIMIT,
    status=Message.FIRING,
    peak_wcu_per_second=930.0,
    at_most_wcu_per_second=930.0,
    alert_wcu_per_second=800.0,
    suggested_shards=2,
)


class Routed:
    """One DynamoDB client as the code under test sees it: Contributor Insights calls (which moto 5.2 does not
    model) to a client under botocore's Stubber, every other call to ``rest`` (moto)."""

    def __init__(self, rest: Any, insights: Any) -> None:
        self._rest, self._insights = rest, insights

    def __getattr__(self, name: str) -> Any:
        return getattr(self._insights if "contributor_insights" in name else self._rest, name)


class Split:
    """One client as the code under test sees it: the operations named in ``names`` (method names) to ``to``,
    every other call to ``rest`` (e.g. a Lambda client under Stubber, its ListEventSourceMappings on moto)."""

    def __init__(self, rest: Any, to: Any, *names: str) -> None:
        self._rest, self._to, self._names = rest, to, frozenset(names)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._to if name in self._names else self._rest, name)


def layouts_of(stats: Any, window_seconds: int = 60) -> Any:
    """A consumer container's layouts (``layout.LayoutCache``) over a ``DynamoStatsStore``: what
    ``wiring.build_ports`` gives the pipeline, so the tables it counts are registered for ``top``."""
    from hotkeys.detector.consumer.layout import LayoutCache

    return LayoutCache(stats.layout, lambda: 0.0, window_seconds, lambda fresh: stats.save_layout(None, fresh))
