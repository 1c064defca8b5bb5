"""The judge's run: woken once a minute, it looks just after each flush boundary of that minute, makes the
looks it was woken too late for at once, and stops before its time runs out mid-look."""

from __future__ import annotations

from hotkeys.detector.alerts.judge import LOOK_DELAY_SECONDS, LookOutcome
from hotkeys.detector.config import Settings
from hotkeys.detector.handlers import judge_app

MINUTE = 1_796_083_200  # a minute's start (the epoch's minutes are the schedule's)


def test_a_run_looks_just_after_each_flush_boundary_of_its_minute() -> None:
    looks = list(judge_app.look_times(MINUTE + 0.4, 12))
    assert [at - MINUTE for at in looks] == [LOOK_DELAY_SECONDS + 12 * n for n in range(5)] == [6, 18, 30, 42, 54]
    # woken late, it still covers its minute's looks (those already due at once), and none of the next
    assert list(judge_app.look_times(MINUTE + 25, 12)) == looks
    # a flush interval that does not divide the minute: the looks follow the epoch-aligned boundaries
    odd = list(judge_app.look_times(MINUTE, 25))
    assert odd and all((at - LOOK_DELAY_SECONDS) % 25 == 0 and MINUTE <= at < MINUTE + 60 for at in odd)


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Judge:
    """Looks that take ``seconds`` each, on the run's clock."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds
        self.looked: list[float] = []

    def look(self) -> LookOutcome:
        self.looked.append(self.clock.now)
        self.clock.now += self.seconds
        return LookOutcome(tables=1, heads=3, published=1)


def test_a_run_makes_every_look_of_its_minute_and_sums_them() -> None:
    clock = Clock(MINUTE + 0.5)
    judge = Judge(clock, 0.2)
    total = judge_app.run(judge, Settings(stats_table_name="s"), lambda: clock.now, clock.sleep, lambda: 90.0)  # type: ignore[arg-type]
    assert [round(at - MINUTE, 1) for at in judge.looked] == [6, 18, 30, 42, 54]
    assert (total.tables, total.heads, total.published) == (5, 15, 5)


def test_a_run_skips_a_look_it_may_not_finish_before_its_timeout() -> None:
    # Given looks of 4 s, and a function with 90 s from its start at the minute's start
    clock = Clock(MINUTE)
    judge = Judge(clock, 4.0)
    deadline = MINUTE + 49.0  # (49 s left at its start)
    judge_app.run(
        judge,
        Settings(stats_table_name="s"),
        lambda: clock.now,
        clock.sleep,
        lambda: deadline - clock.now,  # type: ignore[arg-type]
    )
    # Then it looks while twice its longest look (8 s, over MARGIN_SECONDS) fits before the deadline: not at
    # second 42, with 7 s left
    assert [at - MINUTE for at in judge.looked] == [6, 18, 30]
