"""What a subscriber of the alert topic receives, told apart, and its chat (Slack webhook) form.

The topic carries two kinds of message by design (docs/decisions.md §42): the detector's alerts
(``messages.sns_publish_arguments``: one publish with a form per protocol; Lambda and SQS
subscribers get ``Alert.document()``), and CloudWatch's notifications of the stack's alarms
(``infra/monitoring.py``: alarm and OK actions on the same topic), which CloudWatch writes itself
and every subscriber receives as CloudWatch wrote them. Anything else that reaches the topic (a
test publish, another service wired to it) is neither, and is shown as such, never as a hot key.

A CloudWatch alarm notification delivered through SNS: the envelope's ``Message`` is a JSON string
with ``AlarmName``, ``AlarmDescription`` (may be null), ``AWSAccountId``, ``NewStateValue`` and
``OldStateValue`` (``OK``, ``ALARM``, ``INSUFFICIENT_DATA``), ``NewStateReason``,
``StateChangeTime`` (``2015-06-03T17:43:27.123+0000``), ``Region`` (the region's display name, such
as "EU - Ireland", not its code: the code is in ``AlarmArn``), ``AlarmArn`` and ``Trigger``
(``MetricName``, ``Namespace``, ``Statistic``, ``Unit``, ``Dimensions`` as ``[{"value", "name"}]``,
``Period``, ``EvaluationPeriods``, ``ComparisonOperator``, ``Threshold``, ...; a metric-math
alarm's ``Trigger`` has ``Metrics``, ``[{"Id", "Expression" | "MetricStat": {"Metric":
{"Namespace", "MetricName", "Dimensions"}}}]``, instead of one metric). The envelope's ``Subject``
reads ``ALARM: "<name>" in <Region>``. Sources: AWS's sample Lambda events for this payload,
``events/testdata/cloudwatch-alarm-sns-payload-single-metric.json`` and
``cloudwatch-alarm-sns-payload-multiple-metrics.json`` in https://github.com/aws/aws-lambda-go,
and the SNS event of the Lambda developer guide ("Using AWS Lambda with Amazon SNS",
https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html). The CloudWatch user guide
("Notifying users on alarm changes") documents that alarms notify SNS topics but not this payload
field by field, so only ``AlarmName`` and ``NewStateValue`` are required here; every other field
is read as optional.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hotkeys.detector.alerts.incidents import Message
from hotkeys.detector.alerts.messages import ALERT_FIELDS, short_fix
from hotkeys.detector.domain.diagnosis import SHARD_FAMILY

# How much of an unrecognised message the chat shows (the log has the rest's length and its id).
BODY_PREVIEW_CHARS = 500
# One free-text field of an alarm in the chat message (a Slack section holds 3,000 characters).
FIELD_CHARS = 1000
ALARM_STATES = ("ALARM", "OK", "INSUFFICIENT_DATA")
_STATE_ICONS = {"ALARM": ":rotating_light:", "OK": ":white_check_mark:", "INSUFFICIENT_DATA": ":grey_question:"}
_NUMERIC_FIELDS = ("wcu_per_second", "partition_wcu_limit", "percent_of_limit", "share", "suggested_shards")
_REGION_CODE = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")


@dataclass(frozen=True)
class HotKeyAlert:
    """One of the detector's alert documents (``Alert.document()``)."""

    subject: str
    document: dict[str, Any]


@dataclass(frozen=True)
class AlarmNotification:
    """A CloudWatch alarm's state change, as CloudWatch publishes it to an SNS topic."""

    name: str
    new_state: str
    old_state: str | None = None
    reason: str | None = None
    description: str | None = None
    account: str | None = None
    region: str | None = None  # the display name CloudWatch writes ("EU - Ireland")
    arn: str | None = None
    changed_at: str | None = None
    metric: str | None = None

    @property
    def console_url(self) -> str | None:
        """The alarm's page in the CloudWatch console, when its ARN names a commercial-partition
        region (``arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME``)."""
        parts = (self.arn or "").split(":", 6)
        if len(parts) != 7 or parts[:3] != ["arn", "aws", "cloudwatch"] or parts[5] != "alarm":
            return None
        region = parts[3]
        if not _REGION_CODE.fullmatch(region):
            return None
        return (
            f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
            f"#alarmsV2:alarm/{quote(parts[6], safe='')}"
        )


