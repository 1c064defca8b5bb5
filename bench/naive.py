"""The baseline: a hand-written stream consumer as people usually write it.

Every record is deserialized with Powertools' data classes (boto3's
TypeDeserializer underneath), sized by its JSON length, and counted with one
UpdateItem per record (doubling the source table's write cost).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.utilities.data_classes import DynamoDBStreamEvent


def naive_handler(event: dict[str, Any], counters: Any, window_seconds: int = 60) -> int:
    updates = 0
    for record in DynamoDBStreamEvent(event).records:
        stream = record.dynamodb
        if stream is None:
            continue
        keys = stream.keys or {}
        images = [image for image in (stream.new_image, stream.old_image) if image]
        size = max((len(json.dumps(image, default=str)) for image in images), default=0)
        created = int(stream.approximate_creation_date_time or 0)
        window = created - created % window_seconds
        counters.update_item(
            Key={"pk": f"{window}#{next(iter(keys.values()), '')}"},
            UpdateExpression="ADD wcu :w, writes :one",
            ExpressionAttributeValues={":w": max(1, -(-size // 1024)), ":one": 1},
        )
        updates += 1
    return updates
