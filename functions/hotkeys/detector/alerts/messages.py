"""Alert messages: one SNS publish, a form per subscriber kind (JSON, e-mail text, Chatbot)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.rules import Reason
from hotkeys.detector.domain.diagnosis import key_in_text
from hotkeys.detector.domain.rate import percent_of_limit, whole
from hotkeys.detector.domain.windows import iso_utc
from hotkeys.detector.proposals import where

# SNS Publish: "Subjects must be UTF-8 text with no line breaks or control characters, and less than
# 100 characters long" (earlier versions of the reference: "ASCII text that begins with a letter,
# number, or punctuation mark"). A subject that breaks it is refused, and the batch would fail on
# every retry: subjects are printable ASCII of at most 99 characters under either reading.
SUBJECT_LIMIT = 99
# The fields of ``Alert.document()``: what a JSON subscriber (sqs, lambda, email-json) receives, and
# how one tells an alert document from the topic's other messages (alerts/inbound.py).
ALERT_FIELDS = (
    "table",
    "index",
    "key",
    "window_start",
    "window_seconds",
    "wcu",
    "wcu_per_second",
    "at_most_wcu_per_second",
    "possibly_hot",
    "partition_wcu_limit",
    "percent_of_limit",
    "share",
    "reason",
    "status",
    "suggested_shards",
    "peak_wcu_per_second",
    "peak_share",
    "started",
    "lasted_seconds",
    "pattern",
    "remedy",
    "items",
)


class PublishRefused(RuntimeError):
    """The alert service answered with an error: nothing was sent (a retry may send it)."""


class PublishOutcomeUnknown(RuntimeError):
    """No answer from the alert service (timeout, connection lost): the alert may have been sent."""


@dataclass(frozen=True)
class Alert:
    """One message of an incident's life (``alerts.incidents``): what every subscriber form is made of.

    ``wcu_per_second`` is the key's rate (``domain.rate.rate_of``, the figure ``hotkeys top`` shows) in
    ``window_start``'s figures when the message was sent (the crossing's for a firing message; a
    reminder's is the last minute's, 0 when the key was quiet), ``at_most_wcu_per_second`` the most it
    can be (the summary's bound added), ``possibly`` whether only that reached the threshold;
    ``peak_wcu_per_second`` the incident's highest rate so far, ``peak_share`` a share incident's largest
    share; ``suggested_shards`` the incident's advice (sized on its highest rate, a share incident's too)."""

    table: str
    key: str
    window_start: int
    window_seconds: int
    wcu: int
    wcu_per_second: float
    partition_wcu_limit: int
    share: float
    reason: Reason
    status: Message
    peak_wcu_per_second: float
    alert_wcu_per_second: (
        float  # the deployment's alert rate (``domain.rate.alert_rate``: the advice keeps each suffix under it)
    )
    at_most_wcu_per_second: float = 0.0
    possibly: bool = False
    suggested_shards: int = 1
    index: str | None = None  # the global secondary index whose partition is hot (None: the table's)
    pattern: str | None = None  # the antipattern the key shows (diagnosis.classify), if any
    remedy: str | None = None
    items: str | None = None  # hot item or hot collection (items.verdict), if known
    items_advice: str | None = None
    peak_share: float = 0.0
    started: int | None = None  # the event second the incident crossed
    lasted_seconds: int | None = None  # resolved: from the crossing to the end of its last hot window

    @property
    def where(self) -> str:
        """The table, or 'table index NAME' (how subjects and listings name the partition's home)."""
        return where(self.table, self.index)

    @property
    def percent_of_limit(self) -> float:
        return percent_of_limit(self.wcu_per_second, self.partition_wcu_limit)

    @property
    def at_most_percent_of_limit(self) -> float:
        return percent_of_limit(self.at_most_wcu_per_second, self.partition_wcu_limit)

    @property
    def peak_percent_of_limit(self) -> float:
        return percent_of_limit(self.peak_wcu_per_second, self.partition_wcu_limit)

    @property
    def alert_percent_of_limit(self) -> float:
        return percent_of_limit(self.alert_wcu_per_second, self.partition_wcu_limit)

    def document(self) -> dict[str, Any]:
        """The JSON form (default, sqs, lambda subscribers): exactly ``ALERT_FIELDS``."""
        return {
            "table": self.table,
            "index": self.index,
            "key": self.key,
            "window_start": iso_utc(self.window_start),
            "window_seconds": self.window_seconds,
            "wcu": self.wcu,
            "wcu_per_second": self.wcu_per_second,
            "at_most_wcu_per_second": self.at_most_wcu_per_second,
            "possibly_hot": self.possibly,
            "partition_wcu_limit": self.partition_wcu_limit,
            "percent_of_limit": self.percent_of_limit,
            "share": self.share,
            "reason": self.reason,
            "status": self.status,
            "suggested_shards": self.suggested_shards,
            "peak_wcu_per_second": self.peak_wcu_per_second,
            "peak_share": self.peak_share,
            "started": iso_utc(self.started) if self.started is not None else None,
            "lasted_seconds": self.lasted_seconds,
            "pattern": self.pattern,
            "remedy": self.remedy,
            "items": self.items,
        }


def display_key(key: str, mode: str, salt: str) -> str:
    """The key as alerts and logs show it: raw, or a salted hash when keys are personal data."""
    if mode != "hash":
        return key
    return "sha256:" + hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:16]


