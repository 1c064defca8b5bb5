"""The judge's clock (alerts.look_chain): a look just after every flush boundary whatever second of the
minute EventBridge fires its watchdog at, each look made once, a chain that never forks and restarts
within a minute when it breaks."""

from __future__ import annotations

import itertools
import random

import pytest

from hotkeys.cli.emulation import DELIVERY_SECONDS, JudgeWakeUps, MemoryLookClaims, judge_times
from hotkeys.detector.alerts import look_chain
from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, LookOutcome
from hotkeys.detector.ports import LookClaim

MINUTE = 1_796_083_200  # a minute's start
FLUSH = 12
# EventBridge fires a rule "within that minute but not on the precise 0th second", at the phase of its
# creation: every test runs at these seconds of the minute and one drawn at random.
# (the drawn one's test id says "drawn": pytest-xdist's workers must collect the same ids)
PHASES = (0.0, 0.4, 6.5, 15.0, 37.0, 55.0, 59.9, pytest.param(random.Random().uniform(0, 60), id="drawn"))


class RecordingJudge:
    def __init__(self) -> None:
        self.looked: list[float] = []
        self.now = 0.0

    def look(self) -> LookOutcome:
        self.looked.append(self.now)
        return LookOutcome(tables=1)


def run_chain(phase: float, minutes: int, *, lose: set[int] = frozenset(), duplicate: bool = False) -> JudgeWakeUps:  # type: ignore[assignment]
    """The deployed wake-ups for ``minutes`` from MINUTE + 1: messages for the dues in ``lose`` are never
    delivered; with ``duplicate``, every message is delivered twice."""
    judge = RecordingJudge()
    wake_ups = JudgeWakeUps(judge, FLUSH, phase, random.Random(1))  # type: ignore[arg-type]
    end = MINUTE + 60 * minutes
    for at in wake_ups.times(MINUTE + 1):
        if at > end:
            break
        judge.now = at
        sent = len(wake_ups.messages)
        wake_ups.wake(at)
        if len(wake_ups.messages) > sent:
            newest = max(wake_ups.messages, key=lambda message: message[1])
            if newest[1] in lose:
                wake_ups.messages.remove(newest)
            elif duplicate:
                wake_ups.messages.append((newest[0] + 0.2, newest[1]))
            wake_ups.messages.sort()
    return wake_ups


def looks(wake_ups: JudgeWakeUps) -> list[look_chain.Wake]:
    return [woke for woke in wake_ups.wakes if woke.looked]


def test_due_times_follow_the_epochs_flush_boundaries_at_any_second() -> None:
    for now in (MINUTE + tenth / 10 for tenth in range(0, 1200)):
        due = look_chain.due_at(now, FLUSH)
        assert due <= now < due + FLUSH and (due - LOOK_DELAY_SECONDS) % FLUSH == 0
        after, delay = look_chain.next_message(now, FLUSH)
        assert after == due + FLUSH and now + delay >= after > now + delay - 1


@pytest.mark.parametrize("phase", PHASES)
def test_every_look_after_the_first_is_made_once_and_on_time_at_any_phase(phase: float) -> None:
    wake_ups = run_chain(phase, minutes=10)
    made = looks(wake_ups)
    # The first look is the watchdog's, at its phase within a minute of the start (for the look last due
    # CLAIM_GRACE_SECONDS before it); every one due after it is made once, by the chain, within a second
    # and a delivery of its time
    first = made[0]
    assert first.restarted and first.due + first.late == MINUTE + 1 + (phase - 1) % 60
    assert first.due == look_chain.due_at(first.due + first.late - look_chain.CLAIM_GRACE_SECONDS, FLUSH)
    dues = [woke.due for woke in made[1:]]
    assert dues[0] == look_chain.next_due(first.due + first.late, FLUSH)
    assert dues == list(range(dues[0], dues[-1] + 1, FLUSH)) and dues[-1] > MINUTE + 60 * 10 - 2 * FLUSH
    assert all(0 <= woke.late <= 1 + DELIVERY_SECONDS for woke in made[1:])
    assert not any(woke.restarted for woke in made[1:])


@pytest.mark.parametrize("phase", PHASES)
def test_duplicated_messages_never_fork_the_chain(phase: float) -> None:
    wake_ups = run_chain(phase, minutes=5, duplicate=True)
    dues = [woke.due for woke in looks(wake_ups)]
    assert len(dues) == len(set(dues)) and dues == sorted(dues)
    # each duplicate found its look claimed and sent nothing: the wake-ups are twice the looks at most
    assert len(wake_ups.wakes) <= 2 * len(dues) + 6  # (+ the watchdog's runs)


