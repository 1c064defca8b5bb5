"""A table's stream shards consumed side by side, in emulated time, through the ESM emulation.

``hotkeys.cli.esm`` feeds one shard lineage at a time and has no clock: run one lineage after the
other and the last one reads the others' whole future from the stats table. Here every lineage
(a shard, then its child after a rollover: ``consume_lineage``) runs in its own thread, and
``Turns`` lets exactly one invocation run at a time, the one with the earliest emulated time, so an
invocation sees what every invocation before it in emulated time stored, and nothing after.

The emulated time of an invocation (the emulation has none of its own), stated once here:

* Batches are cut as the event source mapping cuts them: at ``batch_size`` records, at Lambda's
  6 MB invocation payload (the records' JSON, estimated from their strings), or when the records span the batching window
  (``EventSourceSettings.max_batching_window_seconds``, W): a batch holds the records whose event
  time is before its first record's plus W (``Lane.batch_size``; a chaos' own odd batch sizes
  apply below that). Batches never span tumbling windows.
* A batch cut by size or payload is invoked when it filled: at the end of its last record's event second
  (last + 1). Any other batch waits out the batching window: its first record's event second + W.
  ``ApproximateCreationDateTime`` is whole seconds, rounded down, so a record written at t.9 reads
  t: the figures are in the stream's own whole seconds.
* A window's final invocation (no records) runs at the window's end, or at the shard's end if
  the shard ends first (a rollover: "When the shard ends, Lambda considers the window closed").
* A retry, a bisected half or a redelivered overlap runs at the same time as the invocation before
  it on that lineage (never earlier): retries are immediate.
* Not modelled: the poller's polling interval, the function's duration, SNS delivery; and Lambda
  retries with no back-off. Each is under a second in a healthy deployment.

Each lineage has its own container (its own ``Ports``: an alert desk caches heads per container).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hotkeys.cli.esm import Chaos, Delivery, ShardRun, consume_lineage
from hotkeys.deployment import EventSourceSettings

# "6 MB each for request and response (synchronous)": an event source mapping's batch must fit.
PAYLOAD_LIMIT = 6 * 1024 * 1024
Invoke = Callable[[dict[str, Any]], dict[str, Any]]
Lineage = list[tuple[str, list[dict[str, Any]]]]


class Turns:
    """One invocation at a time across threads: the one with the earliest (time, lane).

    Once every running lane waits, the earliest is woken, and only it (a lane has its own event):
    waking every thread at each turn costs a hundred shards' run minutes of thread switches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, float] = {}
        self._active: set[int] = set()
        self._events: dict[int, threading.Event] = {}
        self.now = 0.0  # the emulated time of the invocation running

    def run(self, jobs: list[Callable[[], Any]]) -> list[Any]:
        """Runs each job in its own thread (job i is lane i); returns their results in order."""
        results: list[Any] = [None] * len(jobs)
        errors: list[BaseException] = []
        self._active = set(range(len(jobs)))
        self._events = {lane: threading.Event() for lane in range(len(jobs))}

        def job(lane: int) -> None:
            try:
                results[lane] = jobs[lane]()
            except BaseException as error:  # re-raised in the caller's thread
                errors.append(error)
            finally:
                with self._lock:
                    self._active.discard(lane)
                    self._waiting.pop(lane, None)
                    self._dispatch()

        threads = [threading.Thread(target=job, args=(lane,), daemon=True) for lane in range(len(jobs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return results

    def wait_turn(self, lane: int, at: float) -> None:
        """Blocks until every other running lane waits for a later (time, lane)."""
        event = self._events[lane]
        with self._lock:
            event.clear()
            self._waiting[lane] = at
            self._dispatch()
        event.wait()
        self.now = at

    def _dispatch(self) -> None:
        """Wakes the earliest waiting lane once no lane is between invocations (its next time unknown).
        Called with the lock held."""
        if not self._waiting or len(self._waiting) < len(self._active):
            return
        _at, lane = min((at, other) for other, at in self._waiting.items())
        del self._waiting[lane]
        self._events[lane].set()


def _json_bytes(value: Any) -> int:
    """About the bytes of ``value`` as JSON (its strings, names and punctuation), without serializing it."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(len(name) + 4 + _json_bytes(inner) for name, inner in value.items())
    if isinstance(value, list):
        return 2 + sum(_json_bytes(inner) + 2 for inner in value)
    return len(str(value))


def event_second(record: dict[str, Any]) -> int:
    return int(record["dynamodb"]["ApproximateCreationDateTime"])


def epoch(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


@dataclass
class Lane(Chaos):
    """One lineage's batching, clock and invocations (a ``Chaos`` so the emulation asks it for batch sizes)."""

    number: int
    turns: Turns
    lineage: Lineage
    inner: Chaos
    settings: EventSourceSettings
    invocations: list[tuple[float, int]] = field(default_factory=list)  # (time, records)
    _times: list[int] = field(default_factory=list)
    _shard: list[int] = field(default_factory=list)
    _position: dict[str, int] = field(default_factory=dict)
    _ends: dict[str, float] = field(default_factory=dict)
    _bytes: list[int] = field(default_factory=list)
    _full: dict[int, bool] = field(default_factory=dict)
    _next: int = 0
    _last_at: float = 0.0

    def __post_init__(self) -> None:
        for number, (shard_id, records) in enumerate(self.lineage):
            for record in records:
                self._position[record["dynamodb"]["SequenceNumber"]] = len(self._times)
                self._times.append(event_second(record))
                self._shard.append(number)
                self._bytes.append(_json_bytes(record))
            following = next((later for _s, later in self.lineage[number + 1 :] if later), None)
            self._ends[shard_id] = event_second(following[0]) if following else math.inf

    # -- Chaos ------------------------------------------------------------------------------
    def batch_size(self, limit: int) -> int:
        cap = min(limit, self.inner.batch_size(limit))
        start = self._next
        if start >= len(self._times):
            return cap
        first, shard, window = self._times[start], self._shard[start], self._window(self._times[start])
        size, payload = 0, len(b'{"Records": []}')
        while (
            start + size < len(self._times)
            and self._shard[start + size] == shard
            and self._times[start + size] < first + self.settings.max_batching_window_seconds
            and self._window(self._times[start + size]) == window
        ):
            if size == cap or payload + self._bytes[start + size] > PAYLOAD_LIMIT:
                self._full[start] = True  # cut by size: invoked as soon as it filled
                break
            payload += self._bytes[start + size] + 2
            size += 1
        return max(1, size)

    def lose_response(self) -> bool:
        return self.inner.lose_response()

    def overlap(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.inner.overlap(batch)

    def second_half_first(self) -> bool:
        return self.inner.second_half_first()

    # -- clock ------------------------------------------------------------------------------
    def _window(self, second: int) -> int:
        seconds = self.settings.tumbling_window_seconds or 1
        return second - second % seconds

    def at(self, event: dict[str, Any]) -> float:
        """The emulated time of this invocation (module doc)."""
        records = event["Records"]
        if records:
            first = self._position[records[0]["dynamodb"]["SequenceNumber"]]
            last = self._position[records[-1]["dynamodb"]["SequenceNumber"]]
            start, end = self._times[first], self._times[last]
            full = self._full.get(first, False)
            at = float(end + 1 if full else start + self.settings.max_batching_window_seconds)
            self._next = max(self._next, last + 1)
        else:
            closes = epoch(event["window"]["end"])
            at = min(float(closes), self._ends.get(str(event["shardId"]), math.inf))
        self._last_at = max(self._last_at, at)
        return self._last_at

    def wrap(self, invoke: Invoke) -> Invoke:
        def call(event: dict[str, Any]) -> dict[str, Any]:
            at = self.at(event)
            self.turns.wait_turn(self.number, at)
            self.invocations.append((at, len(event["Records"])))
            return invoke(event)

        return call


def consume_side_by_side(
    lineages: list[Lineage],
    handlers: list[Invoke],
    chaos: list[Chaos],
    settings: EventSourceSettings,
    delivery: Delivery | None = None,
    turns: Turns | None = None,
) -> tuple[list[list[ShardRun]], list[Lane]]:
    """Every lineage through the ESM emulation (its own handler, i.e. container, and chaos), one
    invocation at a time in emulated-time order."""
    turns = turns or Turns()
    lanes = [
        Lane(number, turns, lineage, inner, settings)
        for number, (lineage, inner) in enumerate(zip(lineages, chaos, strict=True))
    ]

    def job(lane: Lane, handler: Invoke) -> Callable[[], list[ShardRun]]:
        return lambda: consume_lineage(lane.wrap(handler), lane.lineage, settings, lane, delivery=delivery)

    runs = turns.run([job(lane, handler) for lane, handler in zip(lanes, handlers, strict=True)])
    return runs, lanes


def moto_environment(**extra: str) -> None:
    """The process environment of a benchmark on in-process moto: dummy credentials in us-east-1, no
    endpoint override, no X-Ray (``extra``: more variables)."""
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "POWERTOOLS_TRACE_DISABLED": "true",
            **extra,
        }
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