def subject(alert: Alert) -> str:
    """``[hot key]``, ``[possibly hot]`` (only the rate's ``at_most`` reached the threshold) or ``[heavy
    share]`` (firing), ``[escalated]`` (an update: worse than the last message said), ``[hot key, still]``
    (and so on: a reminder), ``[resolved]``: the tag a subscriber filters on, then where, the key and the
    figure that message is about."""
    # A share-of-table alert is about a key far under its partition's limit: the verdict, top and the
    # report call it "not hot", and so does its subject.
    partition = alert.reason is Reason.PARTITION_LIMIT
    noun = ("possibly hot" if alert.possibly else "hot key") if partition else "heavy share"
    tag = {
        Message.FIRING: f"[{noun}]",
        Message.ESCALATED: "[escalated]",
        Message.REMINDER: f"[{noun}, still]",
        Message.RESOLVED: "[resolved]",
    }[alert.status]
    if alert.status is Message.ESCALATED:
        detail = (
            f"peaks at {whole(alert.peak_wcu_per_second)} WCU/s ({whole(alert.peak_percent_of_limit)}%), "
            f"{alert.suggested_shards} suffixes"
            if partition
            else f"{100 * alert.peak_share:.0f}% of table writes"
        )
    elif alert.status is Message.RESOLVED:
        detail = (
            f"cooled; peaked at {whole(alert.peak_wcu_per_second)} WCU/s"
            if partition
            else f"cooled; took up to {100 * alert.peak_share:.0f}% of table writes"
        )
    elif partition and alert.possibly:
        detail = (
            f"at {whole(alert.wcu_per_second)}-{whole(alert.at_most_wcu_per_second)} WCU/s "
            f"({whole(alert.percent_of_limit)}-{whole(alert.at_most_percent_of_limit)}% of partition limit)"
        )
    elif partition and alert.status is Message.REMINDER and not alert.wcu_per_second:
        detail = f"quiet in the last minute; peaked at {whole(alert.peak_wcu_per_second)} WCU/s"
    elif partition:
        detail = f"at {whole(alert.wcu_per_second)} WCU/s ({whole(alert.percent_of_limit)}% of partition limit)"
    else:
        detail = f"{100 * alert.share:.0f}% of table writes ({whole(alert.wcu_per_second)} WCU/s)"
    head = f"{tag} {alert.where}: "
    room = SUBJECT_LIMIT - len(head) - len(detail) - 1
    key = printable_ascii(alert.key[: SUBJECT_LIMIT + 1])
    key = key if len(key) <= room else key[: max(room - 3, 8)] + "..."
    return printable_ascii(f"{head}{key} {detail}")[:SUBJECT_LIMIT]


