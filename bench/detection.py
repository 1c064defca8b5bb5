"""Detection quality: recall, precision, count error and delay of the alerts on generated workloads.

Background traffic follows Zipf(s) over K keys; three keys are injected mid-window at 50%, 80%
and 120% of the partition limit for 30 s. Ground truth comes from the generated events: a key
*should* alert if its write units over some 10 s span reach 80% of the limit, *must not* if they
never exceed 50%. Alerts are captured as the deployment publishes them (``hotkeys.emulator.emulation``: the
shard's consumer and the judge on in-process moto), with the emulated time of each publish.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections import Counter, defaultdict
from typing import Any

from hotkeys.emulator.events import ItemChange, sequence_number, stream_record

T0 = 1_796_083_200
LIMIT = 1000
HOT = {"hot#50": 0.5, "hot#80": 0.8, "hot#120": 1.2}


class CapturingPublisher:
    def __init__(self, clock: Any) -> None:
        self.alerts: list[Any] = []
        self.times: list[float] = []
        self._clock = clock

    def publish(self, alert: Any) -> str:
        self.alerts.append(alert)
        self.times.append(self._clock())
        return str(len(self.alerts))


def _record(key: str, position: int, when: int, note: int) -> dict[str, Any]:
    image = {"pk": {"S": key}, "note": {"S": "n" * note}}
    return stream_record(
        ItemChange(event_name="MODIFY", keys={"pk": {"S": key}}, new_image=image, old_image=image, typed=True),
        table="quality",
        sequence=sequence_number(0, position),
        event_time=when,
    )


def workload(zipf: float, keys: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, Counter[int]]]:
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (rank**zipf) for rank in range(1, keys + 1)))
    events: list[tuple[float, str, int]] = []
    for i in range(500 * 120):  # 500 records/s of ~1-2 KB items for 2 minutes
        events.append(
            (
                T0 + i / 500,
                f"user#{bisect.bisect_left(weights, rng.random() * weights[-1])}",
                rng.randint(800, 1800),
            )
        )
    for key, level in HOT.items():
        rate = int(level * LIMIT)
        events.extend((T0 + 40 + i / rate, key, 900) for i in range(rate * 30))  # 1 WCU items
    events.sort()
    per_second: dict[str, Counter[int]] = defaultdict(Counter)
    records = []
    for position, (when, key, note) in enumerate(events):
        records.append(_record(key, position, int(when), note))
        per_second[key][int(when)] += -(-(2 + len(key) + 4 + note) // 1024)  # pk + key + "note" + value
    return records, per_second


def first_crossing(seconds: Counter[int], span: int = 10, level: float = 0.8) -> int | None:
    for start in sorted(seconds):
        if sum(seconds.get(start + i, 0) for i in range(span)) >= level * LIMIT * span:
            return start + span - 1
    return None


def peak_rate(seconds: Counter[int], span: int = 10) -> float:
    return max((sum(seconds.get(s + i, 0) for i in range(span)) / span for s in seconds), default=0.0)


def evaluate(zipf: float, keys: int, seed: int = 1) -> dict[str, Any]:
    records, truth = workload(zipf, keys, seed)
    publisher, stats = _emulate(f"quality-{zipf}-{keys}", records)
    firing = {a.key: a for a in publisher.alerts if a.status == "firing"}
    should = {k for k, s in truth.items() if first_crossing(s) is not None}
    must_not = {k for k, s in truth.items() if peak_rate(s) <= 0.5 * LIMIT}
    detected = set(firing) & should
    worst_share, worst_heavy = _worst_errors(stats, truth)
    return {
        "zipf": zipf,
        "keys": keys,
        "records": len(records),
        "should_alert": sorted(should),
        "alerted": sorted(firing),
        "recall": len(detected) / len(should) if should else 1.0,
        "precision": len(detected) / len(firing) if firing else 1.0,
        "false_alerts_at_or_below_half": sorted(set(firing) & must_not),
        "max_delay_seconds": max(_delays(publisher, truth, detected), default=0),
        "max_error_of_window_total": round(worst_share, 5),
        "max_relative_error_keys_over_1pct": round(worst_heavy, 4),
    }


def _emulate(name: str, records: list[dict[str, Any]]) -> tuple[CapturingPublisher, Any]:
    """The shard's records through the deployment on the current (moto) endpoint, into a fresh stats table
    ``name``: the alerts as published, and the stats store the figures are read from."""
    import boto3

    from hotkeys.detector.adapters.aws import AwsClients
    from hotkeys.detector.adapters.stats_store import DynamoStatsStore
    from hotkeys.detector.config import Settings
    from hotkeys.emulator.emulation import Deployment, Judging, emulate
    from hotkeys.emulator.lanes import Turns
    from hotkeys.emulator.local import create_stats_table

    create_stats_table(boto3.client("dynamodb"), name)
    table = boto3.resource("dynamodb").Table(name)
    settings = Settings(
        stats_table_name=name,
        alert_topic_arn="arn:aws:sns:us-east-1:1:x",
        share_min_wcu=10**12,
        partition_key_attribute="pk",
    )
    turns = Turns()
    publisher = CapturingPublisher(lambda: turns.now)
    stats = DynamoStatsStore(table)
    emulate(
        Deployment(settings, AwsClients(), publisher),
        [[("shardId-1", records)]],
        judge=Judging(tables=("quality",)),
        turns=turns,
    )
    return publisher, stats


def _delays(publisher: CapturingPublisher, truth: dict[str, Counter[int]], detected: set[str]) -> list[int]:
    """Seconds from each detected key's crossing to its first published alert."""
    delays = []
    for key in detected:
        crossing = first_crossing(truth[key])
        fired = next(at for at, a in zip(publisher.times, publisher.alerts, strict=True) if a.key == key)
        delays.append(round(fired - crossing) if crossing is not None else 0)
    return delays


def _worst_errors(stats: Any, truth: dict[str, Counter[int]]) -> tuple[float, float]:
    """The stored figures against the exact counts: the worst |estimate - exact| / window total over every
    reported key, and the worst relative error of keys holding at least 1% of their window."""
    from hotkeys.cli.top import window_figures, windows_in_range

    figures = window_figures(stats, windows_in_range(stats, since=0, last=None, until=2**40, table=None))
    worst_share = 0.0
    worst_heavy = 0.0
    for window in figures:
        exact: Counter[str] = Counter()
        for key, seconds in truth.items():
            exact[key] = sum(v for s, v in seconds.items() if window.window_start <= s < window.window_start + 60)
        for key, entry in window.ranked():
            error = abs(exact[key] - entry.wcu)
            assert entry.wcu <= exact[key] <= entry.wcu + window.error_bound
            worst_share = max(worst_share, error / window.wcu)
            if exact[key] >= 0.01 * window.wcu:
                worst_heavy = max(worst_heavy, error / exact[key])
    return worst_share, worst_heavy
