"""When the judge looks: just after every flush boundary, whenever EventBridge happens to fire.

A look is due ``LOOK_DELAY_SECONDS`` after each flush boundary (the consumers write their heads at those
boundaries of event time, aligned to the epoch). EventBridge cannot wake a function at a chosen second:
a scheduled rule "runs within that minute but not on the precise 0th second", and a rate rule keeps the
phase of its creation for good. So the judge keeps its own clock (docs/decisions.md §76): each look is one
short invocation, which sends the judge a message delayed to the next due look (SQS ``DelaySeconds``).

* **Claims.** A message claims the look it was sent for (one conditional write) and makes it; any other
  wake-up for that look (a duplicate message: SQS standard queues deliver at least once; a retry) finds
  the claim and stops. A look records when it ended, then sends the next message: one claimant, one
  message, so the chain never forks and a look is never made twice.
* **Chain alive.** The latest claim says whether the chain runs: a look that ended sent its message, which
  claims within a flush and ``CLAIM_GRACE_SECONDS``; a look that has not ended may run until the function's
  timeout (thousands of shards: a second chain beside it would double the work).
* **Watchdog.** The minute rule wakes the judge at its phase; while the chain is alive it does nothing.
  Otherwise it claims the look due ``CLAIM_GRACE_SECONDS`` before it fired and makes it at once, which
  restarts the chain (the first run after a deploy, a message lost, a send that failed; a look that timed
  out, after the timeout). It never waits; its runs say when they restarted the chain (``restarted``).
* **Stale messages** (the chain was no longer alive when they came: the watchdog's restart owns the
  looks) are dropped: a message is alive exactly while its chain is, so the two never both claim. A late
  one still in time looks at once (heads are cumulative: one look reads all a missed one would have);
  an early one waits for its time.

Pure: the claims, the queue, the clock and sleep are passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, LookOutcome
from hotkeys.detector.alerts.ports import LookClaim, LookClaims, NextLook

# How long after a due look the watchdog leaves it to the chain (its message is delivered within about a
# second of the look's time: ``next_message``).
CLAIM_GRACE_SECONDS = 5.0


def due_at(now: float, flush_seconds: int) -> int:
    """The latest look due at or before ``now``."""
    return math.floor((now - LOOK_DELAY_SECONDS) / flush_seconds) * flush_seconds + LOOK_DELAY_SECONDS


def next_due(now: float, flush_seconds: int) -> int:
    """The earliest look due strictly after ``now``."""
    return due_at(now, flush_seconds) + flush_seconds


def next_message(now: float, flush_seconds: int) -> tuple[int, int]:
    """The next look's due time and the message's delay: whole seconds (SQS's unit), rounded up so the
    message is never delivered before its look is due."""
    due = next_due(now, flush_seconds)
    return due, max(0, math.ceil(due - now))


def watchdog_due(fired: float, flush_seconds: int) -> int:
    """The look a watchdog run fired at ``fired`` claims if nobody did: the latest one the chain has had
    ``CLAIM_GRACE_SECONDS`` to claim (it does not wait: its wake-up is billed)."""
    return due_at(fired - CLAIM_GRACE_SECONDS, flush_seconds)


@dataclass(frozen=True)
class Wake:
    """What one wake-up of the judge did."""

    due: int  # the look it was for
    looked: bool  # it claimed the look and made it (False: another wake-up had, the chain is alive, or stale)
    late: float = 0.0  # seconds after its due time the look began
    outcome: LookOutcome | None = None
    restarted: bool = False  # a watchdog run that found the chain stopped


def given_up_at(ended_at: float, flush_seconds: int) -> float:
    """When a chain whose look ended at ``ended_at`` counts as stopped: its next message claims within a
    flush and the grace of that end. The watchdog restarts it from then, and that message is stale."""
    return ended_at + flush_seconds + CLAIM_GRACE_SECONDS


def alive_until(latest: LookClaim, flush_seconds: int, timeout_seconds: float) -> float:
    """Until when the chain of ``latest`` runs without the watchdog (``given_up_at`` its end); a look not
    ended may run until the function's timeout."""
    if latest.ended_at is not None:
        return given_up_at(latest.ended_at, flush_seconds)
    return latest.at + timeout_seconds + CLAIM_GRACE_SECONDS


@dataclass(frozen=True)
class LookChain:
    """A judge's chain of looks as its container runs them: the claims, where the next look's message
    goes, the clock and how it waits, the flush between looks and how long a look may run (the
    function's timeout)."""

    claims: LookClaims
    send: NextLook
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    flush_seconds: int
    timeout_seconds: float

    def wake(self, look: Callable[[], LookOutcome], message: tuple[int, float] | None) -> Wake:
        """One wake-up: ``message`` is the look a chain message was sent for and when it was sent (None: the
        watchdog)."""
        clock, claims, flush_seconds = self.clock, self.claims, self.flush_seconds
        now = clock()
        if message is None:
            due = watchdog_due(now, flush_seconds)
            latest = claims.latest()
            if latest is not None and now < alive_until(latest, flush_seconds, self.timeout_seconds):
                return Wake(due, looked=False)
        else:
            due, sent_at = message
            if now >= given_up_at(sent_at, flush_seconds):
                return Wake(due, looked=False)  # stale: its chain was given up (the watchdog restarts it)
            if due > now:  # delivered early (clocks differ): wait for its time
                self.sleep(due - now)
        began = clock()
        if not claims.claim(LookClaim(due, began)):
            return Wake(due, looked=False)
        try:
            outcome = look()
        finally:
            # Whatever the look did (one that failed must not stop the looks after it): its end, then the
            # next look's message.
            ended = clock()
            try:
                claims.ended(due, ended)
            finally:
                self.send(*next_message(ended, flush_seconds), ended)
        return Wake(due, True, began - due, outcome, message is None)
