"""How often a container looks at the archive spool (each look is a stats-table read every shard pays):
every DRAIN_INTERVAL_SECONDS while it knows of nothing waiting, every RETRY_DRAIN_SECONDS after it spooled
an object itself or a drain left objects behind."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from hotkeys.detector.consumer.archive import DRAIN_INTERVAL_SECONDS, RETRY_DRAIN_SECONDS, TtlArchiver
from hotkeys.detector.consumer.ports import ObjectStore
from hotkeys.detector.domain.records import Change, ChangeKind


class Spool:
    def __init__(self) -> None:
        self.looks: list[float] = []
        self.left = 0  # objects a drain leaves behind
        self.now = 0.0

    def put(self, shard_id: str, key: str, body: bytes) -> None:
        self.left += 1

    def drain(
        self, store: ObjectStore, limit: int, on_error: Callable[[str, Exception], None], force: bool = False
    ) -> tuple[int, bool]:
        self.looks.append(self.now)
        moved = min(limit, self.left)
        self.left -= moved
        return moved, self.left == 0


class Refusing:
    def put(self, key: str, body: bytes) -> None:
        raise OSError("S3 is down")


def looks_over(archiver: TtlArchiver, spool: Spool, seconds: int, limit: int = 25) -> list[float]:
    for second in range(seconds):
        spool.now = float(second)
        archiver.drain(limit=limit)
    return spool.looks


def test_a_container_that_knows_of_nothing_waiting_looks_once_per_interval() -> None:
    spool = Spool()
    archiver = TtlArchiver(Refusing(), "ttl/", lambda _t: None, spool=spool, clock=lambda: spool.now)
    assert looks_over(archiver, spool, 3 * int(DRAIN_INTERVAL_SECONDS)) == [
        0.0,
        DRAIN_INTERVAL_SECONDS,
        2 * DRAIN_INTERVAL_SECONDS,
    ]


def test_objects_known_to_wait_are_looked_at_again_sooner() -> None:
    spool = Spool()
    archiver = TtlArchiver(Refusing(), "ttl/", lambda _t: None, spool=spool, clock=lambda: spool.now)
    archiver.drain()  # the first look, at 0: nothing there
    # Given an object this container spooled at second 10 (S3 refused it)
    spool.now = 10.0
    change = Change("tickets", "session#1", 1_796_083_200, 1, 1, ChangeKind.TTL_DELETE)
    assert archiver.archive("shardId-1", [(change, "{}")]).spooled
    # and 30 more spooled elsewhere, more than one drain moves
    spool.left += 30
    # Then it looks at 70 (its own object), again a retry later (the drain left some), then per interval
    looks = looks_over(archiver, spool, 70 + int(RETRY_DRAIN_SECONDS) + int(DRAIN_INTERVAL_SECONDS) + 1)
    assert looks == [0.0, 70.0, 70.0 + RETRY_DRAIN_SECONDS, 70.0 + RETRY_DRAIN_SECONDS + DRAIN_INTERVAL_SECONDS]


class Failing(Spool):
    """The marker read fails (throttled, or DynamoDB unreachable) while ``failing`` is set."""

    failing = True

    def drain(
        self, store: ObjectStore, limit: int, on_error: Callable[[str, Exception], None], force: bool = False
    ) -> tuple[int, bool]:
        if self.failing:
            self.looks.append(self.now)
            raise OSError("the marker read failed")
        return super().drain(store, limit, on_error, force)


def test_a_failed_look_at_objects_known_to_wait_is_retried_as_soon_as_a_successful_one() -> None:
    spool = Failing()
    archiver = TtlArchiver(Refusing(), "ttl/", lambda _t: None, spool=spool, clock=lambda: spool.now)
    spool.failing = False
    archiver.drain()  # the first look, at 0: nothing there
    spool.failing = True
    spool.now = 10.0
    change = Change("tickets", "session#1", 1_796_083_200, 1, 1, ChangeKind.TTL_DELETE)
    assert archiver.archive("shardId-1", [(change, "{}")]).spooled
    # When the look at 70 fails
    spool.now = 70.0
    with contextlib.suppress(OSError):
        archiver.drain()
    spool.failing = False
    # Then the next comes a retry later, not an interval later: the object is still known to wait
    looks = looks_over(archiver, spool, 70 + 2 * int(RETRY_DRAIN_SECONDS))
    assert looks == [0.0, 70.0, 70.0 + RETRY_DRAIN_SECONDS]
