"""A live table for ``hotkeys watch`` to read, on a local endpoint (docs/cli.md's ``watch`` sample).

``python -m events.live --endpoint-url http://127.0.0.1:5000`` creates ``tickets`` (a stream of
NEW_AND_OLD_IMAGES) and writes a ticket sale into it within one minute: 300 seats of 3 KB under
``event#42`` and 5 small profile updates for each of ``user#0`` to ``user#11``. It refuses an endpoint
that already has the table (its records would add to these), and any endpoint other than a local one:
it is a sample, not a load test of a real table.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.exceptions import BotoCoreError, ClientError

SEATS = 300
SEAT_BYTES = 3000  # 3 write units each
USERS = 12
UPDATES_PER_USER = 5
# The writes take a second or two: started this close to a minute's end, they wait for the next minute,
# so the sample's keys are in one window.
MINUTE_MARGIN_SECONDS = 10
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _items() -> list[dict[str, object]]:
    seats: list[dict[str, object]] = [
        {"pk": "event#42", "sk": f"seat#{seat:03d}", "blob": "x" * SEAT_BYTES} for seat in range(SEATS)
    ]
    updates = [
        {"pk": f"user#{user}", "sk": "profile", "update": update}
        for update in range(UPDATES_PER_USER)
        for user in range(USERS)
    ]
    return seats + updates


def create_table(dynamodb: Any, table: str, stream: bool = True) -> None:
    """An on-demand table keyed by ``pk`` and ``sk``, with a NEW_AND_OLD_IMAGES stream unless ``stream`` is False."""
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        **({"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}} if stream else {}),
    )


def make(endpoint_url: str, table: str, region: str) -> int:
    """Creates ``table`` on ``endpoint_url`` and writes the sale; returns the records its stream will hold."""
    create_table(boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region), table)
    left = 60 - time.time() % 60
    if left < MINUTE_MARGIN_SECONDS:
        time.sleep(left + 0.5)
    items = _items()
    writer = boto3.resource("dynamodb", endpoint_url=endpoint_url, region_name=region).Table(table)
    for item in items:  # (one PutItem each, in order: the stream holds them as written)
        writer.put_item(Item=item)
    return len(items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m events.live", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint-url", required=True, help="a local endpoint, e.g. http://127.0.0.1:5000")
    parser.add_argument("--table", default="tickets")
    parser.add_argument("--region", default="us-east-1")
    args = parser.parse_args(argv)
    if urlparse(args.endpoint_url).hostname not in LOCAL_HOSTS:
        print(f"events.live: {args.endpoint_url} is not a local endpoint (moto_server -p 5000)", file=sys.stderr)
        return 2
    try:
        written = make(args.endpoint_url, args.table, args.region)
    except ClientError as error:
        print(f"events.live: {args.table}: {error.response['Error'].get('Message', error)}", file=sys.stderr)
        return 2
    except BotoCoreError as error:
        print(f"events.live: {error}", file=sys.stderr)
        return 2
    print(f"{args.table}: {written} writes on {args.endpoint_url}; now `hotkeys watch --table {args.table}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
