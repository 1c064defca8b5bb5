"""The detector's own load at 1 to 10,000 stream shards: requests, and read and write units per partition
key of its stats table and window-heads index, second by second, from a fresh deploy.

Not a model of the code, the code's rules replayed at scale: every shard writes its snapshot at each
flush boundary (``FLUSH_SECONDS`` of event time, epoch-aligned, the last at the window's end) within a
second of it (a saturated shard is invoked about every second), under the head-bucket count its
container last read, and reads the layout again when ``layout.refresh_due`` says (its first read at
its first write, all containers together: a deploy). The judge is the real ``alerts.judge.Judge``, woken at every boundary plus
``LOOK_DELAY_SECONDS``: it reads heads through a window-heads index emulated here (a head is visible a
second after its write, one Query page per MB per bucket), decodes them with the real codec, merges and
raises the count (``layout.needed``) as deployed. Item and index-entry sizes are the real codec's
(``snapshots.to_item``) on snapshots of Zipf traffic (100,000 keys, 400-key summaries), sized by the
detector's own DynamoDB size rules.

The write log is then counted by the detector itself (``--own-counting``): each write becomes a stream
record of the stats table (its item before and after), replayed through the real pipeline against a
copy of the stats table's schema, and ``hotkeys top``'s figures give each partition key's peak rate,
the table's and the window-heads index's. Reads are not in a stream: they are summed from the log.

    python -m bench.scale                       # 1, 10, 100, 1,000 and 10,000 shards, 12 windows
    python -m bench.scale --shards 1000 --own-counting
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import platform
import random
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.lanes import moto_environment

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "scale-latest.json"
T0 = 1_796_083_200
RECORDS_PER_SHARD_SECOND = 1000  # a saturated shard: 1,000 WCU/s of 1 KB items
PARTITION_WRITE_LIMIT = 1000
PARTITION_READ_LIMIT = 3000
TARGET_SHARE_OF_LIMIT = 0.5
TABLE = "orders"
POOL = 24  # distinct snapshots the shards' heads are drawn from


@dataclass(frozen=True)
class Write:
    """A shard's snapshot write: when, which window, under which head bucket."""

    at: float
    shard: str
    window: int
    bucket: int
    final: bool


def pool_of(shard: str, sized: list[Any]) -> int:
    """The snapshot a shard's heads are drawn from (the same for every write of it)."""
    return zlib.crc32(shard.encode()) % len(sized)


@dataclass
class Log:
    """Units per (second, target, partition key), and requests per (source, operation)."""

    writes: dict[tuple[int, str, str], float] = field(default_factory=lambda: defaultdict(float))
    reads: dict[tuple[int, str, str], float] = field(default_factory=lambda: defaultdict(float))
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    snapshots: list[Write] = field(default_factory=list)

    def peaks(self, units: dict[tuple[int, str, str], float], since: float) -> dict[str, tuple[str, float]]:
        """Per target (the table, or an index), its busiest partition key and second, from ``since`` on."""
        best: dict[str, tuple[str, float]] = {}
        for (second, target, key), value in units.items():
            if second >= since and value > best.get(target, ("", -1.0))[1]:
                best[target] = (key, value)
        return best