@dataclass(frozen=True)
class Unrecognised:
    """A message that is neither: shown with its subject and the start of its body, and logged."""

    subject: str | None
    body: str
    why: str


@dataclass(frozen=True)
class ThrottleExplanation:
    """The throttle explainer's alert (``throttle_explainer.document``): the keys behind a throttle alarm."""

    subject: str
    document: dict[str, Any]


THROTTLE_EXPLANATION = "throttle_explanation"
Notification = HotKeyAlert | AlarmNotification | ThrottleExplanation | Unrecognised


def classify(subject: Any, message: Any) -> Notification:
    """Tell one SNS message (its ``Subject`` and ``Message`` as the envelope carries them) apart."""
    title = subject if isinstance(subject, str) and subject else None
    if not isinstance(message, str):
        return Unrecognised(title, "" if message is None else repr(message), "the SNS record has no Message text")
    try:
        parsed = json.loads(message)
    except (ValueError, RecursionError):
        return Unrecognised(title, message, "not JSON")
    if isinstance(parsed, dict):
        if is_alert_document(parsed):
            return HotKeyAlert(title or "[hot key]", parsed)
        if parsed.get("kind") == THROTTLE_EXPLANATION and isinstance(parsed.get("table"), str):
            return ThrottleExplanation(title or "[throttling]", parsed)
        alarm = alarm_of(parsed)
        if alarm is not None:
            return alarm
    return Unrecognised(title, message, "neither a hot-key alert nor a CloudWatch alarm notification")


def is_alert_document(document: Mapping[str, Any]) -> bool:
    """Every field of ``Alert.document()``, a known status and numbers where it has numbers."""
    return (
        all(name in document for name in ALERT_FIELDS)
        and document["status"] in (Message.FIRING, Message.REMINDER, Message.RESOLVED)
        and isinstance(document["table"], str)
        and isinstance(document["key"], str)
        and all(_is_number(document[name]) for name in _NUMERIC_FIELDS)
    )


def alarm_of(message: Mapping[str, Any]) -> AlarmNotification | None:
    """The alarm a CloudWatch notification describes; None if the message is not one."""
    name, state = message.get("AlarmName"), message.get("NewStateValue")
    if not (isinstance(name, str) and name and isinstance(state, str) and state):
        return None
    trigger = message.get("Trigger")
    return AlarmNotification(
        name=name,
        new_state=state,
        old_state=_text(message.get("OldStateValue")),
        reason=_text(message.get("NewStateReason")),
        description=_text(message.get("AlarmDescription")),
        account=_text(message.get("AWSAccountId")),
        region=_text(message.get("Region")),
        arn=_text(message.get("AlarmArn")),
        changed_at=_text(message.get("StateChangeTime")),
        metric=_metric_of(trigger) if isinstance(trigger, dict) else None,
    )


def slack_payload(notification: Notification) -> dict[str, Any]:
    """Slack incoming-webhook JSON: a text fallback and one markdown section, per kind."""
    if isinstance(notification, HotKeyAlert):
        text, section = _alert_text(notification)
    elif isinstance(notification, AlarmNotification):
        text, section = _alarm_text(notification)
    elif isinstance(notification, ThrottleExplanation):
        text, section = _throttle_text(notification)
    else:
        text, section = _unrecognised_text(notification)
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": section}}]}


def _alert_text(alert: HotKeyAlert) -> tuple[str, str]:
    document = alert.document
    if document["status"] == Message.RESOLVED:
        detail = f"Back under the threshold for the whole window starting {document['window_start']}."
    else:
        index = document["index"]
        fix = (
            str(document["remedy"])
            if document["pattern"] == SHARD_FAMILY
            else short_fix(
                document["key"],
                int(document["suggested_shards"] or 1),
                float(document["share"]),
                str(index) if index else None,
            )
        )
        # (a possibly hot key's rate with the most it can be: its upper end alone reached the threshold)
        most = f" to at most {document['at_most_wcu_per_second']}" if document.get("possibly_hot") else ""
        detail = (
            f"*{document['wcu_per_second']}{most} WCU/s* ({document['percent_of_limit']}% of the "
            f"{document['partition_wcu_limit']} WCU/s partition limit), "
            f"{100 * float(document['share']):.1f}% of the table's writes in the window starting "
            f"{document['window_start']}.\nSuggested fix: {fix}."
        )
        if document["pattern"]:
            detail += f"\nPattern: {document['pattern']}."
    subject = _escape(alert.subject)
    return subject, f"*{subject}*\n{_escape(detail)}"


