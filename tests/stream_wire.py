"""DynamoDB Streams as boto3 returns them: GetRecords answers built on the wire, parsed by botocore.

moto's streams carry no ``userIdentity`` (so no TTL deletion) and no tumbling-window shards, so
code that reads a stream directly (``watch``, ``redrive``) is tested here with answers in the
API's own wire format (the response syntax of the DynamoDB Streams API Reference: ``Identity`` as
``{"PrincipalId", "Type"}``, binary as base64 text, ``ApproximateCreationDateTime`` as epoch
seconds) that botocore's own parser turns into what boto3 returns (datetime, bytes, the Identity
shape). Nothing the code under test sees is a dict typed in our spelling.

* ``as_get_records(records)``: Lambda-format records → the records of a parsed GetRecords answer.
* ``WireStream``: a stream served to real boto3 ``dynamodbstreams`` clients: each request is
  serialized and validated by botocore, each answer is a wire body botocore parses (errors too).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import boto3
import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.model import OperationModel, ServiceModel
from botocore.parsers import create_parser

SERVICE_ID = "dynamodb-streams"
# A loopback address nothing listens on: if the interception ever failed, nothing leaves the machine.
NOWHERE = "http://127.0.0.1:9"
HEADERS = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "wire"}


@functools.cache
def service_model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("dynamodbstreams")


def _members(shape_name: str) -> frozenset[str]:
    return frozenset(service_model().shape_for(shape_name).members)


_IDENTITY = {"principalId": "PrincipalId", "type": "Type"}  # Lambda's spelling → the API's


def wire_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """One Lambda-format record as GetRecords sends it (the API's ``Record`` shape).

    Lambda adds ``eventSourceARN`` (GetRecords has none) and spells the identity ``principalId``/
    ``type``; everything else is spelled alike, binary included (base64 text on both). Any other
    name is refused, so a typo cannot slip into what botocore is asked to parse.
    """
    wire: dict[str, Any] = {}
    for name, value in record.items():
        if name == "eventSourceARN":
            continue
        if name == "userIdentity":
            identity = {_IDENTITY.get(member, member): text for member, text in value.items()}
            _check(identity, "Identity")
            wire[name] = identity
            continue
        if name == "dynamodb":
            _check(value, "StreamRecord")
        wire[name] = value
    _check(wire, "Record")
    return wire


def _check(value: Mapping[str, Any], shape_name: str) -> None:
    unknown = set(value) - _members(shape_name)
    if unknown:
        raise ValueError(f"not members of the API's {shape_name}: {sorted(unknown)}")


def parse(operation: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """botocore's parser over a JSON wire body, with the operation's output shape."""
    parsed = _parse(service_model().operation_model(operation), 200, body)
    parsed.pop("ResponseMetadata", None)
    return parsed


def _parse(operation: OperationModel, status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    answer = {"status_code": status, "headers": dict(HEADERS), "body": json.dumps(body).encode()}
    parsed: dict[str, Any] = create_parser(service_model().protocol).parse(answer, operation.output_shape)
    return parsed


def get_records_answer(records: Sequence[Mapping[str, Any]], next_iterator: str | None) -> dict[str, Any]:
    """A whole parsed GetRecords answer (``NextShardIterator`` absent: the shard is closed)."""
    body: dict[str, Any] = {"Records": [wire_record(record) for record in records]}
    if next_iterator is not None:
        body["NextShardIterator"] = next_iterator
    return parse("GetRecords", body)


def as_get_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Lambda-format records → the same records as boto3's GetRecords returns them."""
    return list(get_records_answer(records, None)["Records"])


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


class WireStream:
    """One stream (its shards hold Lambda-format records, in sequence order) behind boto3 clients.

    ``parents`` names each child shard's parent; a shard with a child is closed (its last page has
    no ``NextShardIterator``), the others are open (empty pages past their newest record, for ever)
    unless listed in ``closed``. ``empty_pages_before``: every new iterator first answers that many
    empty pages with a next iterator, as the API reference says GetRecords may ("it might take
    multiple calls to get to a portion of the shard that contains stream records").
    """

    def __init__(
        self,
        arn: str,
        shards: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        parents: Mapping[str, str] | None = None,
        closed: Sequence[str] = (),
        empty_pages_before: int = 0,
    ) -> None:
        self.arn = arn
        self.shards = {shard: list(records) for shard, records in shards.items()}
        self.parents = dict(parents or {})
        self.closed = set(closed) | set(self.parents.values())
        self.empty_pages_before = empty_pages_before
        self.calls: list[str] = []

    def session(self) -> boto3.session.Session:
        """A session whose ``dynamodbstreams`` clients read this stream (other services: untouched)."""
        session = boto3.session.Session(region_name="us-east-1")
        # Answered at before-call, as botocore's Stubber does, but with botocore's own parser over a
        # wire body: the request is already validated and serialized, the answer is parsed as the
        # endpoint would. (At before-send, moto's in-process mock would take the request as well.)
        session.events.register_first(f"before-call.{SERVICE_ID}", self._answer)
        return session

    def client(self) -> Any:
        return self.session().client("dynamodbstreams", endpoint_url=NOWHERE)

    def _answer(self, model: OperationModel, params: Mapping[str, Any], **_: Any) -> tuple[AWSResponse, dict]:
        self.calls.append(model.name)
        raw = params.get("body") or b"{}"
        request = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        try:
            status, body = 200, getattr(self, f"_{model.name}")(request)
        except _ApiError as error:
            status, body = 400, {"__type": error.code, "message": error.message}
        response = AWSResponse(NOWHERE, status, HEADERS, _Body(json.dumps(body).encode()))
        return response, _parse(model, status, body)

    def _DescribeStream(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_arn(params)
        shards = []
        for shard, records in self.shards.items():
            numbers = [str(record["dynamodb"]["SequenceNumber"]) for record in records] or [f"{0:021d}"]
            span = {"StartingSequenceNumber": numbers[0]}
            if shard in self.closed:
                span["EndingSequenceNumber"] = numbers[-1]
            entry: dict[str, Any] = {"ShardId": shard, "SequenceNumberRange": span}
            if shard in self.parents:
                entry["ParentShardId"] = self.parents[shard]
            shards.append(entry)
        return {
            "StreamDescription": {
                "StreamArn": self.arn,
                "StreamStatus": "ENABLED",
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "Shards": shards,
            }
        }

    def _GetShardIterator(self, params: dict[str, Any]) -> dict[str, Any]:
        self._check_arn(params)
        shard = params["ShardId"]
        if shard not in self.shards:
            raise _ApiError("ResourceNotFoundException", f"Requested resource not found: Shard: {shard}")
        numbers = [int(record["dynamodb"]["SequenceNumber"]) for record in self.shards[shard]]
        kind = params["ShardIteratorType"]
        if kind == "TRIM_HORIZON":
            position = 0
        elif kind == "LATEST":
            position = len(numbers)
        else:
            wanted = int(params["SequenceNumber"])
            after = kind == "AFTER_SEQUENCE_NUMBER"
            position = next(
                (i for i, n in enumerate(numbers) if n > wanted or (n == wanted and not after)), len(numbers)
            )
        return {"ShardIterator": _iterator(shard, position, self.empty_pages_before)}

    def _GetRecords(self, params: dict[str, Any]) -> dict[str, Any]:
        shard, position, empties = json.loads(params["ShardIterator"])
        records = self.shards[shard]
        if empties:
            return {"Records": [], "NextShardIterator": _iterator(shard, position, empties - 1)}
        page = records[position : position + int(params.get("Limit", 1000))]
        after = position + len(page)
        body: dict[str, Any] = {"Records": [wire_record(record) for record in page]}
        if not (shard in self.closed and after >= len(records)):
            body["NextShardIterator"] = _iterator(shard, after, 0)
        return body

    def _check_arn(self, params: dict[str, Any]) -> None:
        if params.get("StreamArn") != self.arn:
            raise _ApiError("ResourceNotFoundException", f"Requested resource not found: {params.get('StreamArn')}")


class _ApiError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _iterator(shard: str, position: int, empties: int) -> str:
    return json.dumps([shard, position, empties])
