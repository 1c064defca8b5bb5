"""Waiting for AWS to get somewhere: ask, pause, ask again, until the answer is yes or the time is up.

Every wait of the custom resources goes through ``poll_until`` (and ``retry_while``, a call refused while a
state passes), with a ``pause`` that says when to stop: a ``Deadline`` on a clock (one budget for every
wait of an invocation, so that its handler answers before its function times out), or ``pauses`` counting
tries. Both take the clock and the sleep as values, so tests run them on fake time.

Why not botocore's waiters: none waits for what these wait for (Lambda's are for functions and versions,
not event source mappings; DynamoDB has none for a table's tags), and a waiter counts its own attempts at
its own delay, which cannot share one deadline with the calls and waits around it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(check: Callable[[], bool], pause: Callable[[], bool]) -> bool:
    """Ask ``check`` until it says True (then True); ``pause`` runs between two asks and says False, at once,
    when there is no time left for another (then False)."""
    while not check():
        if not pause():
            return False
    return True


def retry_while(call: Callable[[], T], refused: Callable[[Exception], bool], pause: Callable[[], bool]) -> T:
    """``call()``, again after each ``pause`` while it fails with an error ``refused`` says will pass (a state
    that settles); any other error at once, and the last refusal when ``pause`` says the time is up."""
    answers: list[T] = []
    refusals: list[Exception] = []

    def answered() -> bool:
        try:
            answers.append(call())
        except Exception as error:
            if not refused(error):
                raise
            refusals[:] = [error]
            return False
        return True

    if not poll_until(answered, pause):
        raise refusals[-1]
    return answers[0]


class Deadline:
    """When the waiting must stop, on ``clock`` (seconds): one budget for all the waits and retries of an
    invocation, each pause ``interval`` seconds (what is left, if less)."""

    def __init__(self, at: float, clock: Callable[[], float], sleep: Callable[[float], None], interval: float) -> None:
        self.at, self.clock, self._sleep, self.interval = at, clock, sleep, interval

    def before(self, seconds: float) -> Deadline:
        """The deadline ``seconds`` earlier: a share of the time that leaves the rest to what comes after."""
        return Deadline(self.at - seconds, self.clock, self._sleep, self.interval)

    def pause(self) -> bool:
        """Sleep ``interval`` (what is left, if less) and say True; False, at once, when the time is up."""
        left = self.at - self.clock()
        if left <= 0:
            return False
        self._sleep(min(self.interval, left))
        return True


def pauses(count: int, seconds: float, sleep: Callable[[float], None]) -> Callable[[], bool]:
    """A pause of ``seconds``, at most ``count`` times: a wait measured in tries (``count + 1`` asks)."""
    left = [count]

    def pause() -> bool:
        if left[0] <= 0:
            return False
        left[0] -= 1
        sleep(seconds)
        return True

    return pause