def _snapshots(count: int, rng: random.Random) -> list[Any]:
    """Snapshots of a minute of a saturated shard's traffic: Zipf(1.1) over 100,000 keys."""
    from hotkeys.detector.config import Settings
    from hotkeys.detector.consumer.snapshots import Written, snapshot_of
    from hotkeys.detector.consumer.state import ShardState
    from hotkeys.detector.domain.records import Change, ChangeKind
    from hotkeys.detector.domain.summary import Counting

    counting = Counting.of(Settings(stats_table_name="s"))
    weights = [1 / (rank**1.1) for rank in range(1, 100_001)]
    found = []
    for number in range(count):
        state = ShardState()
        keys = rng.choices(range(100_000), weights, k=6000)
        for position, key in enumerate(keys):
            change = Change(TABLE, f"user#{key:07d}", T0 + position // 100, 1 + position, 1, ChangeKind.WRITE)
            state.apply(change, 60, counting, ())
        (segment,) = state.segments.values()
        found.append(snapshot_of(segment, f"pool-{number}", 60, counting, Written(final=True)))
    return found


@dataclass(frozen=True)
class Sized:
    item: dict[str, Any]
    item_units: int  # write units of the stats item
    entry_units: int  # write units of its window-heads index entry
    entry_bytes: int


def _sized(snapshots: list[Any]) -> list[Sized]:
    from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
    from hotkeys.detector.consumer.snapshots import to_item
    from hotkeys.detector.domain.indexes import entry_size
    from hotkeys.detector.domain.sizing import image_size, write_units
    from hotkeys.emulator.events import to_dynamodb_json

    spec = _heads_spec()
    found = []
    for snapshot in snapshots:
        item = to_item(snapshot, T0 + 86_400)
        image = to_dynamodb_json(item)
        entry = entry_size(spec, image)
        found.append(Sized(item, write_units(image_size(image)), write_units(entry), entry))
    assert spec.name == HEADS_INDEX
    return found


def _heads_spec() -> Any:
    """The window-heads index as the stack's stats table defines it (read back from moto's DescribeTable)."""
    import boto3
    from moto import mock_aws

    from hotkeys.detector.adapters.stats_schema import HEADS_INDEX
    from hotkeys.detector.domain.indexes import specs_from_description
    from hotkeys.emulator.local import create_stats_table

    with mock_aws():
        client = boto3.client("dynamodb")
        create_stats_table(client, "stats")
        (spec,) = [s for s in specs_from_description(client.describe_table(TableName="stats")) if s.name == HEADS_INDEX]
    return spec


class Index:
    """The window-heads index as the judge reads it: heads by bucket, visible a second after their write."""

    def __init__(self, log: Log, sized: list[Sized]) -> None:
        self.log = log
        self.sized = sized
        # (shard, window) → (bucket, written at, pool number, final)
        self.heads: dict[tuple[str, int], tuple[int, float, int, bool]] = {}
        self.now = 0.0
        self.renaming = 0.0  # process time spent giving each shard its own keys (not the judge's)

    def heads_since(self, table: str, first_window: int, buckets: int) -> list[Any]:
        from hotkeys.detector.consumer.snapshots import from_head_item

        by_bucket: dict[int, list[tuple[str, int, int, bool, float]]] = defaultdict(list)
        for (shard, window), (bucket, written, pool, final) in self.heads.items():
            if window >= first_window and bucket < buckets and written + 1 <= self.now:
                by_bucket[bucket].append((shard, window, pool, final, written))
        found = []
        second = int(self.now)
        for bucket in range(buckets):
            rows = by_bucket.get(bucket, [])
            size = sum(self.sized[pool].entry_bytes for _s, _w, pool, _f, _t in rows)
            pages = max(1, math.ceil(size / 1_000_000))
            self.log.requests[("judge", "Query (window-heads)")] += pages
            # eventually consistent: half a read unit per 4 KB, the page's sizes summed
            self.log.reads[(second, "window-heads", f"{table}#{bucket}")] += max(0.5, math.ceil(size / 4096) * 0.5)
            for shard, window, pool, final, written in rows:
                item = self.sized[pool].item
                head = from_head_item({**item, "shard_id": shard, "window_start": window, "instance_closed": final})
                started = time.process_time()
                found.append(_own_keys(replace(head, written_at=written), shard))
                self.renaming += time.process_time() - started
        return found

    def latest_window(self, table: str, buckets: int) -> int | None:
        return max((window for (_shard, window), row in self.heads.items() if row[1] + 1 <= self.now), default=None)


def _own_keys(head: Any, shard: str) -> Any:
    """The head with keys of its own shard's (a table key lives on one shard: shards drawn from the same
    snapshot must not add up to one hot key)."""
    prefix = shard[-8:] + "/"
    entries = {prefix + key: entry for key, entry in head.summary.entries.items()}
    items = {prefix + key: stats for key, stats in head.items.items()}
    return replace(head, summary=replace(head.summary, entries=entries), items=items)


class Layouts:
    """The layout registry (``LAYOUT`` items): the judge's reads and raises, counted."""

    def __init__(self, log: Log) -> None:
        from hotkeys.detector.consumer.layout import Layout

        self.log = log
        self.stored = {TABLE: Layout(TABLE, 60)}
        self.now = 0.0

    def layouts(self) -> list[Any]:
        self.log.requests[("judge", "Query (layouts)")] += 1
        self.log.reads[(int(self.now), "table", "LAYOUT")] += 0.5
        return list(self.stored.values())

    def layout(self, table: str) -> Any:
        return self.stored.get(table)

    def save_layout(self, before: Any, after: Any) -> bool:
        self.log.requests[("judge", "PutItem (layout)")] += 1
        self.log.writes[(int(self.now), "table", "LAYOUT")] += 1
        self.stored[after.table] = after
        return True


class Incidents:
    """The incident items (``INCIDENT#<table>``), kept here as the store keeps them; requests counted."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.now = 0.0
        self.stored: dict[str, tuple[Any, int]] = {}

    def _wrote(self) -> None:
        self.log.requests[("judge", "PutItem (incident)")] += 1
        self.log.writes[(int(self.now), "table", f"INCIDENT#{TABLE}")] += 1

    def open_incidents(self, table: str) -> list[Any]:
        self.log.requests[("judge", "Query (incidents)")] += 1
        self.log.reads[(int(self.now), "table", f"INCIDENT#{table}")] += 0.5
        return [s for s in self.stored.values() if s[0].firing or s[0].pending is not None]

    def start(self, incident: Any, now: float) -> tuple[bool, Any]:
        self._wrote()
        current = self.stored.get(incident.name)
        if current is not None and (current[0].firing or current[0].pending is not None):
            return False, current
        self.stored[incident.name] = (incident, 1)
        return True, None

    def update(self, incident: Any, version: int, now: float) -> tuple[bool, Any]:
        self._wrote()
        current = self.stored.get(incident.name)
        if current is None or current[1] != version:
            return False, current
        self.stored[incident.name] = (incident, version + 1)
        return True, None

    def get(self, table: str, name: str) -> Any:
        return self.stored.get(name)


class Published:
    def __init__(self) -> None:
        self.alerts: Counter[tuple[str, str, str]] = Counter()

    def publish(self, alert: Any) -> str:
        self.alerts[(alert.key, alert.reason, alert.status)] += 1
        return "sent"


# A shard's flush or the judge's look: (at, order, shard or "" for a look, window, final).
Event = tuple[float, int, str, int, bool]


def simulate(shards: int, windows: int, sized: list[Sized], seed: int = 1) -> dict[str, Any]:
    """``windows`` windows of ``shards`` saturated shards from a fresh deploy (one bucket registered).

    An index partition takes at most ``PARTITION_WRITE_LIMIT`` write units a second: a head write past it
    is throttled, and its consumer (the batch retried a second later) re-reads the layout first, as
    ``pipeline._save`` makes it do."""
    deploy = SimulatedDeploy(shards, windows, sized, seed)
    events = deploy.events()
    while events:
        at, _order, name, window, final = heapq.heappop(events)
        if not name:
            deploy.look(at)
        elif not deploy.write(at, name, window, final):
            heapq.heappush(events, (at + 1, 1, name, window, final))
    return deploy.result()


class SimulatedDeploy:
    """The shards' containers and the judge of a fresh deploy, on the stats table emulated here, every
    request and unit in ``log``."""

    def __init__(self, shards: int, windows: int, sized: list[Sized], seed: int) -> None:
        from hotkeys.detector.alerts.judge import Judge, JudgePorts
        from hotkeys.detector.alerts.notifier import Notifier
        from hotkeys.detector.config import Settings

        self.windows, self.sized = windows, sized
        self.rng = random.Random(seed)
        self.log = Log()
        self.index, self.registry = Index(self.log, sized), Layouts(self.log)
        self.incidents, self.published = Incidents(self.log), Published()
        settings = Settings(stats_table_name="stats", alert_topic_arn="arn:aws:sns:us-east-1:1:t")
        self.now = float(T0)
        notifier = Notifier(settings, self.incidents, self.published, "judge")
        ports = JudgePorts(self.index, self.registry, self.incidents, lambda _table: 0.0, lambda: self.now)
        self.judge = Judge(settings, ports, notifier, (TABLE,))
        self.names = [f"shardId-{number:020d}-{self.rng.randrange(16**8):08x}" for number in range(shards)]
        self.phase = {name: self.rng.random() for name in self.names}  # when after a boundary its invocation flushes
        self.read_again = {
            name: float(T0) for name in self.names
        }  # each container's next layout read (its first at once)
        self.known: dict[str, Any] = {}  # each container's layout (None: read it at its next write)
        self.taken: Counter[tuple[int, int]] = Counter()  # write units each bucket took in each second
        self.look_seconds: list[float] = []  # each look's CPU
        self.heads_read: list[int] = []
        self.throttled_at: list[float] = []

    def events(self) -> list[Event]:
        """Every shard's flush at each boundary, the window's end its final one, and the judge's look after
        each boundary, as a heap."""
        from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS
        from hotkeys.detector.config import DEFAULT_FLUSH_SECONDS

        flush = DEFAULT_FLUSH_SECONDS
        end = T0 + self.windows * 60
        events: list[Event] = []
        for boundary in range(T0 + flush, end + 1, flush):
            window = boundary - 60 if boundary % 60 == 0 else boundary - boundary % 60
            events += [(boundary + self.phase[name], 1, name, window, boundary % 60 == 0) for name in self.names]
            events.append((boundary + LOOK_DELAY_SECONDS, 0, "", window, False))
        heapq.heapify(events)
        return events

    def look(self, at: float) -> None:
        """The judge's look at ``at``: its CPU is counted without the renaming of the heads' keys."""
        self.now = self.index.now = self.registry.now = self.incidents.now = at
        started, renamed = time.process_time(), self.index.renaming
        outcome = self.judge.look()
        self.look_seconds.append(time.process_time() - started - (self.index.renaming - renamed))
        self.heads_read.append(outcome.heads)

    def write(self, at: float, name: str, window: int, final: bool) -> bool:
        """Shard ``name``'s snapshot write at ``at``, under the head bucket its container's layout gives it;
        False: its index partition throttled it (the container reads the layout again at its next write)."""
        from hotkeys.detector.consumer import layout as layouts

        second = int(at)
        if self.known.get(name) is None or at >= self.read_again[name]:
            self.known[name], self.read_again[name] = (
                self.registry.stored[TABLE],
                layouts.refresh_due(at, self.rng.random()),
            )
            self.log.requests[("consumer", "GetItem (layout)")] += 1
            self.log.reads[(second, "table", "LAYOUT")] += 0.5
        bucket = self.known[name].bucket_of(name, window)
        item = self.sized[pool_of(name, self.sized)]
        self.log.requests[("consumer", "PutItem (snapshot)")] += 1
        if self.taken[(second, bucket)] + item.entry_units > PARTITION_WRITE_LIMIT:
            self.log.requests[("consumer", "PutItem throttled")] += 1
            self.throttled_at.append(at)
            self.known[name] = None
            return False
        self.taken[(second, bucket)] += item.entry_units
        self.log.writes[(second, "table", f"SEG#{TABLE}#{window}#{name}")] += item.item_units
        self.log.writes[(second, "window-heads", f"{TABLE}#{bucket}")] += item.entry_units
        previous = self.index.heads.get((name, window))
        if previous is not None and previous[0] != bucket:  # the entry moves: the old one is deleted
            self.log.writes[(second, "window-heads", f"{TABLE}#{previous[0]}")] += item.entry_units
        self.index.heads[(name, window)] = (bucket, at, pool_of(name, self.sized), final)
        self.log.snapshots.append(Write(at, name, window, bucket, final))
        return True

    def result(self) -> dict[str, Any]:
        log, shards, windows = self.log, len(self.names), self.windows
        records = shards * RECORDS_PER_SHARD_SECOND * windows * 60
        steady = T0 + 60 * max(1, windows - 2)  # the last two windows
        write_peaks = log.peaks(log.writes, steady)
        read_peaks = log.peaks(log.reads, steady)
        first_write_peaks = log.peaks(log.writes, T0)
        return {
            "shards": shards,
            "windows": windows,
            "records": records,
            "requests_per_1000_records": round(sum(log.requests.values()) / records * 1000, 4),
            "requests_per_shard_minute": {
                f"{source}: {operation}": round(count / shards / windows, 3)
                for (source, operation), count in sorted(log.requests.items())
            },
            "throttled_head_writes": log.requests[("consumer", "PutItem throttled")],
            # seconds after the deploy of the last throttled head write (the count raised, and taken)
            "last_throttled_after_seconds": round(max(self.throttled_at) - T0, 1) if self.throttled_at else None,
            "head_buckets": self.registry.stored[TABLE].counts,
            "steady_from": steady,
            "peak_write_units_per_second": {t: {"key": k, "units": round(u, 1)} for t, (k, u) in write_peaks.items()},
            "peak_read_units_per_second": {t: {"key": k, "units": round(u, 1)} for t, (k, u) in read_peaks.items()},
            "peak_write_units_per_second_from_deploy": {
                t: {"key": k, "units": round(u, 1)} for t, (k, u) in first_write_peaks.items()
            },
            "within_target": all(u <= TARGET_SHARE_OF_LIMIT * PARTITION_WRITE_LIMIT for _k, u in write_peaks.values())
            and all(u <= TARGET_SHARE_OF_LIMIT * PARTITION_READ_LIMIT for _k, u in read_peaks.values()),
            # Zipf traffic: the top key takes a share of a small table's writes (a share incident)
            "alerts": {" ".join(name): count for name, count in sorted(self.published.alerts.items())},
            "judge": {
                "looks": len(self.heads_read),
                "heads_read_per_look_max": max(self.heads_read),
                "heads_read_per_look_steady": round(sum(self.heads_read[-5:]) / 5, 1),
                "cpu_seconds_per_look": round(sum(self.look_seconds) / len(self.heads_read), 4),
                # the deploy's transient included (the heads of the first windows before the layout spread)
                "cpu_seconds_per_look_max": round(max(self.look_seconds), 4),
            },
            "log": log,
        }


def own_counting(result: dict[str, Any], sized: list[Sized], stream_shards: int = 8) -> dict[str, Any]:
    """The snapshot writes of the steady windows counted by the detector: each a stream record of the
    stats table (INSERT, then MODIFY with the item as it was), through the real pipeline on
    ``stream_shards`` shards, and `top`'s figures read back: each target's busiest key and its peak rate."""
    writes: list[Write] = [w for w in result["log"].snapshots if w.window >= result["steady_from"]]
    lineages = [
        [(f"shardId-{number}", _stream_of(writes, sized, number, stream_shards))] for number in range(stream_shards)
    ]
    return {"records": len(writes), "peaks": _peaks(_counted_figures(lineages))}


# The stats table, as a watched table.
_OWN_SOURCE = "hotkeys-stats"


def _stats_item(write: Write, sized: list[Sized]) -> dict[str, Any]:
    """The snapshot item ``write`` puts: its pool's sized item under the write's keys."""
    from hotkeys.detector.consumer.layout import heads_pk
    from hotkeys.detector.consumer.snapshots import heads_sk, segment_pk

    pool = sized[pool_of(write.shard, sized)].item
    return {
        **pool,
        "pk": segment_pk(TABLE, write.window, write.shard),
        "table_name": TABLE,
        "window_start": write.window,
        "shard_id": write.shard,
        "instance_closed": write.final,
        "heads_pk": heads_pk(TABLE, write.bucket),
        "heads_sk": heads_sk(write.window, write.shard, str(pool["sk"])),
    }


def _stream_of(writes: list[Write], sized: list[Sized], number: int, stream_shards: int) -> Iterator[dict[str, Any]]:
    """Stream shard ``number``'s records of the stats table: the writes of the snapshot shards it holds."""
    from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

    before: dict[str, dict[str, Any]] = {}
    position = 0
    for write in writes:
        if zlib.crc32(write.shard.encode()) % stream_shards != number:
            continue
        item = _stats_item(write, sized)
        old = before.get(item["pk"])
        before[item["pk"]] = item
        position += 1
        yield stream_record(
            ItemChange(
                event_name="MODIFY" if old else "INSERT",
                keys={"pk": item["pk"], "sk": item["sk"]},
                new_image=item,
                old_image=old,
            ),
            table=_OWN_SOURCE,
            sequence=sequence_number(number, position),
            event_time=int(write.at),
        )


def _counted_figures(lineages: list[Any]) -> list[Any]:
    """The stream through the deployed pipeline on in-process moto, and `top`'s figures of every window."""
    import boto3
    from moto import mock_aws

    from hotkeys.cli.top import ALL_INDEXES, window_figures, windows_in_range
    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.config import Settings
    from hotkeys.emulator.emulation import Deployment, emulate
    from hotkeys.emulator.local import create_stats_table

    with mock_aws():
        client = boto3.client("dynamodb")
        create_stats_table(client, _OWN_SOURCE)  # its key schema and window-heads index, for DescribeTable
        create_stats_table(client, "own-stats")
        settings = Settings(stats_table_name="own-stats")
        emulate(Deployment(settings, AwsClients()), lineages, judge=None)
        store = DynamoStatsStore(boto3.resource("dynamodb").Table("own-stats"))
        windows = windows_in_range(store, since=0, last=None, until=T0 + 10**6, table=_OWN_SOURCE)
        return window_figures(store, windows, ALL_INDEXES)


def _peaks(figures: list[Any]) -> dict[str, dict[str, Any]]:
    """Each target's (the table's, each index's) busiest key over the windows, and its peak rate."""
    from hotkeys.detector.domain.rate import rate_of

    peaks: dict[str, dict[str, Any]] = {}
    for window in figures:
        target = window.index or "table"
        for key, entry in window.entries.items():
            rate = rate_of(entry, window.bound(key), window.last_event, window.alert_min_span_seconds).wcu_per_second
            if rate > peaks.get(target, {"peak_wcu_per_second": -1.0})["peak_wcu_per_second"]:
                peaks[target] = {"key": key, "peak_wcu_per_second": round(rate, 1), "window_start": window.window_start}
    return peaks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, nargs="*", default=[1, 10, 100, 1000, 10000])
    parser.add_argument("--windows", type=int, default=12)
    parser.add_argument("--own-counting", action="store_true", help="count the write log with the detector")
    parser.add_argument("--out", default=str(OUTPUT))
    args = parser.parse_args(argv)
    moto_environment()
    from hotkeys.detector.observability import logger

    logger.setLevel("CRITICAL")
    sized = _sized(_snapshots(POOL, random.Random(5)))
    runs = []
    for shards in args.shards:
        started = time.monotonic()
        result = simulate(shards, args.windows, sized)
        if args.own_counting:
            result["own_counting"] = own_counting(result, sized)
        del result["log"]
        result["elapsed_seconds"] = round(time.monotonic() - started, 1)
        runs.append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "requests_per_shard_minute"}), flush=True)
    output = {
        "benchmark": "scale",
        "command": " ".join(["python -m bench.scale", *(sys.argv[1:] if argv is None else argv)]),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "sizes": {
            "item_units": sorted({s.item_units for s in sized}),
            "index_entry_units": sorted({s.entry_units for s in sized}),
            "index_entry_bytes_mean": round(sum(s.entry_bytes for s in sized) / len(sized)),
        },
        "runs": runs,
    }
    Path(args.out).write_text(json.dumps(output, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
