"""When the judge looks: just after every flush boundary, whenever EventBridge happens to fire.

A look is due ``LOOK_DELAY_SECONDS`` after each flush boundary (the consumers write their heads at those
boundaries of event time, aligned to the epoch). EventBridge cannot wake a function at a chosen second:
a scheduled rule "runs within that minute but not on the precise 0th second", and a rate rule keeps the
phase of its creation for good. So the judge keeps its own clock (docs/decisions.md §76): each look is one
short invocation, which sends the judge a message delayed to the next due look (SQS ``DelaySeconds``).

* **Claims.** Whoever first claims a due look's time (one conditional write) makes that look; any other
  wake-up for the same time (a duplicate message: SQS standard queues deliver at least once; a retry;
  the watchdog) finds the claim and stops. Only the claimant sends the next message, so the chain can
  never fork, and a look is never made twice.
* **Watchdog.** The minute rule wakes the judge at its phase. The chain is alive while its latest claim
  is younger than a flush, the grace, and twice what the claimant's previous look took (a long look, at
  thousands of shards, is still running: a second chain beside it would double the work). Otherwise it
  claims the latest look that was due ``CLAIM_GRACE_SECONDS`` ago and makes it at once, which restarts
  the chain (the first run after a deploy, a message lost, a send that failed, a look that timed out). It
  never waits: a broken chain misses about a minute of looks, and the watchdog's runs say so
  (``restarted``).
* **Late wake-ups** look at once; the look's due time is then the latest one due (heads are cumulative:
  one look reads all a missed one would have). An early delivery waits for its time.

Pure: the claims, the queue, the clock and sleep are passed in.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, LookOutcome
from hotkeys.detector.ports import LookClaim, LookClaims, NextLook

# How long after a due look the watchdog leaves it to the chain (its message is delivered within about a
# second of the look's time: ``next_message``).
CLAIM_GRACE_SECONDS = 3.0


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
    looked: bool  # it claimed the look and made it (False: another wake-up had, or a chain is alive)
    late: float = 0.0  # seconds after its due time the look began
    outcome: LookOutcome | None = None
    restarted: bool = False  # a watchdog run that found the chain stopped
    seconds: float = 0.0  # how long the look took


def alive(latest: LookClaim | None, now: float, flush_seconds: int) -> bool:
    """Whether the chain's latest claim says it is still looking (the watchdog leaves it be)."""
    if latest is None:
        return False
    return now < latest.at + 2 * latest.seconds + flush_seconds + CLAIM_GRACE_SECONDS


def wake(
    look: Callable[[], LookOutcome],
    claims: LookClaims,
    send: NextLook,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    flush_seconds: int,
    message_due: int | None,
    previous_seconds: float = 0.0,
) -> Wake:
    """One wake-up: ``message_due`` is the look a chain message was sent for (None: the watchdog);
    ``previous_seconds``: how long this container's previous look took."""
    now = clock()
    if message_due is None:
        due = watchdog_due(now, flush_seconds)
        if alive(claims.latest(), now, flush_seconds):
            return Wake(due, looked=False)
    else:
        if message_due > now:  # delivered early (clocks differ): wait for its time
            sleep(message_due - now)
        due = max(message_due, due_at(clock(), flush_seconds))
    began = clock()
    if not claims.claim(LookClaim(due, began, previous_seconds)):
        return Wake(due, looked=False)
    try:
        outcome = look()
    finally:
        # Sent whatever the look did: a look that failed must not stop the looks after it.
        ended = clock()
        send(*next_message(ended, flush_seconds))
    return Wake(due, True, began - due, outcome, message_due is None, ended - began)
