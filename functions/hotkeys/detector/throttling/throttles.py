"""Throttled keys from Contributor Insights for DynamoDB, and one picture per key beside the stream's writes.

A stream shows the writes that landed. Reads never reach it, nor writes DynamoDB throttled. Contributor
Insights for DynamoDB in throttled-keys mode (``THROTTLED_KEYS``) names the throttled keys, per table and
per global secondary index, in CloudWatch Contributor Insights rules DynamoDB creates on our behalf.

Rule names (DynamoDB developer guide, "CloudWatch contributor insights for DynamoDB: How it works",
section "rules"): "Most throttled keys (partition key) — Identifies the partition keys of the most
throttled items in your table or global secondary index. CloudWatch rule name format:
``DynamoDBContributorInsights-PKT-[resource_name]-[creationtimestamp]``", and with a sort key also
"``DynamoDBContributorInsights-SKT-[resource_name]-[creationtimestamp]``" (partition and sort key);
the accessed-keys rules are ``PKC`` and ``SKC``. The name ends in a creation timestamp, so it cannot be
computed: it is read from DynamoDB ``DescribeContributorInsights`` (``ContributorInsightsRuleList``:
"List of names of the associated contributor insights rules", for exactly the table or index asked
about), never guessed. ``resource_name`` for an index is not defined by the guide (AWS's examples show
``<table>-<index>``), so IAM scoping allows both ``<table>-…`` and ``<index>-…`` (``rule_arn_patterns``).

What the rule counts (same page, "Most throttled items"): "DynamoDB measures throttle frequency using
``ThrottleCount``, which is the count of ``ProvisionedThroughputExceededException``,
``ThrottlingException``, and ``RequestLimitExceeded`` errors." Reads and writes are counted together:
the rule does not say which a throttled request was, so the picture shows throttled *requests* per key,
and which kind (read or write) only where a CloudWatch metric says it (the throttle alarms). And:
"Write throttling caused by insufficient write capacity for a global secondary index is not measured":
GSI back-pressure never shows in an index's rule; our stream-side index counts are the signal for it.

Reading a report (CloudWatch ``GetInsightRuleReport``): one-minute periods; each contributor has
``Keys`` (strings: for the PKT rule, the partition key value) and ``Datapoints`` — "Only the data
points when this contributor appeared are included" — of ``ApproximateValue`` per minute. At most 100
contributors are listed (``MaxContributorCount``: "The range is 1 to 100"); ``ApproximateUniqueCount``
says how many there were. How a number or binary key value is written in ``Keys`` is not documented:
keys are matched to the stream's key text (``records.key_text``: strings and numbers as the stream
writes them, binary as base64) exactly, and a key written differently shows as its own row, marked
throttled-only — never merged into another key, never dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.proposals import is_proposed
from hotkeys.detector.throttling.ports import InsightsPort
from hotkeys.detector.throttling.throttle_sources import Source

RULE_PREFIX = "DynamoDBContributorInsights-"
PARTITION_KEY_THROTTLED = "PKT"
SORT_KEY_THROTTLED = "SKT"
THROTTLED_KEYS = "THROTTLED_KEYS"
ACCESSED_AND_THROTTLED_KEYS = "ACCESSED_AND_THROTTLED_KEYS"
REPORT_PERIOD_SECONDS = 60
MAX_CONTRIBUTORS = 100  # GetInsightRuleReport's MaxContributorCount: "The range is 1 to 100"
# The report's statistics: DynamoDB's guide says only MaxContributorValue and Maximum are useful for its
# rules; contributors are ranked by their Sum over the range (OrderBy: "Sum and Maximum").
REPORT_METRICS = ("MaxContributorValue",)
REPORT_ORDER_BY = "Sum"
# One report reads at most a day of minutes (GetInsightRuleReport returns one datapoint per period).
MAX_REPORT_SECONDS = 86_400

# How a key's stream writes and its throttled requests relate in one window.
THROTTLED_AND_LANDED = "throttled and landed"
THROTTLED_ONLY = "throttled only"


def rule_kind(name: str) -> str | None:
    """``PKT``, ``SKT``, ``PKC`` or ``SKC`` for a DynamoDB-created rule name; None for any other name."""
    if not name.startswith(RULE_PREFIX):
        return None
    kind, dash, rest = name[len(RULE_PREFIX) :].partition("-")
    return kind if dash and rest and kind in ("PKT", "SKT", "PKC", "SKC") else None


def throttled_key_rule(rule_names: Iterable[str]) -> str | None:
    """The partition-key throttled rule (PKT) of a ``ContributorInsightsRuleList``, or None.

    The list is for one table or index; should it hold two PKT rules (a re-enable in progress), the
    newest by its trailing creation timestamp is read, since disabling deletes a rule."""
    found = [name for name in rule_names if rule_kind(name) == PARTITION_KEY_THROTTLED]
    return max(found, key=lambda name: (_created(name), name)) if found else None


def _created(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def rule_arn_patterns(partition: str, region: str, account: str, table: str, indexes: Sequence[str] = ()) -> list[str]:
    """The ARNs (with a trailing wildcard: the creation timestamp) of the throttled-key rules of a table
    and its indexes, for IAM: ``arn:PARTITION:cloudwatch:REGION:ACCOUNT:insight-rule/NAME`` (the stack's
    partition: aws, aws-cn, aws-us-gov). An index's ``resource_name`` is undocumented, so both its
    table-prefixed and its own name are allowed."""
    prefix = f"arn:{partition}:cloudwatch:{region}:{account}:insight-rule/{RULE_PREFIX}{PARTITION_KEY_THROTTLED}-"
    names = [table, *(name for index in indexes for name in (f"{table}-{index}", index))]
    return [f"{prefix}{name}-*" for name in dict.fromkeys(names)]


@dataclass(frozen=True)
class ThrottledKey:
    """One key's throttled requests (reads and writes together) in one minute."""

    table: str
    index: str | None
    key: str
    minute: int  # epoch seconds, the minute's start
    requests: int