def printable_ascii(text: str) -> str:
    """``text`` with every character outside printable ASCII written as a Python escape (\\n, \\x01,
    \\u00e9, \\U0001f600): the subject of a key with line breaks, control or non-ASCII characters."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(c if " " <= c <= "~" else c.encode("unicode_escape").decode("ascii") for c in text)


def short_fix(key: str, suggested_shards: int, share: float, index: str | None = None) -> str:
    """The fix in one clause, for listings and chat messages (the e-mail has ``_advice``)."""
    shown = key_in_text(key)
    if index is not None:
        spread = f"suffix the index key ({shown}#1..{max(2, suggested_shards)}) or pick a higher-cardinality index key"
        return f"GSI back-pressure throttles the table's writes: {spread}"
    if suggested_shards >= 2:
        return f"write-shard it over {suggested_shards} suffixes ({shown}#1..{suggested_shards}; an estimate)"
    return (
        f"one partition still serves it, but it takes {100 * share:.0f}% of the table's writes: "
        "spread them over more partition keys before it grows"
    )


def _advice(alert: Alert) -> str:
    lines = [_sharding_advice(alert)]
    if alert.items and alert.items_advice:
        lines.insert(0, f"Items: {alert.items_advice}.")
    if alert.pattern and alert.remedy:
        lines.insert(0, f"Pattern: {alert.pattern} — {alert.remedy}.")
    return "\n".join(lines)


def _sharding_advice(alert: Alert) -> str:
    shards = alert.suggested_shards
    key = key_in_text(alert.key)
    if alert.index is not None:
        spread = max(2, shards)
        return (
            f"Suggested fix: write the index key attribute as '{key}#<n>' with n in 1..{spread} "
            f"(an estimate: ceil({whole(alert.peak_wcu_per_second)} WCU/s / "
            f"{whole(alert.alert_percent_of_limit)}% of "
            f"{alert.partition_wcu_limit} WCU/s), at least 2) and query the index once per suffix; or choose an "
            "index partition key with more distinct values. Projecting fewer attributes makes each index write cheaper."
        )
    if shards <= 1:
        return (
            "At this rate one partition can still serve the key; if it keeps growing, spread its writes "
            f"over suffixes ('{key}#<n>') or cache and batch them."
        )
    return (
        f"Suggested write sharding: {shards} suffix{'es' if shards > 1 else ''} "
        f"(an estimate: ceil({whole(alert.peak_wcu_per_second)} WCU/s / {whole(alert.alert_percent_of_limit)}% of "
        f"{alert.partition_wcu_limit} WCU/s)). Write to '{key}#<n>' with n random in 1..{shards} "
        "when reads can fan out over all suffixes, or calculated from an attribute (e.g. hash of an order id "
        f"mod {shards}) when a reader must find one item again."
    )


# What every WCU/s figure of a key is (domain.rate.rate_of), in words: the figure `hotkeys top` shows.
RATE_MEANING = "its rate: its heaviest 10 s bucket, or its average from its first write to its latest if higher"


def _last_minute(alert: Alert) -> str:
    """A reminder's rate, in words: the key's last minute (``verdicts.recent_rate``), or that it was quiet."""
    if not alert.wcu_per_second:
        return "quiet in the last minute (no write seen)"
    return f"its heaviest 10 s in the last minute {alert.wcu_per_second:,.1f} WCU/s"


def _rate_words(alert: Alert) -> str:
    """The rate a message quotes, with its range when only its upper end reached the threshold (a
    reminder's: the last minute's)."""
    if alert.status is Message.REMINDER:
        return _last_minute(alert)
    if alert.possibly:
        return (
            f"{alert.wcu_per_second:,.1f} to at most {alert.at_most_wcu_per_second:,.1f} WCU/s "
            f"({RATE_MEANING}; the upper end adds the most its summary may have left uncounted, and only that "
            "end reaches the alert threshold: possibly hot)"
        )
    return f"{alert.wcu_per_second:,.1f} WCU/s ({RATE_MEANING})"


def _what(alert: Alert) -> str:
    key = key_in_text(alert.key)
    if alert.index is not None:
        return (
            f"Index {alert.index} of table {alert.table}: index partition key '{key}' receives "
            f"{_rate_words(alert)} of index writes, {whole(alert.percent_of_limit)}% of the "
            f"{alert.partition_wcu_limit} WCU/s one index partition can serve. When an index partition cannot "
            "absorb its writes, DynamoDB throttles the writes to the table itself (GSI back-pressure: the "
            "throttle names the index in its ResourceArn), however evenly the table's own keys are spread."
        )
    if alert.reason is Reason.PARTITION_LIMIT:
        return (
            f"Partition key '{key}' of table {alert.table} is writing "
            f"{_rate_words(alert)}, {whole(alert.percent_of_limit)}% of the "
            f"{alert.partition_wcu_limit} WCU/s one partition can serve. Writes above the limit throttle, "
            "whatever the table's capacity."
        )
    return (
        f"Partition key '{key}' takes {100 * alert.share:.1f}% of table {alert.table}'s write units "
        f"in the window starting {iso_utc(alert.window_start)} ({_rate_words(alert)})."
    )


def _top_command(alert: Alert) -> str:
    index = f" --index {alert.index}" if alert.index is not None else ""
    return f"hotkeys top --stats-table <StatsTableName> --table {alert.table}{index}"


def _incident_line(alert: Alert) -> str | None:
    """Where the incident stands, for every message after the first: its peak, since when, its advice."""
    since = f" since {iso_utc(alert.started)}" if alert.started is not None else ""
    if alert.status is Message.ESCALATED:
        if alert.reason is Reason.PARTITION_LIMIT:
            return (
                f"Escalated: the incident{since} now peaks at {alert.peak_wcu_per_second:,.1f} WCU/s "
                f"({whole(alert.peak_percent_of_limit)}% of the limit; its highest rate, "
                f"as `hotkeys top` shows it): the advice below is sized on that peak."
            )
        return f"Escalated: the incident{since} now takes up to {100 * alert.peak_share:.1f}% of the table's writes."
    if alert.status is Message.REMINDER:
        if alert.reason is Reason.PARTITION_LIMIT:
            return (
                f"Still hot: {_last_minute(alert)}; the incident{since} has peaked at "
                f"{alert.peak_wcu_per_second:,.1f} WCU/s ({whole(alert.peak_percent_of_limit)}% of the limit)."
            )
        return (
            f"Still heavy: now {100 * alert.share:.1f}% of the table's writes; the incident{since} has taken up to "
            f"{100 * alert.peak_share:.1f}%."
        )
    return None


def email_text(alert: Alert) -> str:
    if alert.status is Message.RESOLVED:
        lasted = f" It lasted about {alert.lasted_seconds:,} s" if alert.lasted_seconds is not None else ""
        started = f" from {iso_utc(alert.started)}" if alert.started is not None else ""
        if alert.reason is Reason.PARTITION_LIMIT:
            figures = (
                f"Peak while firing: {alert.peak_wcu_per_second:,.1f} WCU/s ({whole(alert.peak_percent_of_limit)}% of "
                f"the {alert.partition_wcu_limit} WCU/s limit; its highest rate, as `hotkeys top` shows it).\n"
                f"Suggested write sharding, sized on that peak: {alert.suggested_shards} "
                f"suffix{'es' if alert.suggested_shards != 1 else ''}.\n"
            )
        else:
            figures = f"Largest share while firing: {100 * alert.peak_share:.1f}% of the table's writes.\n"
        return (
            f"Resolved: partition key '{key_in_text(alert.key)}' of {alert.where} stayed under the resolve level "
            f"for the whole window starting {iso_utc(alert.window_start)}.{lasted}{started}.\n" + figures
        )
    lines = [
        _what(alert),
        "",
        f"Window: {iso_utc(alert.window_start)} ({alert.window_seconds} s), {alert.wcu:,} write units so far.",
        _advice(alert),
        "",
        "Blind spots: reads never appear in a stream; writes that change nothing produce no record; "
        "transactional writes cost twice what is shown; throttled writes never reach the stream.",
        f"See it live: {_top_command(alert)}",
    ]
    standing = _incident_line(alert)
    if standing is not None:
        lines[1:1] = ["", standing]
    return "\n".join(lines) + "\n"


def chatbot_payload(alert: Alert) -> dict[str, Any]:
    """AWS Chatbot (Amazon Q Developer in chat applications) custom notification schema, v1.0."""
    standing = _incident_line(alert)
    description = (
        email_text(alert)
        if alert.status is Message.RESOLVED
        else "\n".join(part for part in (standing, _what(alert), _advice(alert)) if part)
    )
    return {
        "version": "1.0",
        "source": "custom",
        "id": f"{alert.where}:{alert.reason}:{key_in_text(alert.key)}:{alert.window_start}:{alert.status}",
        "content": {
            "textType": "client-markdown",
            "title": subject(alert),
            "description": description,
            "nextSteps": [
                f"`{_top_command(alert)}`",
                "Spread writes with a key suffix (see above), or cache/batch the writes to this key"
                if alert.index is None
                else "Suffix the index key attribute (see above), or choose a higher-cardinality index key",
            ]
            if alert.status is not Message.RESOLVED
            else [],
            "keywords": [alert.table, *([alert.index] if alert.index else []), alert.reason, alert.status],
        },
        "metadata": {
            "threadId": f"hotkey-{alert.where}-{alert.reason}-{alert.key}"[:256],
            "summary": subject(alert),
            "eventType": f"HotKey{alert.status.capitalize()}",
            "relatedResources": [alert.table],
            "additionalContext": {k: str(v) for k, v in alert.document().items()},
        },
    }


def sns_publish_arguments(topic_arn: str, alert: Alert) -> dict[str, Any]:
    document = json.dumps(alert.document())
    structure = {
        "default": document,
        "sqs": document,
        "lambda": document,
        "email": email_text(alert),
        "email-json": document,
        "https": json.dumps(chatbot_payload(alert)),
    }
    return {
        "TopicArn": topic_arn,
        "Subject": subject(alert),
        "Message": json.dumps(structure),
        "MessageStructure": "json",
        "MessageAttributes": {
            name: {"DataType": "String", "StringValue": value}
            for name, value in (
                ("table", alert.table),
                ("reason", alert.reason),
                ("status", alert.status),
                *((("index", alert.index),) if alert.index else ()),
            )
        },
    }
