"""Lambda entry point of the judge: woken every minute by an EventBridge schedule, it looks at every
watched table just after each of the minute's flush boundaries (``alerts.judge``), then returns.

The schedule's event (``{"source": "aws.events", "detail-type": "Scheduled Event", ...}``) carries
nothing the judge needs: its clock says which boundaries are due. A run stops before the next run's
first look, so two runs overlap only when one overran (then both look: safe, only wasteful).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from hotkeys.deployment import JUDGE_SCHEDULE_SECONDS
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, Judge, LookOutcome
from hotkeys.detector.config import Settings, load_settings
from hotkeys.detector.handlers.wiring import build_judge
from hotkeys.detector.observability import logger, metrics

# The schedule's period (the stack's rule): a run covers the looks of the minute it was woken in.
RUN_SECONDS = JUDGE_SCHEDULE_SECONDS
# A look is skipped if the function has less time left than this (or than twice its longest look).
MARGIN_SECONDS = 5


def look_times(start: float, flush_seconds: int, seconds: float = RUN_SECONDS) -> Iterator[float]:
    """The looks of the run woken at ``start``: every flush boundary plus ``LOOK_DELAY_SECONDS`` in the
    ``seconds`` (the schedule's period, aligned to the epoch) that ``start`` falls in. A run woken late
    (EventBridge's delivery is not to the second) makes the looks it missed at once."""
    period_start = start - start % seconds
    at = period_start + (LOOK_DELAY_SECONDS - period_start) % flush_seconds
    while at < period_start + seconds:
        yield at
        at += flush_seconds


def run(
    judge: Judge,
    settings: Settings,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    remaining: Callable[[], float],
) -> LookOutcome:
    """One scheduled run: a look at each due time of this minute, while the function has time for it."""
    total = LookOutcome()
    start = clock()
    longest = 0.0
    for at in look_times(start, settings.flush_seconds):
        wait = at - clock()
        if wait > 0:
            sleep(wait)
        # A look cut short by the timeout could leave a claimed message unsent until a takeover: skip it
        # unless there is time for twice the longest one yet (the next run makes it).
        if remaining() < max(MARGIN_SECONDS, 2 * longest):
            break
        began = clock()
        outcome = judge.look()
        longest = max(longest, clock() - began)
        for name in ("tables", "failed", "heads", "published", "refused", "started", "resolved"):
            setattr(total, name, getattr(total, name) + getattr(outcome, name))
        late = clock() - at
        metrics.add_metric(name="JudgeLookSeconds", unit=MetricUnit.Seconds, value=round(late, 3))
    return total


@cache
def _this_judge() -> tuple[Settings, Judge]:
    settings = load_settings(os.environ)
    return settings, build_judge(settings, AwsClients())


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings, judge = _this_judge()
    outcome = run(judge, settings, time.time, time.sleep, lambda: context.get_remaining_time_in_millis() / 1000)
    metrics.add_metric(name="JudgeLooks", unit=MetricUnit.Count, value=outcome.tables)
    metrics.add_metric(name="JudgeAlertsPublished", unit=MetricUnit.Count, value=outcome.published)
    if outcome.what_ifs:
        metrics.add_metric(name="JudgeWhatIfNotices", unit=MetricUnit.Count, value=outcome.what_ifs)
    # Looks that failed (the alarm's metric): every run writes it, so the alarm sees zeros, not gaps.
    metrics.add_metric(name="JudgeLooksFailed", unit=MetricUnit.Count, value=outcome.failed)
    logger.info("judge run", extra=vars(outcome))
    return vars(outcome)