@dataclass(frozen=True)
class Report:
    """One rule's report for a time range, parsed."""

    source: Source
    keys: list[ThrottledKey]
    listed: int  # contributors the report lists
    unique: int | None  # ApproximateUniqueCount: how many contributors there were

    @property
    def unlisted(self) -> int:
        return max(0, (self.unique or 0) - self.listed)


def epoch_seconds(value: Any) -> int:
    """A report timestamp (boto3 parses it to an aware datetime) as epoch seconds."""
    if isinstance(value, datetime):
        return int(value.timestamp())
    raise ValueError(f"not a timestamp: {value!r}")


def parse_report(source: Source, response: Mapping[str, Any]) -> Report:
    """Per-key throttled requests per minute from a ``GetInsightRuleReport`` response (boto3's parse).

    A key's minute counts once: should the same key text come twice (two contributors rendered alike,
    or an SKT-style rule with more keys), their values add up."""
    counts: dict[tuple[str, int], float] = defaultdict(float)
    contributors = response.get("Contributors") or []
    for contributor in contributors:
        keys = contributor.get("Keys") or []
        key = str(keys[0]) if keys else ""
        for point in contributor.get("Datapoints") or []:
            minute = epoch_seconds(point["Timestamp"])
            minute -= minute % REPORT_PERIOD_SECONDS
            counts[(key, minute)] += float(point.get("ApproximateValue") or 0.0)
    keys = [
        ThrottledKey(source.table, source.index, key, minute, round(value))
        for (key, minute), value in sorted(counts.items(), key=lambda item: (item[0][1], item[0][0]))
        if round(value) > 0
    ]
    unique = response.get("ApproximateUniqueCount")
    return Report(source, keys, len(contributors), int(unique) if unique is not None else None)


class InsightsUnavailable(RuntimeError):
    """Contributor Insights could not be read (denied, not found, throttled, no endpoint): one line why."""


@dataclass
class ThrottlePicture:
    """Throttled keys read for some tables and indexes, and one line per thing that could not be read."""

    keys: list[ThrottledKey] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    read: list[Source] = field(default_factory=list)  # the sources whose rule was read


def read_throttles(port: InsightsPort, sources: Iterable[Source], start: int, end: int) -> ThrottlePicture:
    """The throttled keys of every source for minutes ``start`` to ``end`` (epoch seconds); never raises
    for an unreadable source: the picture says why in a note instead."""
    picture = ThrottlePicture()
    start = max(start, end - MAX_REPORT_SECONDS)
    for source in dict.fromkeys(sources):
        try:
            status = port.rule_status(source)
            why = status.unreadable()
            if why is not None or status.rule is None:
                picture.notes.append(why or f"no throttled-keys rule on {source.where}")
                continue
            report = parse_report(source, port.report(status.rule, start, end))
        except InsightsUnavailable as error:
            picture.notes.append(f"{source.where}: {error}")
            continue
        picture.read.append(source)
        picture.keys.extend(report.keys)
        if report.unlisted:
            picture.notes.append(
                f"{source.where}: {report.unlisted} more throttled key(s) than the report lists "
                f"(it lists the top {report.listed})"
            )
    return picture


