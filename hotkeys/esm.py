"""An emulation of Lambda's event source mapping for one DynamoDB stream shard.

It follows the documented semantics the detector relies on:

* records of a shard are delivered in order, in batches of at most ``batch_size``;
* with a tumbling window, batches never span windows, each invocation carries the
  ``state`` the previous invocation of that window returned, and the window ends
  with a final invocation (``isFinalInvokeForWindow``) with no records;
* a function error retries the batch (split in two when ``bisect_batch_on_error``)
  with the state it had; a partial-batch response checkpoints before the lowest
  failed sequence number and retries from there, with the returned state;
* after ``retry_attempts`` retries, the batch's coordinates (not its records) go to
  the on-failure destination and the shard moves on.

``Chaos`` injects what production does to a consumer: lost responses (the work was
done but Lambda retries anyway), odd batch sizes and handler crashes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from infra.settings import EVENT_SOURCE, EventSourceSettings

Invoke = Callable[[dict[str, Any]], dict[str, Any]]


class Chaos:
    """No faults: a clean run. Subclasses override the decisions."""

    def batch_size(self, limit: int) -> int:
        return limit

    def lose_response(self) -> bool:
        """The invocation ran but Lambda never saw its answer (timeout, crash after the work)."""
        return False

    def overlap(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Records of a successful batch that at-least-once delivery sends once more."""
        return []


