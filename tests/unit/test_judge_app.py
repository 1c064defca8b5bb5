"""The judge's handler: which look a wake-up is for (a chain message as Lambda delivers SQS messages, or the
watchdog's scheduled event), one look per invocation, and the metrics it writes."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from typing import Any

import pytest

from hotkeys.detector.alerts.judge import LookOutcome
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers import judge_app
from hotkeys.emulator.emulation import MemoryLookClaims

MINUTE = 1_796_083_200


def sqs_event(*bodies: str) -> dict[str, Any]:
    """An SQS event as Lambda's event source mapping delivers it (the developer guide's example's fields)."""
    return {
        "Records": [
            {
                "messageId": f"m-{number}",
                "receiptHandle": "handle",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1796083200000"},
                "messageAttributes": {},
                "md5OfBody": "x",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:judge-looks",
                "awsRegion": "us-east-1",
            }
            for number, body in enumerate(bodies)
        ]
    }


SCHEDULED = {
    "version": "0",
    "id": "e",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "time": "2026-12-01T00:00:37Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:123456789012:rule/watchdog"],
    "detail": {},
}


def body(due: int, sent_at: float) -> str:
    return json.dumps({"due": due, "sent_at": sent_at})


def test_a_wake_up_is_for_its_messages_look_or_the_watchdogs() -> None:
    assert judge_app.woken_for(sqs_event(body(MINUTE + 18, MINUTE + 6.2))) == (MINUTE + 18, MINUTE + 6.2)
    assert judge_app.woken_for(SCHEDULED) is None
    assert judge_app.woken_for(sqs_event("{", body(MINUTE + 6, MINUTE - 5.5))) == (MINUTE + 6, MINUTE - 5.5)
    # a queue event with no body the judge wrote is logged and left: no look, never the watchdog's run
    for bodies in (["hello"], [json.dumps({"due": "soon", "sent_at": 1})], [body(MINUTE + 4000, MINUTE)]):
        with pytest.raises(judge_app.NoLookMessage):
            judge_app.woken_for(sqs_event(*bodies))


class Recorder:
    def __init__(self) -> None:
        self.claims = MemoryLookClaims()
        self.sent: list[tuple[int, int]] = []

    def send(self, due: int, delay: int, sent_at: float) -> None:
        self.sent.append((due, delay))


class OneTable:
    def __init__(self, outcome: LookOutcome) -> None:
        self.outcome = outcome
        self.looks = 0

    def look(self) -> LookOutcome:
        self.looks += 1
        return self.outcome


def handle(
    event: dict[str, Any], judge: OneTable, recorder: Recorder, now: float, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    """The handler with these ports at ``now``; the EMF lines it printed."""
    container = judge_app.Container(Settings(stats_table_name="s"), judge, recorder.claims, recorder.send)  # type: ignore[arg-type]
    monkeypatch.setattr(judge_app, "_container", lambda: container)
    monkeypatch.setattr(judge_app.time, "time", lambda: now)
    monkeypatch.setattr(judge_app.time, "sleep", lambda _s: None)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")

    class Context:
        function_name, memory_limit_in_mb, aws_request_id = "judge", 256, "r"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:judge"

    printed = io.StringIO()
    with redirect_stdout(printed):
        judge_app.handler(event, Context())  # type: ignore[arg-type]
    return [json.loads(text) for text in printed.getvalue().splitlines() if '"_aws"' in text]


def value(line: dict[str, Any], name: str) -> float:
    found = line[name]
    (single,) = found if isinstance(found, list) else [found]
    return float(single)


def test_a_message_makes_its_look_once_and_sends_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    judge, recorder = OneTable(LookOutcome(tables=2, heads=9)), Recorder()
    message = sqs_event(body(MINUTE + 18, MINUTE + 6.2))
    (line,) = handle(message, judge, recorder, MINUTE + 18.7, monkeypatch)
    assert judge.looks == 1 and recorder.sent == [(MINUTE + 30, 12)]
    # every look writes its count and lateness; what did not happen is not written (billed per hour)
    assert value(line, "JudgeLooks") == 2 and value(line, "JudgeLookSeconds") == pytest.approx(0.7)
    assert not {"JudgeAlertsPublished", "JudgeLooksFailed", "JudgeWhatIfNotices", "JudgeChainRestarts"} & line.keys()
    # the same message again (SQS delivers at least once): its look is claimed, nothing is made or sent
    assert handle(message, judge, recorder, MINUTE + 19.0, monkeypatch) == []
    assert judge.looks == 1 and len(recorder.sent) == 1


def test_the_watchdog_restarting_the_chain_and_rare_counts_are_written(monkeypatch: pytest.MonkeyPatch) -> None:
    judge, recorder = OneTable(LookOutcome(tables=1, failed=1, published=2, what_ifs=1)), Recorder()
    (line,) = handle(SCHEDULED, judge, recorder, MINUTE + 37.0, monkeypatch)
    counts = [value(line, name) for name in ("JudgeChainRestarts", "JudgeLooksFailed", "JudgeAlertsPublished")]
    assert counts == [1, 1, 2] and value(line, "JudgeWhatIfNotices") == 1  # (a minute's run never sent it)
    assert recorder.sent == [(MINUTE + 42, 5)]


def test_a_queue_message_the_judge_did_not_write_makes_no_look_and_no_watchdog_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge, recorder = OneTable(LookOutcome(tables=1)), Recorder()
    assert handle(sqs_event("hello"), judge, recorder, MINUTE + 37.0, monkeypatch) == []
    assert judge.looks == 0 and recorder.sent == [] and recorder.claims.claims == {}


def test_the_longest_look_expected_at_10000_shards_fits_the_judges_timeout_at_the_default_memory() -> None:
    # The deploy's transient at 10,000 shards: a look reads 4 windows of every shard's heads (bench.scale:
    # heads_read_per_look_max 40,000), at the cost model's CPU per head (a 1.6 margin over the measured)
    # and the default memory's share of a vCPU
    from hotkeys.cli import cost
    from hotkeys.deployment import JUDGE_MEMORY_MB, JUDGE_TIMEOUT_SECONDS

    seconds = 4 * 10_000 * cost.JUDGE_CPU_SECONDS_PER_HEAD / (JUDGE_MEMORY_MB / 1769)
    assert seconds + cost.JUDGE_INVOCATION_OVERHEAD_SECONDS < JUDGE_TIMEOUT_SECONDS