@pytest.mark.parametrize("phase", PHASES)
def test_a_lost_message_is_restarted_by_the_watchdog_within_a_minute(phase: float) -> None:
    lost = MINUTE + 60 * 3 + LOOK_DELAY_SECONDS  # the message for the look due 3 minutes in never arrives
    wake_ups = run_chain(phase, minutes=8, lose={lost})
    made = looks(wake_ups)
    dues = [woke.due for woke in made]
    # (the watchdog makes the lost look itself when it fires within its grace: phases 6-9 s, 18-21 s, ...)
    restart = next(woke for woke in made if woke.due >= lost)
    assert restart.restarted and restart.due + restart.late - lost <= 60 + look_chain.CLAIM_GRACE_SECONDS
    after = [woke.due for woke in made if woke.due > restart.due]
    assert after[0] == look_chain.next_due(restart.due + restart.late, FLUSH)
    assert after == list(range(after[0], after[-1] + 1, FLUSH))  # the chain goes on from it
    assert len(dues) == len(set(dues))


def test_a_look_that_fails_still_sends_the_next_message() -> None:
    sent: list[tuple[int, int]] = []

    def failing() -> LookOutcome:
        raise RuntimeError("throttled")

    with pytest.raises(RuntimeError):
        look_chain.wake(
            failing, MemoryLookClaims(), lambda *m: sent.append(m), lambda: MINUTE + 18.4, lambda _s: None, FLUSH, 18
        )
    assert sent == [(MINUTE + 30, 12)]


def test_an_early_message_waits_for_its_time_and_a_late_one_looks_at_the_latest_due() -> None:
    now = [MINUTE + 17.6]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    claims = MemoryLookClaims()
    early = look_chain.wake(LookOutcome, claims, lambda *_m: None, lambda: now[0], sleep, FLUSH, MINUTE + 18)
    assert slept == [pytest.approx(0.4)] and early.due == MINUTE + 18
    now[0] = MINUTE + 43.0  # the message for :18 delivered after :30 and :42 were due
    late = look_chain.wake(LookOutcome, claims, lambda *_m: None, lambda: now[0], sleep, FLUSH, MINUTE + 18)
    assert late.due == MINUTE + 42 and late.late == pytest.approx(1.0)
    assert sorted(claims.claims) == [MINUTE + 18, MINUTE + 42]


def test_a_watchdog_run_restarts_a_stopped_chain_at_once_with_the_look_due_a_grace_before() -> None:
    slept: list[float] = []
    due = MINUTE + LOOK_DELAY_SECONDS
    for fired, claims in ((due + 1.0, due - FLUSH), (due + look_chain.CLAIM_GRACE_SECONDS, due), (due + 11.9, due)):
        woke = look_chain.wake(
            LookOutcome, MemoryLookClaims(), lambda *_m: None, lambda at=fired: at, slept.append, FLUSH, None
        )
        assert woke.looked and woke.restarted and woke.due == claims, fired - due
    assert slept == []  # (a watchdog run is billed: it never waits)


def test_a_watchdog_run_leaves_a_live_chain_be_even_through_a_long_look() -> None:
    due = MINUTE + LOOK_DELAY_SECONDS
    for seconds, fired, leaves in (
        (0.01, due + 0.7 + FLUSH + look_chain.CLAIM_GRACE_SECONDS - 0.1, True),  # its next claim is barely due
        (0.01, due + 0.7 + FLUSH + look_chain.CLAIM_GRACE_SECONDS + 0.1, False),  # stopped: restarted
        (50.0, due + 0.7 + 100 + FLUSH, True),  # a look of the last one's 50 s may still run: left be
        (50.0, due + 0.7 + 100 + FLUSH + look_chain.CLAIM_GRACE_SECONDS + 0.1, False),
    ):
        claims = MemoryLookClaims()
        claims.claim(LookClaim(due, due + 0.7, seconds))
        woke = look_chain.wake(LookOutcome, claims, lambda *_m: None, lambda at=fired: at, lambda _s: None, FLUSH, None)
        assert woke.looked is not leaves and woke.restarted is not leaves, (seconds, fired - due)


@pytest.mark.parametrize("phase", PHASES)
def test_the_benchmarks_unbroken_chain_is_the_emulated_one(phase: float) -> None:
    made = looks(run_chain(phase, minutes=4))
    times = list(itertools.takewhile(lambda at: at <= MINUTE + 240, judge_times(MINUTE + 1, FLUSH, phase)))
    assert times[0] == made[0].due + made[0].late
    assert [look_chain.due_at(at, FLUSH) for at in times[1:]] == [woke.due for woke in made[1:]]
