"""A deployment, emulated on one machine: the stream consumers of every shard and the judge on its
schedule, side by side in emulated time (``lanes``), against any AWS endpoint (in-process moto, a moto
server, or AWS itself).

What the stack deploys, in the order AWS runs it: each shard lineage's records through the event
source mapping (``esm``) into a container of its own (``wiring.build_ports``), and the judge
(``wiring.build_judge``) woken as deployed (``JudgeWakeUps``: its watchdog rule at a phase of the minute
drawn per run, and the chain of looks each look sends, ``alerts.look_chain``), from the first record on
and for ``tail_seconds`` after the last invocation. Every clock the code reads (when heads
are written, when the layout is read again, when messages are claimed, the judge's) is the emulated
one, and the judge's stream lag is each table's lagging shards' reports (``consumer.lag``). ``hotkeys replay``, the
benchmarks and the tests run this, so what they measure is what the deployment does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from hotkeys.deployment import EVENT_SOURCE, JUDGE_TIMEOUT_SECONDS
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts import look_chain
from hotkeys.detector.alerts.judge import Judge
from hotkeys.detector.alerts.ports import LookClaim, Publisher
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.lag import REPORT_EVERY_SECONDS
from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
from hotkeys.detector.domain.records import MalformedRecord, table_from_arn
from hotkeys.detector.handlers.wiring import build_judge, build_ports
from hotkeys.emulator.esm import ShardRun
from hotkeys.emulator.lanes import (
    EventSourceMapping,
    Invoke,
    Lane,
    Lineage,
    Ticker,
    TickerFactory,
    Turns,
    consume_side_by_side,
    event_second,
)

# How long the judge keeps looking after the last invocation: a table that stops writing has its
# incidents resolved within it (docs/decisions.md §64).
TAIL_SECONDS = 360

# How long SQS and Lambda's poller take to deliver a chain message once its delay has passed: drawn per
# message, up to this many seconds (not documented; a second covers what is commonly reported).
DELIVERY_SECONDS = 1.0

# How long before the first record the emulated deployment's judge starts (its watchdog's first run):
# a judge already looking every flush when the records come, as a deployed one is.
DEPLOYED_BEFORE_SECONDS = 60

# A container's handler, from its ports (default: the pipeline; the replay passes the Lambda handler).
HandlerFactory = Callable[[Ports], Invoke]


@dataclass
class Emulated:
    runs: list[list[ShardRun]]
    lanes: list[Lane]
    turns: Turns
    judge: Judge | None
    wake_ups: JudgeWakeUps | None = None  # the first judge's (its looks' lateness: ``wakes``)


@dataclass(frozen=True)
class Deployment:
    """What is deployed: the function's ``settings``, the AWS endpoint its containers and its judge are built
    on (``aws``), and where their alerts go (``publisher``; default: the settings' topic)."""

    settings: Settings
    aws: AwsClients
    publisher: Publisher | None = None


@dataclass(frozen=True)
class Containers:
    """The function's containers, one per lineage: what each runs (``handler``; default: the pipeline) on
    which ports (``ports``; default: built on ``aws_for(lineage)``, or on the deployment's clients)."""

    handler: HandlerFactory | None = None
    ports: Sequence[Ports] | None = None
    aws_for: Callable[[int], AwsClients] | None = None


@dataclass(frozen=True)
class Judging:
    """The judge, woken as deployed from ``start`` (default: the first record's second, when the lineages
    are lists; a lagging lineage reports its lag from then on too) until ``tail_seconds`` after the last
    invocation. ``tables``: the tables it watches (default: the lineages'); ``phase``: the second of the
    minute its watchdog rule fires at (default: drawn from the first record's second, as a deployment's
    is fixed when it is created); ``clients``: one judge on each of these, each woken as the one deployed
    judge is (every look made twice at once, by containers that each claimed it: worse than the claims
    allow), instead of one on the deployment's."""

    start: int | None = None
    tables: Sequence[str] = ()
    tail_seconds: float = TAIL_SECONDS
    phase: float | None = None
    clients: Sequence[AwsClients] = ()


DEPLOYED_JUDGE = Judging()


def plain_handler(settings: Settings) -> HandlerFactory:
    return lambda ports: lambda event: process_batch(parse_event(event), settings, ports).response()


def emulate(
    deployment: Deployment,
    lineages: Sequence[Lineage],
    *,
    mapping: EventSourceMapping | None = None,
    containers: Containers | None = None,
    judge: Judging | None = DEPLOYED_JUDGE,
    turns: Turns | None = None,
) -> Emulated:
    """Every lineage through ``mapping`` (default: as deployed, its tumbling window the function's) into a
    container of its own (``containers``), and the judge looking on its schedule (``judge``; None: no
    judge). ``turns``: the emulated clock (``turns.now``), when the caller reads it too."""
    turns = turns or Turns()
    clock = _now(turns)
    settings = deployment.settings
    mapping = mapping or EventSourceMapping()
    deployed = mapping.settings or dataclasses.replace(EVENT_SOURCE, tumbling_window_seconds=settings.window_seconds)
    containers = containers or Containers()
    ports = _ports(deployment, containers, len(lineages), clock)
    make = containers.handler or plain_handler(settings)
    handlers = [make(container) for container in ports]
    start = judge.start if judge is not None else None
    first = start if start is not None else _first_second(lineages)
    tickers = [
        backlog
        for number, behind in enumerate(mapping.delays)
        if first is not None and (backlog := _backlog_reports(ports[number], lineages[number], first, behind))
    ]
    judges: list[JudgeWakeUps] = []
    if judge is not None and settings.alert_topic_arn and first is not None:
        watched = tuple(judge.tables) or _tables(lineages)
        tickers += _judge_tickers(deployment, judge, watched, first, clock, judges)
    runs, lanes = consume_side_by_side(
        list(lineages), handlers, dataclasses.replace(mapping, settings=deployed), turns, tickers
    )
    return Emulated(runs, lanes, turns, judges[0].judge if judges else None, judges[0] if judges else None)


def _ports(deployment: Deployment, containers: Containers, count: int, clock: Callable[[], float]) -> Sequence[Ports]:
    """Each container's ports: the given ones, or one set each, on the emulated clock."""
    if containers.ports is not None:
        return containers.ports
    aws_for = containers.aws_for or (lambda _number: deployment.aws)
    return [
        build_ports(deployment.settings, aws_for(number), clock=clock, wall_clock=clock, publisher=deployment.publisher)
        for number in range(count)
    ]


def _judge_tickers(
    deployment: Deployment,
    judging: Judging,
    watched: tuple[str, ...],
    first: int,
    clock: Callable[[], float],
    woken: list[JudgeWakeUps],
) -> list[TickerFactory]:
    """A ticker per judge (``judging.clients``, or one on the deployment's), each woken as the deployed one
    is from ``first`` on; each judge's wake-ups go to ``woken`` once its lane is made."""
    settings = deployment.settings
    phase = judging.phase if judging.phase is not None else random.Random(first).uniform(0, 60)

    def on(clients: AwsClients) -> TickerFactory:
        def ticker(turns: Turns, number: int, lanes: list[Lane]) -> Ticker:
            found = build_judge(settings, clients, clock=clock, tables=watched, publisher=deployment.publisher)
            wake_ups = JudgeWakeUps(found, settings.flush_seconds, phase, random.Random(first + number))
            woken.append(wake_ups)
            # (deployed a while before the records: its chain runs when the first one comes)
            times = wake_ups.times(first - DEPLOYED_BEFORE_SECONDS)
            return Ticker(number, turns, times, wake_ups.wake, lanes, judging.tail_seconds)

        return ticker

    return [on(clients) for clients in judging.clients or [deployment.aws]]


@dataclass
class MemoryLookClaims:
    """The judge's look claims as the stats table keeps them (``look_chain_store``), in memory."""

    claims: dict[int, LookClaim] = field(default_factory=dict)

    def claim(self, claim: LookClaim) -> bool:
        return self.claims.setdefault(claim.due, claim) is claim

    def ended(self, due: int, at: float) -> None:
        self.claims[due] = dataclasses.replace(self.claims[due], ended_at=at)

    def latest(self) -> LookClaim | None:
        return self.claims[max(self.claims)] if self.claims else None


@dataclass
class JudgeWakeUps:
    """The deployed judge's wake-ups in emulated time: its watchdog rule every minute at ``phase``, and
    the messages its looks send themselves (delivered ``DELIVERY_SECONDS`` at most after their delay),
    each through ``look_chain.LookChain.wake`` with the claims of the stats table (``MemoryLookClaims``). A look takes
    no emulated time."""

    judge: Judge
    flush_seconds: int
    phase: float
    draw: random.Random
    claims: MemoryLookClaims = field(default_factory=MemoryLookClaims)
    messages: list[tuple[float, int, float]] = field(default_factory=list)  # (delivered at, due, sent at), a heap
    woken_for: tuple[int, float] | None = None  # the wake-up being made: a message's (due, sent at), or None
    wakes: list[look_chain.Wake] = field(default_factory=list)

    def times(self, first: int) -> Iterator[float]:
        fired = _first_firing(first, self.phase)
        while True:
            if self.messages and self.messages[0][0] <= fired:
                at, due, sent_at = heapq.heappop(self.messages)
                self.woken_for = (due, sent_at)
                yield at
            else:
                self.woken_for = None
                at, fired = fired, fired + 60
                yield at

    def wake(self, at: float) -> None:
        def send(due: int, delay_seconds: int, sent_at: float) -> None:
            delivered = at + delay_seconds + self.draw.uniform(0, DELIVERY_SECONDS)
            heapq.heappush(self.messages, (delivered, due, sent_at))

        chain = look_chain.LookChain(
            self.claims, send, lambda: at, lambda _s: None, self.flush_seconds, JUDGE_TIMEOUT_SECONDS
        )
        woke = chain.wake(self.judge.look, self.woken_for)
        self.wakes.append(woke)


def judge_times(first: int, flush_seconds: int, phase: float, delivery_seconds: float = 0.0) -> Iterator[float]:
    """The looks of a judge whose chain never breaks, its watchdog at ``phase``, from ``first`` on: the
    watchdog's first claim, then every look due after it (``delivery_seconds`` after its time)."""
    at = _first_firing(first, phase)
    while True:
        yield at
        _due, delay = look_chain.next_message(at, flush_seconds)
        at = at + delay + delivery_seconds


def _first_firing(first: float, phase: float) -> float:
    """The watchdog rule's first run at or after ``first``: at ``phase`` seconds into a minute."""
    fired = first - first % 60 + phase
    return fired + 60 if fired < first else fired


def _backlog_reports(ports: Ports, lineage: Lineage, first: int, behind: float) -> Callable[..., Ticker] | None:
    """A lineage running ``behind`` seconds behind its records was behind before its first record too (a
    reader with a backlog, not one that starts late): its container reports that lag every minute until its
    first invocation, as the deployed one does while it works through the older records (``consumer.lag``)."""
    tables = _tables([lineage])
    if behind <= 0 or ports.lag is None or not tables or not lineage:
        return None
    reporter, table, shard_id = ports.lag, tables[0], lineage[0][0]
    times = [first + step for step in range(0, int(behind), REPORT_EVERY_SECONDS)]

    def report(at: float) -> None:
        reporter.observe(table, shard_id, at - behind, at)

    return lambda turns, number, _lanes: Ticker(number, turns, times, report)


def _first_second(lineages: Sequence[Lineage]) -> int | None:
    seconds = [
        second
        for lineage in lineages
        for _shard, records in lineage
        if isinstance(records, list)
        for record in records[:1]
        if (second := event_second(record)) is not None
    ]
    return min(seconds, default=None)


def _tables(lineages: Sequence[Lineage]) -> tuple[str, ...]:
    """The tables of the lineages' first records (as the stack's WATCHED_TABLES names them)."""
    found: set[str] = set()
    for lineage in lineages:
        for _shard, records in lineage:
            if isinstance(records, list) and records and isinstance(records[0], dict):
                with contextlib.suppress(MalformedRecord):
                    found.add(table_from_arn(str(records[0].get("eventSourceARN", ""))))
    return tuple(sorted(found))


def _now(turns: Turns) -> Callable[[], float]:
    return lambda: turns.now
