"""AWS answered in-process for CPU benchmarks: real boto3 clients, canned HTTP answers, no server.

Lambda's function pays for building, signing and parsing its AWS requests (the client side), not
for the service's work; an in-process moto would add the server's CPU to the handler's. Here
botocore's ``before-send`` hook returns a minimal successful answer per operation, so everything
up to the wire and back is measured. Requests are counted per operation.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from botocore.awsrequest import AWSResponse, HeadersDict

from bench.shapes import table_description
from hotkeys.detector.adapters.aws import AwsClients

SNS_PUBLISH = (
    b'<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult>'
    b"<MessageId>00000000-0000-0000-0000-000000000000</MessageId></PublishResult>"
    b"<ResponseMetadata><RequestId>bench</RequestId></ResponseMetadata></PublishResponse>"
)


class _Body:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


class CannedAws:
    """Counts requests by operation and answers each with a minimal success."""

    def __init__(self, key_schema: list[dict[str, str]] | None = None, indexes: int = 0) -> None:
        self.requests: Counter[str] = Counter()
        self._schema = key_schema or [{"AttributeName": "pk", "KeyType": "HASH"}]
        self._indexes = indexes

    def attach(self, aws: AwsClients, services: tuple[str, ...] = ("dynamodb", "sns", "s3")) -> None:
        clients = [aws.client(name) for name in services] + [aws.resource("dynamodb").meta.client]
        for client in clients:
            # botocore sends the first answer a before-send handler returns (its stubs type handlers as
            # returning None).
            client.meta.events.register("before-send", self._answer)  # type: ignore[arg-type]

    def _answer(self, request: Any, **kwargs: Any) -> AWSResponse:
        operation = str(kwargs.get("event_name", "")).rsplit(".", 1)[-1]
        target = str(request.headers.get("X-Amz-Target", b"") or b"")
        if "DynamoDB" in target:
            operation = target.rsplit(".", maxsplit=1)[-1].strip("'")
        self.requests[operation] += 1
        if "DynamoDB" in target:
            return _response(request.url, {"Content-Type": "application/x-amz-json-1.0"}, self._dynamodb(operation))
        if "sns." in request.url:
            return _response(request.url, {"Content-Type": "text/xml"}, SNS_PUBLISH)
        return _response(request.url, {"ETag": '"bench"'}, b"")  # S3 PutObject

    def _dynamodb(self, operation: str) -> bytes:
        if "Query" in operation:
            return b'{"Items": [], "Count": 0, "ScannedCount": 0}'
        if "DescribeTable" in operation:
            return json.dumps(table_description(self._schema, self._indexes)).encode()
        return b"{}"


def _response(url: str, headers: dict[str, str], body: bytes) -> AWSResponse:
    # AWSResponse copies its headers into a HeadersDict, from any mapping; its stubs take HTTPHeaders only.
    return AWSResponse(url, 200, HeadersDict(headers), _Body(body))  # type: ignore[arg-type]
