"""A table's stream shards consumed side by side, in emulated time, through the ESM emulation, with the
judge looking on its own clock.

``hotkeys.emulator.esm`` feeds one shard lineage at a time and has no clock: run one lineage after the
other and the last one reads the others' whole future from the stats table. Here every lineage
(a shard, then its child after a rollover: ``consume_lineage``) runs in its own thread, and
``Turns`` lets exactly one invocation run at a time, the one with the earliest emulated time, so an
invocation sees what every invocation before it in emulated time stored, and nothing after. A
``Ticker`` is a lane of its own that acts at given times (the judge's looks).

The emulated time of an invocation (the emulation has none of its own), stated once here:

* A record's time is the second it was inserted into its stream (``positions``: a DynamoDB stream record's
  creation time, a Kinesis record's arrival time).
* Batches are cut as the event source mapping cuts them: at ``batch_size`` records, at Lambda's
  6 MB invocation payload (the records' JSON, estimated from their strings), or when the records span
  the batching window (``EventSourceSettings.max_batching_window_seconds``, W): a batch holds the records whose event
  time is before its first record's plus W (``Lane.batch_size``; a test's own odd batch sizes
  apply below that). Batches never span tumbling windows.
* A batch cut by size or payload is invoked when it filled: at the end of its last record's event second
  (last + 1). Any other batch waits out the batching window: its first record's event second + W.
  ``ApproximateCreationDateTime`` is whole seconds, rounded down, so a record written at t.9 reads
  t: the figures are in the stream's own whole seconds.
* A window's final invocation (no records) runs at the window's end, or at the shard's end if
  the shard ends first (a rollover: "When the shard ends, Lambda considers the window closed").
* A retry, a bisected half or a redelivered overlap runs at the same time as the invocation before
  it on that lineage (never earlier), or ``retry_seconds`` later per earlier attempt of the same
  batch (a function that times out: ``Lane.retry_seconds``).
* A lineage may run ``delay_seconds`` behind its records (a shard out of step with its siblings:
  every one of its invocations that much later; ``emulation`` has its container report that lag from the
  first record on, as a reader with a backlog does).
* A lane's container reports its shard's lag as the deployed one does (``consumer.lag``), on the
  emulated clock: the judge reads each table's lag from those reports.
* Not modelled: the poller's polling interval, the function's duration, SNS delivery. Each is under
  a second in a healthy deployment.

Records stream: a lane holds the records of the batch it is cutting and the next one, never a
shard's whole input. Each lineage has its own container (its own ``Ports``).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hotkeys.deployment import EVENT_SOURCE, EventSourceSettings
from hotkeys.emulator.esm import Deliveries, Delivery, ShardRun, consume_lineage
from hotkeys.emulator.positions import inserted_second, sequence_of

# "6 MB each for request and response (synchronous)": an event source mapping's batch must fit.
PAYLOAD_LIMIT = 6 * 1024 * 1024
Invoke = Callable[[dict[str, Any]], dict[str, Any]]
Lineage = Sequence[tuple[str, Iterable[dict[str, Any]]]]


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

    def earliest_other(self, lane: int) -> float:
        """The earliest time another lane waits for (inf: none waits). Called by the lane whose turn it is:
        every other running lane then waits."""
        with self._lock:
            return min((at for other, at in self._waiting.items() if other != lane), default=math.inf)

    def running(self, lanes: Iterable[int]) -> bool:
        """Whether any of ``lanes`` is still running."""
        with self._lock:
            return any(lane in self._active for lane in lanes)

    def wait_turn(self, lane: int, at: float) -> None:
        """Blocks until every other running lane waits for a later (time, lane)."""
        event = self._events[lane]
        with self._lock:
            event.clear()
            self._waiting[lane] = at
            self._dispatch()
        event.wait()
        self.now = max(self.now, at)

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


# A record's insertion second (``positions``: DynamoDB Streams' creation time, a Kinesis record's arrival).
event_second = inserted_second
_sequence = sequence_of


@dataclass
class _Ahead:
    """One shard's records not yet delivered, read from its source as the lane needs them."""

    source: Iterator[Any]
    buffer: deque[tuple[Any, int, int]] = field(default_factory=deque)  # (record, event second, JSON bytes)
    done: bool = False
    last_time: int = 0

    def fill(self, count: int) -> bool:
        """At least ``count`` records buffered (False: the source ran out first)."""
        while len(self.buffer) < count and not self.done:
            try:
                record = next(self.source)
            except StopIteration:
                self.done = True
                break
            second = event_second(record)
            self.last_time = second if second is not None else self.last_time
            self.buffer.append((record, self.last_time, _json_bytes(record)))
        return len(self.buffer) >= count

    def first_time(self) -> float:
        """The event second of the oldest record not yet delivered (inf: none left)."""
        return float(self.buffer[0][1]) if self.fill(1) else math.inf