def _alarm_text(alarm: AlarmNotification) -> tuple[str, str]:
    was = f" (was {alarm.old_state})" if alarm.old_state else ""
    icon = _STATE_ICONS.get(alarm.new_state, ":bell:")
    lines = [f"{icon} *CloudWatch alarm {_escape(alarm.name)}: {_escape(alarm.new_state)}*{_escape(was)}"]
    if alarm.description:
        lines.append(_escape(_clip(alarm.description, FIELD_CHARS)))
    if alarm.reason:
        lines.append(f"Reason: {_escape(_clip(alarm.reason, FIELD_CHARS))}")
    if alarm.metric:
        lines.append(f"Metric: {_escape(_clip(alarm.metric, FIELD_CHARS))}")
    where = [
        f"{label}: {value}"
        for label, value in (("When", alarm.changed_at), ("Account", alarm.account), ("Region", alarm.region))
        if value
    ]
    if where:
        lines.append(_escape(" · ".join(where)))
    url = alarm.console_url
    if url:
        lines.append(f"<{url}|Open the alarm in the CloudWatch console>")
    lines.append("A CloudWatch alarm (the detector's own health), not a hot-key alert.")
    return f"[CloudWatch alarm] {_escape(alarm.name)}: {_escape(alarm.new_state)}{_escape(was)}", "\n".join(lines)


def _throttle_text(notice: ThrottleExplanation) -> tuple[str, str]:
    document = notice.document
    lines = [f"*{_escape(notice.subject)}*"]
    lines += [f"Limit hit: {_escape(str(text))}." for text in document.get("what_to_do") or []]
    for key in (document.get("keys") or [])[:5]:
        if isinstance(key, Mapping):
            confirmed = " (confirmed: throttling)" if key.get("confirmed") else ""
            lines.append(
                f"`{_escape(str(key.get('key')))}`: {key.get('throttled_requests')} throttled requests{confirmed}"
            )
    lines += [f"Note: {_escape(str(note))}." for note in document.get("notes") or []]
    return _escape(notice.subject), _clip("\n".join(lines), 2 * FIELD_CHARS)


def _unrecognised_text(message: Unrecognised) -> tuple[str, str]:
    subject = _escape(message.subject) if message.subject else "(no subject)"
    if message.body:
        preview = _clip(message.body, BODY_PREVIEW_CHARS).replace("```", "` ` `")
        body = f"```{_escape(preview)}```\n({len(message.body):,} characters)"
    else:
        body = "(empty message)"
    section = f"*Unrecognised message on the hot-key alert topic* ({_escape(message.why)})\nSubject: {subject}\n{body}"
    return f"[unrecognised message] {subject}", section


def _metric_of(trigger: Mapping[str, Any]) -> str | None:
    """``Namespace MetricName (Dimension=value, ...)``, or a metric-math alarm's metrics and expressions."""
    single = _metric_text(trigger)
    if single:
        return single
    metrics = trigger.get("Metrics")
    if not isinstance(metrics, list):
        return None
    parts = []
    for metric in metrics:
        if not isinstance(metric, dict):
            continue
        stat = metric.get("MetricStat")
        described = _metric_text(stat.get("Metric", {})) if isinstance(stat, dict) else None
        expression = _text(metric.get("Expression"))
        label = _text(metric.get("Label")) or _text(metric.get("Id"))
        if described:
            parts.append(described)
        elif expression:
            parts.append(f"{label} = {expression}" if label else expression)
    return "; ".join(parts) or None


def _metric_text(metric: Any) -> str | None:
    if not isinstance(metric, dict):
        return None
    name = _text(metric.get("MetricName"))
    if not name:
        return None
    namespace = _text(metric.get("Namespace"))
    dimensions = metric.get("Dimensions")
    pairs = [
        f"{d.get('name')}={d.get('value')}"
        for d in (dimensions if isinstance(dimensions, list) else [])
        if isinstance(d, dict) and d.get("name") is not None
    ]
    text = f"{namespace} {name}" if namespace else name
    return f"{text} ({', '.join(pairs)})" if pairs else text


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value)
    return text or None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _escape(text: str) -> str:
    """Slack's mrkdwn control characters (its documented escaping: &, <, >)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
