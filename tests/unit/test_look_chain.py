"""The judge's clock (alerts.look_chain): a look just after every flush boundary whatever second of the
minute EventBridge fires its watchdog at, each look made once, a chain that never forks and restarts
within a minute when it breaks."""

from __future__ import annotations

import itertools
import random

import pytest

from hotkeys.detector.alerts import look_chain
from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, LookOutcome
from hotkeys.detector.alerts.ports import LookClaim
from hotkeys.emulator.emulation import DELIVERY_SECONDS, JudgeWakeUps, MemoryLookClaims, judge_times

MINUTE = 1_796_083_200  # a minute's start
FLUSH = 12
TIMEOUT = 300
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
                wake_ups.messages.append((newest[0] + 0.2, newest[1], newest[2]))
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
    # (the chain counts as alive until a flush and the 5 s grace after the look before ended)
    assert restart.restarted and restart.due + restart.late - lost <= 60 + 5 + 1 + DELIVERY_SECONDS
    after = [woke.due for woke in made if woke.due > restart.due]
    assert after[0] == look_chain.next_due(restart.due + restart.late, FLUSH)
    assert after == list(range(after[0], after[-1] + 1, FLUSH))  # the chain goes on from it
    assert len(dues) == len(set(dues))


def wake(
    claims: MemoryLookClaims, now: list[float], message: tuple[int, float] | None, **kwargs: object
) -> look_chain.Wake:
    """A wake-up at ``now[0]`` (sleeping moves it), sending into ``kwargs["sent"]`` if given."""
    sent = kwargs.get("sent", [])
    look = kwargs.get("look", LookOutcome)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    chain = look_chain.LookChain(
        claims,
        lambda *m: sent.append(m),  # type: ignore[attr-defined]
        lambda: now[0],
        sleep,
        FLUSH,
        TIMEOUT,
    )
    return chain.wake(look, message)  # type: ignore[arg-type]


def test_a_look_that_fails_records_its_end_and_still_sends_the_next_message() -> None:
    sent: list[tuple[int, int, float]] = []

    def failing() -> LookOutcome:
        raise RuntimeError("throttled")

    claims = MemoryLookClaims()
    with pytest.raises(RuntimeError):
        wake(claims, [MINUTE + 18.4], (MINUTE + 18, MINUTE + 6.2), sent=sent, look=failing)
    assert sent == [(MINUTE + 30, 12, MINUTE + 18.4)]
    assert claims.claims[MINUTE + 18].ended_at == MINUTE + 18.4


def test_an_early_message_waits_for_its_time_a_late_one_looks_at_once_and_a_stale_one_is_dropped() -> None:
    claims = MemoryLookClaims()
    now = [MINUTE + 17.6]
    early = wake(claims, now, (MINUTE + 18, MINUTE + 6.3))
    assert now[0] == pytest.approx(MINUTE + 18) and early.looked and early.due == MINUTE + 18
    # late (the function was throttled) but its chain still alive: it makes its look at once
    late = wake(claims, [MINUTE + 34.0], (MINUTE + 30, MINUTE + 18.0))
    assert late.looked and late.due == MINUTE + 30 and late.late == pytest.approx(4.0)
    # stale: a flush and the 5 s grace after it was sent, the watchdog may have restarted the chain
    # (its look unclaimed: a message taken now would start a second chain beside the watchdog's)
    stale = wake(claims, [MINUTE + 34.0 + FLUSH + 5.0], (MINUTE + 42, MINUTE + 34.0))
    assert not stale.looked and sorted(claims.claims) == [MINUTE + 18, MINUTE + 30]


def test_a_watchdog_run_restarts_a_stopped_chain_at_once_with_the_look_due_a_grace_before() -> None:
    due = MINUTE + LOOK_DELAY_SECONDS
    for fired, claimed in ((due + 1.0, due - FLUSH), (due + 5.0, due), (due + 11.9, due)):
        now = [fired]
        woke = wake(MemoryLookClaims(), now, None)
        assert woke.looked and woke.restarted and woke.due == claimed, fired - due
        assert now[0] == fired  # (a watchdog run is billed: it never waits)


def test_a_watchdog_run_leaves_a_live_chain_be_even_through_a_long_look() -> None:
    due = MINUTE + LOOK_DELAY_SECONDS
    for ended, fired, leaves in (
        (due + 0.8, due + 0.8 + 12 + 5 - 0.1, True),  # its message claims within a flush and the grace
        (due + 0.8, due + 0.8 + 12 + 5 + 0.1, False),  # stopped: restarted
        (None, due + 0.7 + TIMEOUT + 5 - 0.1, True),  # a look not ended may run until the timeout
        (None, due + 0.7 + TIMEOUT + 5 + 0.1, False),  # it died: restarted
    ):
        claims = MemoryLookClaims()
        claims.claim(LookClaim(due, due + 0.7, ended))
        woke = wake(claims, [fired], None)
        assert woke.looked is not leaves and woke.restarted is not leaves, (ended, fired - due)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("look_seconds", [0.0, 13.0, 60.0, 130.0])
def test_looks_longer_than_a_flush_never_fork_the_chain(phase: float, look_seconds: float) -> None:
    # Looks of a flush or longer (thousands of shards: the next look starts when one ends), the watchdog
    # firing at its phase every minute, during looks too: one look at a time, never two chains
    claims, now, fired = MemoryLookClaims(), [MINUTE + phase], [MINUTE + phase]
    messages: list[tuple[float, int, float]] = []
    running: list[tuple[float, float]] = []  # (began, ended) of each look

    def watchdog() -> None:
        now[0] = fired[0]
        fired[0] += 60
        look_chain.LookChain(claims, send, lambda: now[0], lambda s: None, FLUSH, TIMEOUT).wake(look, None)

    def look() -> LookOutcome:
        began = now[0]
        running.append((began, began + look_seconds))
        while fired[0] < began + look_seconds:  # the watchdog's runs while this look runs
            watchdog()
        now[0] = began + look_seconds
        return LookOutcome()

    def send(due: int, delay: int, sent_at: float) -> None:
        messages.append((sent_at + delay + 0.5, due, sent_at))

    while fired[0] < MINUTE + 1800:
        messages.sort()
        if messages and messages[0][0] <= fired[0]:
            at, due, sent_at = messages.pop(0)
            now[0] = max(at, now[0])
            chain = look_chain.LookChain(claims, send, lambda: now[0], lambda s: None, FLUSH, TIMEOUT)
            chain.wake(look, (due, sent_at))
        else:
            watchdog()
    running.sort()
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(running)), "two looks at once"
    assert len(messages) <= 1  # one chain: at most one message in flight
    # and the chain kept looking: the next look within a flush of the one before's end
    gaps = [later[0] - earlier[1] for earlier, later in itertools.pairwise(running)]
    assert len(running) >= (1800 - 60) / (look_seconds + FLUSH + 1) - 1 and max(gaps) <= FLUSH + 1


@pytest.mark.parametrize("phase", PHASES)
def test_the_benchmarks_unbroken_chain_is_the_emulated_one(phase: float) -> None:
    made = looks(run_chain(phase, minutes=4))
    times = list(itertools.takewhile(lambda at: at <= MINUTE + 240, judge_times(MINUTE + 1, FLUSH, phase)))
    assert times[0] == made[0].due + made[0].late
    assert [look_chain.due_at(at, FLUSH) for at in times[1:]] == [woke.due for woke in made[1:]]
