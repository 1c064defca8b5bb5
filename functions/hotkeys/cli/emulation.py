"""A deployment, emulated on one machine: the stream consumers of every shard and the judge on its
schedule, side by side in emulated time (``lanes``), against any AWS endpoint (in-process moto, a moto
server, or AWS itself).

What the stack deploys, in the order AWS runs it: each shard lineage's records through the event
source mapping (``esm``) into a container of its own (``wiring.build_ports``), and the judge
(``wiring.build_judge``) looking every flush boundary plus ``LOOK_DELAY_SECONDS``, from the first
record on and for ``tail_seconds`` after the last invocation. Every clock the code reads (when heads
are written, when the layout is read again, when messages are claimed, the judge's) is the emulated
one, and the judge's stream lag is the lanes' (``lanes.stream_lag``). ``hotkeys replay``, the
benchmarks and the tests run this, so what they measure is what the deployment does.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from hotkeys.cli.esm import Deliveries, Delivery, ShardRun
from hotkeys.cli.lanes import Invoke, Lane, Lineage, Ticker, Turns, consume_side_by_side, event_second, stream_lag
from hotkeys.deployment import EVENT_SOURCE, EventSourceSettings
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts.judge import Judge
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import Ports, parse_event, process_batch
from hotkeys.detector.domain.records import MalformedRecord, table_from_arn
from hotkeys.detector.handlers.judge_app import look_times
from hotkeys.detector.handlers.wiring import build_judge, build_ports
from hotkeys.detector.ports import Publisher

# How long the judge keeps looking after the last invocation: a table that stops writing has its
# incidents resolved within it (docs/decisions.md §64).
TAIL_SECONDS = 360

# A container's handler, from its ports (default: the pipeline; the replay passes the Lambda handler).
HandlerFactory = Callable[[Ports], Invoke]


@dataclass
class Emulated:
    runs: list[list[ShardRun]]
    lanes: list[Lane]
    turns: Turns
    judge: Judge | None


def plain_handler(settings: Settings) -> HandlerFactory:
    return lambda ports: lambda event: process_batch(parse_event(event), settings, ports).response()


def emulate(
    settings: Settings,
    aws: AwsClients,
    lineages: Sequence[Lineage],
    *,
    start: int | None = None,
    deliveries: Sequence[Deliveries] | None = None,
    mapping: EventSourceSettings | None = None,
    delivery: Delivery | None = None,
    handler: HandlerFactory | None = None,
    judge: bool = True,
    tail_seconds: float = TAIL_SECONDS,
    retry_seconds: float = 0.0,
    stream_arns: Sequence[str | None] = (),
    tables: Sequence[str] = (),
    containers: Sequence[Ports] | None = None,
    aws_for: Callable[[int], AwsClients] | None = None,
    turns: Turns | None = None,
    delays: Sequence[float] = (),
    publisher: Publisher | None = None,
    judge_aws: Sequence[AwsClients] = (),
) -> Emulated:
    """Every lineage through the mapping and its own container, the judge looking on its schedule from
    ``start`` (default: the first record's second, when ``lineages`` are lists) until ``tail_seconds``
    after the last invocation. ``containers``: the ports of each lineage's container (default: one
    each, built on ``aws_for(lineage)`` or ``aws``); ``tables``: the judge's watched tables; ``turns``: the
    emulated clock (``turns.now``), when the caller reads it too; ``delays``: how far behind its records
    each lineage runs (shards out of step); ``publisher``: where every container's and the judge's alerts
    go (default: the settings' topic); ``judge_aws``: one judge on each of these clients, looking at the
    same times (runs that overlap), instead of one on ``aws``."""
    turns = turns or Turns()
    clock = _now(turns)
    mapping = mapping or dataclasses.replace(EVENT_SOURCE, tumbling_window_seconds=settings.window_seconds)
    make = handler or plain_handler(settings)
    if containers is None:
        containers = [
            build_ports(
                settings, aws_for(number) if aws_for else aws, clock=clock, wall_clock=clock, publisher=publisher
            )
            for number in range(len(lineages))
        ]
    handlers = [make(ports) for ports in containers]
    first = start if start is not None else _first_second(lineages)
    watched = tuple(tables) or _tables(lineages)
    judges: list[Judge] = []
    tickers = []
    if judge and settings.alert_topic_arn and first is not None:
        for clients in judge_aws or [aws]:

            def ticker(turns: Turns, number: int, lanes: list[Lane], clients: AwsClients = clients) -> Ticker:
                found = build_judge(
                    settings, clients, clock=clock, lag=stream_lag(lanes, turns), tables=watched, publisher=publisher
                )
                judges.append(found)
                times = judge_times(first, settings.flush_seconds)
                return Ticker(number, turns, times, lambda _at: found.look(), lanes, tail_seconds)

            tickers.append(ticker)
    runs, lanes = consume_side_by_side(
        list(lineages),
        handlers,
        list(deliveries) if deliveries is not None else [Deliveries() for _ in lineages],
        mapping,
        delivery,
        turns,
        tickers,
        retry_seconds,
        stream_arns,
        delays,
    )
    return Emulated(runs, lanes, turns, judges[0] if judges else None)


def judge_times(first: int, flush_seconds: int) -> Iterator[float]:
    """The judge's looks from the minute of ``first`` on (its schedule: ``judge_app.look_times``), for ever."""
    minute = first - first % 60
    while True:
        for at in look_times(minute, flush_seconds):
            if at >= first:
                yield at
        minute += 60


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