@dataclass
class RandomChaos(Chaos):
    rng: random.Random
    lose_probability: float = 0.2

    def batch_size(self, limit: int) -> int:
        return self.rng.randint(1, limit)

    def lose_response(self) -> bool:
        return self.rng.random() < self.lose_probability

    def overlap(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not batch or self.rng.random() >= self.lose_probability:
            return []
        return batch[self.rng.randrange(len(batch)) :]


@dataclass
class DeadLetter:
    """What Lambda sends to the on-failure destination: batch coordinates only."""

    shard_id: str
    start_sequence: str
    end_sequence: str
    batch_size: int
    reason: str
    stream_arn: str | None = None

    def to_message(self) -> dict[str, Any]:
        return {
            "requestContext": {"condition": self.reason, "approximateInvokeCount": 1},
            "DDBStreamBatchInfo": {
                "shardId": self.shard_id,
                "startSequenceNumber": self.start_sequence,
                "endSequenceNumber": self.end_sequence,
                "batchSize": self.batch_size,
                "streamArn": self.stream_arn,
            },
        }


@dataclass
class ShardRun:
    invocations: int = 0
    function_errors: int = 0
    partial_failures: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _window_groups(records: list[dict[str, Any]], seconds: int) -> list[tuple[int, list[dict[str, Any]]]]:
    groups: list[tuple[int, list[dict[str, Any]]]] = []
    for record in records:
        created = record.get("dynamodb", {}).get("ApproximateCreationDateTime") if isinstance(record, dict) else None
        start = (
            int(created) - int(created) % seconds
            if isinstance(created, int | float)
            else (groups[-1][0] if groups else 0)
        )
        if groups and groups[-1][0] == start:
            groups[-1][1].append(record)
        else:
            groups.append((start, [record]))
    return groups


class ShardConsumer:
    """Feeds one shard's records to ``invoke`` the way the event source mapping would."""

    def __init__(
        self,
        invoke: Invoke,
        shard_id: str,
        settings: EventSourceSettings = EVENT_SOURCE,
        chaos: Chaos | None = None,
        stream_arn: str | None = None,
    ) -> None:
        self._invoke = invoke
        self._shard_id = shard_id
        self._settings = settings
        self._chaos = chaos or Chaos()
        self._stream_arn = stream_arn
        self.run = ShardRun()

    def consume(self, records: list[dict[str, Any]]) -> ShardRun:
        seconds = self._settings.tumbling_window_seconds
        if not seconds:
            self._consume_window(records, None)
            return self.run
        for start, window_records in _window_groups(records, seconds):
            self._consume_window(window_records, (start, start + seconds))
        return self.run

    def _consume_window(self, records: list[dict[str, Any]], window: tuple[int, int] | None) -> None:
        state: dict[str, Any] = {}
        position = 0
        while position < len(records):
            size = self._chaos.batch_size(self._settings.batch_size)
            batch = records[position : position + size]
            state = self._deliver(batch, window, state)
            again = self._chaos.overlap(batch)
            if again:
                state = self._deliver(again, window, state)
            position += len(batch)
        if window is not None:
            self._final(window, state)

    def _final(self, window: tuple[int, int], state: dict[str, Any]) -> None:
        for _attempt in range(self._settings.retry_attempts + 1):
            outcome = self._call([], window, state, final=True)
            if outcome is not None:
                return
        self.run.dead_letters.append(DeadLetter(self._shard_id, "", "", 0, "RetryAttemptsExhausted", self._stream_arn))

    def _deliver(
        self, batch: list[dict[str, Any]], window: tuple[int, int] | None, state: dict[str, Any]
    ) -> dict[str, Any]:
        """Deliver one batch until it succeeds or is given up; returns the state to carry on with."""
        pending: list[tuple[list[dict[str, Any]], int]] = [(batch, 0)]
        while pending:
            current, attempts = pending.pop(0)
            response = self._call(current, window, state, final=False)
            if response is None:  # function error
                self.run.function_errors += 1
                if attempts >= self._settings.retry_attempts:
                    self._dead_letter(current, "RetryAttemptsExhausted")
                    continue
                if self._settings.bisect_batch_on_error and len(current) > 1:
                    middle = len(current) // 2
                    pending[:0] = [(current[:middle], attempts + 1), (current[middle:], attempts + 1)]
                else:
                    pending.insert(0, (current, attempts + 1))
                continue
            state = response.get("state", state) if window is not None else state
            failed = _lowest_failure(current, response)
            if failed is None:
                continue
            self.run.partial_failures += 1
            remaining = current[failed:]
            if attempts >= self._settings.retry_attempts:
                self._dead_letter(remaining, "RetryAttemptsExhausted")
                continue
            pending.insert(0, (remaining, attempts + 1))
        return state

    def _dead_letter(self, records: list[dict[str, Any]], reason: str) -> None:
        sequences = [
            str(r["dynamodb"]["SequenceNumber"])
            for r in records
            if isinstance(r, dict) and isinstance(r.get("dynamodb"), dict) and "SequenceNumber" in r["dynamodb"]
        ]
        self.run.dead_letters.append(
            DeadLetter(
                shard_id=self._shard_id,
                start_sequence=sequences[0] if sequences else "",
                end_sequence=sequences[-1] if sequences else "",
                batch_size=len(records),
                reason=reason,
                stream_arn=self._stream_arn,
            )
        )

    def _call(
        self,
        records: list[dict[str, Any]],
        window: tuple[int, int] | None,
        state: dict[str, Any],
        *,
        final: bool,
    ) -> dict[str, Any] | None:
        event: dict[str, Any] = {"Records": records}
        if window is not None:
            event.update(
                {
                    "window": {"start": _iso(window[0]), "end": _iso(window[1])},
                    "state": state,
                    "shardId": self._shard_id,
                    "eventSourceARN": self._stream_arn,
                    "isFinalInvokeForWindow": final,
                    "isWindowTerminatedEarly": False,
                }
            )
        while True:
            self.run.invocations += 1
            try:
                response = self._invoke(event)
            except Exception:
                return None
            if window is not None and not isinstance(response.get("state"), dict):
                return None  # Lambda treats a tumbling-window response without state as a failure
            if not self._chaos.lose_response():
                return response
            # Lost: Lambda re-sends the same event, with the same input state.


def _lowest_failure(batch: list[dict[str, Any]], response: dict[str, Any]) -> int | None:
    failures = response.get("batchItemFailures") or []
    if not failures:
        return None
    positions = {r.get("dynamodb", {}).get("SequenceNumber"): i for i, r in enumerate(batch) if isinstance(r, dict)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, dict) else None
        if identifier not in positions:
            return 0  # an unknown identifier fails the whole batch
        indexes.append(positions[identifier])
    return min(indexes)