@dataclass
class Lane(Deliveries):
    """One lineage's batching, clock and invocations (its ``Deliveries``: the emulation asks it for batch sizes)."""

    number: int
    turns: Turns
    lineage: Lineage
    inner: Deliveries
    settings: EventSourceSettings
    # Each further attempt of a failed batch runs this much later (0: retries are immediate).
    retry_seconds: float = 0.0
    # The lineage runs this far behind its records' time (a shard out of step with its siblings).
    delay_seconds: float = 0.0
    invocations: list[tuple[float, int]] = field(default_factory=list)  # (time, records)
    _shards: list[_Ahead] = field(default_factory=list)
    _current: int = 0
    _full: set[Any] = field(default_factory=set)
    _attempts: dict[Any, int] = field(default_factory=dict)
    # Per shard of the lineage: how many of its records were delivered (and left the buffer).
    _delivered: dict[int, int] = field(default_factory=dict)
    _last_at: float = 0.0

    def __post_init__(self) -> None:
        self._shards = [_Ahead(iter(records)) for _shard, records in self.lineage]

    def feeds(self) -> list[tuple[str, Iterator[Any]]]:
        """The lineage as the emulation consumes it: each shard's records, read through this lane."""
        return [(shard_id, self._feed(number)) for number, (shard_id, _records) in enumerate(self.lineage)]

    def _feed(self, number: int) -> Iterator[Any]:
        ahead = self._shards[number]
        position = 0
        self._current = number
        while True:
            # Records before ``position`` were handed out; the buffer drops them once delivered (``at``).
            offset = position - self._delivered.get(number, 0)
            if not ahead.fill(offset + 1):
                return
            yield ahead.buffer[offset][0]
            position += 1

    @property
    def last_at(self) -> float:
        """The emulated time of this lane's latest invocation."""
        return self._last_at

    # -- Deliveries ---------------------------------------------------------------------------
    def batch_size(self, limit: int) -> int:
        cap = min(limit, self.inner.batch_size(limit))
        ahead = self._shards[self._current]
        if not ahead.fill(1):
            return cap
        first = ahead.buffer[0][1]
        window = self._window(first)
        size, payload = 0, len(b'{"Records": []}')
        while ahead.fill(size + 1):
            _record, second, weight = ahead.buffer[size]
            if second >= first + self.settings.max_batching_window_seconds or self._window(second) != window:
                break
            if size == cap or payload + weight > PAYLOAD_LIMIT:
                self._full.add(_sequence(ahead.buffer[0][0]))  # cut by size: invoked as soon as it filled
                break
            payload += weight + 2
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

    def _end_of(self, shard_id: str) -> float:
        """When a shard of the lineage ends: its child's first record (the last shard never ends)."""
        for number, (own, _records) in enumerate(self.lineage[:-1]):
            if own == shard_id:
                return self._shards[number + 1].first_time()
        return math.inf

    def at(self, event: dict[str, Any]) -> float:
        """The emulated time of this invocation (module doc)."""
        records = event["Records"]
        if records:
            times = [second for record in records if (second := event_second(record)) is not None]
            start, end = (min(times), max(times)) if times else (int(self._last_at), int(self._last_at))
            first = _sequence(records[0])
            at = float(end + 1 if first in self._full else start + self.settings.max_batching_window_seconds)
            attempt = self._attempts.get(first, 0)
            self._attempts[first] = attempt + 1
            at += attempt * self.retry_seconds
            self._drop(records)
        else:
            closes = _epoch(event["window"]["end"])
            at = min(float(closes), self._end_of(str(event["shardId"])))
        at += self.delay_seconds
        self._last_at = max(self._last_at, at)
        return self._last_at

    def _drop(self, records: list[Any]) -> None:
        """Forget the buffered records up to the last one delivered (retries resend from the batch itself)."""
        ahead = self._shards[self._current]
        last = _sequence(records[-1])
        for position, (record, _second, _weight) in enumerate(ahead.buffer):
            if _sequence(record) == last:
                for _ in range(position + 1):
                    ahead.buffer.popleft()
                self._delivered[self._current] = self._delivered.get(self._current, 0) + position + 1
                return

    def wrap(self, invoke: Invoke) -> Invoke:
        def call(event: dict[str, Any]) -> dict[str, Any]:
            at = self.at(event)
            self.turns.wait_turn(self.number, at)
            self.invocations.append((at, len(event["Records"])))
            return invoke(event)

        return call