def summary_line(picture: ThrottlePicture) -> str | None:
    """One line for the notes (None when there are none): the first, and how many more notes (on other
    sources: not keys) the JSON lists."""
    if not picture.notes:
        return None
    if len(picture.notes) == 1:
        return f"Throttled keys: {picture.notes[0]}."
    more = len(picture.notes) - 1
    return f"Throttled keys: {picture.notes[0]}; and {more} more note{'s' if more > 1 else ''} (--json lists them)."


@dataclass(frozen=True)
class Landed:
    """What the stream counted for one table or index in one window: each listed key's write units, and
    the most an unlisted key can have written (the summary's error bound; 0: none wrote)."""

    table: str
    index: str | None
    window_start: int
    window_seconds: int
    wcu: Mapping[str, int]
    error_bound: int


def landed_from_figures(figures: Iterable[Any]) -> list[Landed]:
    """``Landed`` from ``snapshots.WindowFigures`` (the merged figures ``hotkeys top`` reads); a what-if
    proposal's are none: DynamoDB throttles nothing of an index that does not exist."""
    return [
        Landed(
            w.table,
            w.index,
            w.window_start,
            w.window_seconds,
            {key: entry.wcu for key, entry in w.entries.items()},
            w.error_bound,
        )
        for w in figures
        if not is_proposed(w.index)
    ]


@dataclass(frozen=True)
class KeyPicture:
    """One key in one window: write units that landed (the stream's) beside requests throttled (Contributor
    Insights'), "attempted vs landed". ``landed_wcu`` None: the stream counted no write of the key in the
    window (at most ``unlisted_bound`` write units, the window's error bound, when its summary pruned)."""

    table: str
    index: str | None
    key: str
    window_start: str
    window_seconds: int
    landed_wcu: int | None
    throttled_requests: int
    throttled_minutes: int
    status: str
    unlisted_bound: int = 0

    @property
    def where(self) -> str:
        return self.table if self.index is None else f"{self.table} index {self.index}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def join(landed: Sequence[Landed], throttled: Sequence[ThrottledKey], default_window: int = 60) -> list[KeyPicture]:
    """Every throttled key of every window, beside the write units the stream counted for it.

    A throttled minute belongs to the window (of its table or index) its start falls in; windows are
    aligned to the epoch like the stream's (``windows.window_start``), so a 60-second window holds exactly
    its minute. A key with no landed writes in that window is marked throttled-only: reads, or writes that
    never landed. Rows are ordered by throttled requests, most first."""
    by_window: dict[tuple[str, str | None, int], Landed] = {(w.table, w.index, w.window_start): w for w in landed}
    seconds_of: dict[tuple[str, str | None], int] = {}
    for w in landed:
        seconds_of.setdefault((w.table, w.index), w.window_seconds)
        seconds_of.setdefault((w.table, None), w.window_seconds)
    totals: dict[tuple[str, str | None, str, int], list[int]] = defaultdict(lambda: [0, 0])
    for item in throttled:
        seconds = seconds_of.get((item.table, item.index)) or seconds_of.get((item.table, None)) or default_window
        start = item.minute - item.minute % seconds
        total = totals[(item.table, item.index, item.key, start)]
        total[0] += item.requests
        total[1] += 1
    rows = []
    for (table, index, key, start), (requests, minutes) in totals.items():
        window = by_window.get((table, index, start))
        seconds = window.window_seconds if window else seconds_of.get((table, index)) or default_window
        wcu = window.wcu.get(key) if window else None
        rows.append(
            KeyPicture(
                table=table,
                index=index,
                key=key,
                window_start=iso_utc(start),
                window_seconds=seconds,
                landed_wcu=wcu,
                throttled_requests=requests,
                throttled_minutes=minutes,
                status=THROTTLED_AND_LANDED if wcu else THROTTLED_ONLY,
                unlisted_bound=window.error_bound if window and wcu is None else 0,
            )
        )
    rows.sort(key=lambda r: (-r.throttled_requests, r.window_start, r.table, r.index or "", r.key))
    return rows


def sources_of(landed: Iterable[Landed]) -> list[Source]:
    """The tables and indexes a set of windows covers, each once, in order."""
    return list(dict.fromkeys(Source(w.table, w.index) for w in landed))


def time_range(landed: Sequence[Landed]) -> tuple[int, int] | None:
    """The minutes the windows cover: from the first window's start to the last one's end."""
    if not landed:
        return None
    return min(w.window_start for w in landed), max(w.window_start + w.window_seconds for w in landed)