@dataclass
class Ticker:
    """A lane that acts at the given emulated times (the judge's looks), in turn with the shards' lanes;
    with ``watching``, it stops once those lanes are done and ``tail_seconds`` have passed since their
    last invocation (a deployment's clock runs on after its streams go quiet)."""

    number: int
    turns: Turns
    times: Iterable[float]
    action: Callable[[float], object]
    watching: list[Lane] = field(default_factory=list)
    tail_seconds: float = math.inf

    def run(self) -> None:
        if not self.watching and self.tail_seconds != math.inf:
            return  # nothing to watch: no stream, no clock to keep
        lanes = [lane.number for lane in self.watching]
        for at in self.times:
            last = max((lane.last_at for lane in self.watching), default=0.0)
            if self.watching and not self.turns.running(lanes) and at > last + self.tail_seconds:
                return
            self.turns.wait_turn(self.number, at)
            # A quiet stretch (records far apart in time: a clock-skewed capture) is not looked through
            # look by look: nothing happens in it but what the tail already covered.
            quiet = max(self.tail_seconds, QUIET_STRETCH_SECONDS)
            if self.watching and at - last > quiet and self.turns.earliest_other(self.number) - at > quiet:
                continue
            self.action(at)


TickerFactory = Callable[[Turns, int, list[Lane]], Ticker]
# A stretch of emulated time this long without an invocation on either side is skipped by a ticker.
QUIET_STRETCH_SECONDS = 3600


def _epoch(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


@dataclass(frozen=True)
class EventSourceMapping:
    """How the event source mapping delivers the lineages: its ``settings`` (None: as deployed,
    ``EVENT_SOURCE``, whose tumbling window is the function's: ``emulation`` takes it from the function's
    settings), the emulation's choices where the documentation leaves room (``delivery``, and each
    lineage's ``deliveries``: a clean run where none are given), each lineage's stream ARN, how far behind
    its records each lineage runs (``delays``) and how much later each further attempt of a failed batch
    runs (``retry_seconds``: module doc)."""

    settings: EventSourceSettings | None = None
    delivery: Delivery | None = None
    deliveries: Sequence[Deliveries] = ()
    stream_arns: Sequence[str | None] = ()
    delays: Sequence[float] = ()
    retry_seconds: float = 0.0


def consume_side_by_side(
    lineages: list[Lineage],
    handlers: list[Invoke],
    mapping: EventSourceMapping,
    turns: Turns | None = None,
    tickers: Sequence[TickerFactory] = (),
) -> tuple[list[list[ShardRun]], list[Lane]]:
    """Every lineage through the ESM emulation (its own handler, i.e. container), as ``mapping`` delivers
    it, one invocation at a time in emulated-time order; ``tickers`` (made with the turns, their lane
    number and the shards' lanes) act in the same order."""
    turns = turns or Turns()
    settings = mapping.settings or EVENT_SOURCE
    deliveries = list(mapping.deliveries) or [Deliveries() for _ in lineages]
    behind = list(mapping.delays) or [0.0] * len(lineages)
    lanes = [
        Lane(number, turns, lineage, inner, settings, mapping.retry_seconds, behind[number])
        for number, (lineage, inner) in enumerate(zip(lineages, deliveries, strict=True))
    ]
    clocks = [make(turns, len(lanes) + number, lanes) for number, make in enumerate(tickers)]

    arns = list(mapping.stream_arns) or [None] * len(lanes)

    def job(lane: Lane, handler: Invoke, arn: str | None) -> Callable[[], list[ShardRun]]:
        return lambda: consume_lineage(lane.wrap(handler), lane.feeds(), settings, lane, arn, mapping.delivery)

    jobs: list[Callable[[], Any]] = [
        job(lane, handler, arn) for lane, handler, arn in zip(lanes, handlers, arns, strict=True)
    ]
    jobs += [ticker.run for ticker in clocks]
    runs = turns.run(jobs)
    return runs[: len(lanes)], lanes
