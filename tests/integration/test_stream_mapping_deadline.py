"""The deploy-time stream mapping answers before its function times out, and a create never leaves a mapping
that nobody owns.

CloudFormation waits for a custom resource's answer up to its ServiceTimeout; a handler that does not answer
before its Lambda timeout leaves the provider framework nothing to answer with, and a create that fails has
its physical id replaced by the framework's ``CREATE_FAILED``, whose rollback Delete the handler ignores: a
mapping it made would belong to nobody. Here the handler runs against moto (through the Lambda of
test_stream_mapping) on a fake clock: each Lambda call takes ``LATENCY`` seconds, each sleep its seconds, and
an invocation still running at its function's timeout is ended (``Killed``), as Lambda ends it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hotkeys.detector.handlers.stream_mapping_app import on_event
from hotkeys.detector.provisioning import stream_mapping
from tests.conftest import log_lines
from tests.integration.test_stream_mapping import (
    SETTINGS,
    AsDocumented,
    Busy,
    SlowToDelete,
    World,
    client_error,
    properties,
    request,
    run,
)

TIMEOUT = 780.0  # seconds: the handler function's timeout (infra/stream_mapping.py)
LATENCY = 1.0  # seconds each Lambda call takes
FOREVER = 10**9  # (answers, refusals: more than any deadline allows)


class Killed(BaseException):
    """Lambda ending the invocation at its timeout: not an answer, and nothing the handler can catch."""


class Clock:
    """Fake time from the invocation's start, and the Lambda context that reads it."""

    def __init__(self, timeout: float = TIMEOUT) -> None:
        self.now, self.timeout = 0.0, timeout

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        if self.now >= self.timeout:
            raise Killed(f"still running at the function's timeout ({self.timeout:.0f} s)")

    def get_remaining_time_in_millis(self) -> int:
        return int((self.timeout - self.now) * 1000)


class Timed:
    """A Lambda client whose every call takes LATENCY seconds of ``clock``."""

    def __init__(self, client: Any, clock: Clock) -> None:
        self._client, self._clock = client, clock

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not (name.endswith("_event_source_mapping") or name == "get_paginator"):
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._clock.advance(LATENCY)
            return attribute(*args, **kwargs)

        return timed


def answer(event: dict[str, Any], client: Any, clock: Clock, context: bool = True) -> str:
    """The handler's answer (its physical id; an exception is its failure), or Killed at the timeout."""
    result = on_event(
        event, clock if context else None, lambda_client=Timed(client, clock), sleep=clock.sleep, clock=clock
    )
    return str(result["PhysicalResourceId"])


def detectors(world: World) -> list[str]:
    """The UUIDs of every mapping Lambda knows of the detector, on either table's stream."""
    return [
        str(m["UUID"])
        for source in (world.orders, world.payments)
        for m in world.mappings(source)
        if m["FunctionArn"] == world.detector
    ]


@pytest.fixture
def world(aws: None) -> World:
    return World()


# -- every path answers before the function's timeout -----------------------------------------------------


def _create(world: World) -> dict[str, Any]:
    return request("Create", properties(world.detector, world.orders))


def _displacing(world: World) -> dict[str, Any]:
    world.by_hand(world.detector, world.orders, StartingPosition="LATEST")
    return _create(world)


def _update(world: World) -> dict[str, Any]:
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    return request("Update", properties(world.detector, world.orders, SETTINGS | {"BatchSize": "300"}), first, uuid)


def _move(world: World) -> dict[str, Any]:
    first = properties(world.detector, world.orders)
    uuid = run(request("Create", first), world.client)
    return request("Update", properties(world.detector, world.payments), first, uuid)


def _delete(world: World) -> dict[str, Any]:
    props = properties(world.detector, world.orders)
    uuid = run(request("Create", props), world.client)
    return request("Delete", props, physical=uuid)


# (Busy answers ``creating`` Gets of any mapping with Creating: an update settles through the same Gets)
PATHS: dict[str, tuple[Callable[[World], dict[str, Any]], Callable[[Any], Any], type[Exception] | None]] = {
    "create whose mapping never settles": (_create, lambda c: Busy(c, creating=FOREVER), None),
    "create whose role is never seen": (_create, lambda c: Busy(c, unseen=FOREVER), ClientError),
    "displacement never deleted": (_displacing, lambda c: SlowToDelete(c, FOREVER), None),  # (answers not-created)
    "displacement always refused": (_displacing, lambda c: Busy(c, refusals=FOREVER), ClientError),
    "displacement, then a role never seen": (_displacing, lambda c: Busy(c, unseen=FOREVER), ClientError),
    "displacement, then a mapping that never settles": (_displacing, lambda c: Busy(c, creating=FOREVER), None),
    "update always refused": (_update, lambda c: Busy(c, refusals=FOREVER), ClientError),
    "update that never settles": (_update, lambda c: Busy(c, creating=FOREVER), None),
    "move that never settles": (_move, lambda c: Busy(c, creating=FOREVER), None),
    "delete always refused": (_delete, lambda c: Busy(c, refusals=FOREVER), ClientError),
    "delete never finished": (_delete, lambda c: SlowToDelete(c, FOREVER), None),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_every_path_answers_before_the_functions_timeout(world: World, path: str) -> None:
    given, lambda_, failure = PATHS[path]
    event, clock = given(world), Clock()
    if failure is None:
        answer(event, lambda_(world.lambda_), clock)  # (Killed, a BaseException, is no answer)
    else:
        with pytest.raises(failure):
            answer(event, lambda_(world.lambda_), clock)
    # It answered before the timeout, having waited for as long as it could: within the last ANSWER_SECONDS
    # and the undo's reserve (one poll, one call)
    last = TIMEOUT - stream_mapping.ANSWER_SECONDS
    assert last - stream_mapping.UNDO_SECONDS - 2 * LATENCY - stream_mapping.POLL_SECONDS < clock.now < TIMEOUT


def test_without_a_lambda_context_the_budget_is_fixed(world: World) -> None:
    clock = Clock(timeout=10 * stream_mapping.BUDGET_SECONDS)
    uuid = answer(_create(world), Busy(world.lambda_, creating=FOREVER), clock, context=False)
    # (a create's waits end UNDO_SECONDS early, the rest being its undo's)
    assert clock.now <= stream_mapping.BUDGET_SECONDS - stream_mapping.UNDO_SECONDS + 2 * LATENCY
    assert detectors(world) == [uuid]


def test_the_deadline_follows_the_time_left_to_the_invocation(world: World) -> None:
    # Given an invocation that starts with little of its function's time left
    clock = Clock(timeout=100.0)
    # When a create's mapping never settles, it still answers in time, with the mapping
    uuid = answer(_create(world), Busy(world.lambda_, creating=FOREVER), clock)
    assert clock.now < 100.0 and detectors(world) == [uuid]


# -- no orphan: what a create made is either its answer or deleted, and what it displaced is restored ---------


class FailsAfterCreate(AsDocumented):
    """Lambda creating the mapping, then failing the first Get of it made at or after ``fails_at`` seconds
    (a transient error: throttled, a service error); until then the new mapping says Creating. While it is
    Creating, a Delete of it is refused (ResourceInUseException) ``refusals`` times."""

    def __init__(self, client: Any, clock: Clock, fails_at: float = 0.0, refusals: int = 0) -> None:
        super().__init__(client)
        self.clock, self.fails_at, self.refusals = clock, fails_at, refusals
        self.created: list[str] = []
        self.failed = False

    def create_event_source_mapping(self, **request: Any) -> Any:
        answer = super().create_event_source_mapping(**request)
        self.created.append(str(answer["UUID"]))
        return answer

    def get_event_source_mapping(self, **request: Any) -> Any:
        found = self._client.get_event_source_mapping(**request)
        if request["UUID"] not in self.created[:1] or self.failed:
            return found
        if self.clock.now >= self.fails_at:
            self.failed = True
            raise client_error("ServiceException", "Lambda was unable to process the request", "GetEventSourceMapping")
        return found | {"State": "Creating"}

    def delete_event_source_mapping(self, **request: Any) -> Any:
        if request["UUID"] in self.created[:1] and self.refusals:
            self.refusals -= 1
            raise client_error("ResourceInUseException", "Cannot delete the mapping", "DeleteEventSourceMapping")
        return super().delete_event_source_mapping(**request)


class LosesCreateAnswer(AsDocumented):
    """Lambda creating the mapping, whose answer is lost on the way: the SDK retries the create and Lambda
    refuses the retry, since the first one's mapping exists (ResourceConflictException)."""

    def create_event_source_mapping(self, **request: Any) -> Any:
        super().create_event_source_mapping(**request)
        return super().create_event_source_mapping(**request)


def _earlier(world: World) -> tuple[str, dict[str, Any]]:
    """A mapping of the detector on the orders stream, disabled, with settings of its own, to be displaced."""
    uuid = world.by_hand(world.detector, world.orders, StartingPosition="TRIM_HORIZON", BatchSize=250, Enabled=False)
    return uuid, world.mapping(uuid)


def _restored_as(world: World, earlier: str, before: dict[str, Any]) -> None:
    """The detector's one mapping is the displaced one again: same settings, under a new UUID, at LATEST."""
    [restored] = [m for m in world.mappings(world.orders) if m["FunctionArn"] == world.detector]
    assert restored["UUID"] != earlier and world.gone(earlier)
    assert (restored["BatchSize"], restored["State"], restored["StartingPosition"]) == (
        before["BatchSize"],
        before["State"],
        "LATEST",
    )


# Failures at the start of the settle wait, half-way, and at its last Get, when the create's waits end (the
# undo then has its own UNDO_SECONDS, here needed for three refused deletes)
LAST_GET = TIMEOUT - stream_mapping.ANSWER_SECONDS - stream_mapping.UNDO_SECONDS


@pytest.mark.parametrize("fails_at", [0.0, 300.0, LAST_GET])
def test_a_create_that_fails_after_its_mapping_exists_deletes_it_and_restores_the_displaced_one(
    world: World, log: io.StringIO, fails_at: float
) -> None:
    earlier, before = _earlier(world)
    clock = Clock()
    lambda_ = FailsAfterCreate(world.lambda_, clock, fails_at=fails_at, refusals=3)
    # When the create's mapping exists, and Lambda fails the settle wait's Get of it
    with pytest.raises(ClientError, match="ServiceException"):
        answer(_create(world), lambda_, clock)
    # Then it failed only after deleting that mapping (Lambda knows no mapping the failure does not name) and
    # restoring the displaced one, in time
    assert lambda_.failed and clock.now < TIMEOUT
    [made] = lambda_.created[:1]
    assert world.gone(made)
    _restored_as(world, earlier, before)
    assert [line["uuid"] for line in log_lines(log) if line["message"].startswith("deleted the event source")] == [made]


def test_a_create_whose_answer_is_lost_deletes_the_mapping_it_made_and_restores_the_displaced_one(
    world: World,
) -> None:
    earlier, before = _earlier(world)
    with pytest.raises(ClientError, match="ResourceConflictException"):
        answer(_create(world), LosesCreateAnswer(world.lambda_), Clock())
    _restored_as(world, earlier, before)


def test_a_mapping_the_failed_create_cannot_delete_in_time_is_its_answer(world: World, log: io.StringIO) -> None:
    # Given a create whose settle wait fails, and whose mapping Lambda refuses to delete until the timeout
    earlier, _ = _earlier(world)
    clock = Clock()
    lambda_ = FailsAfterCreate(world.lambda_, clock, refusals=FOREVER)
    # Then the create answers with that mapping (the stack owns it and deletes it with the resource) in time,
    uuid = answer(_create(world), lambda_, clock)
    assert clock.now < TIMEOUT
    # the only mapping of the detector (the displaced one is not restored beside it: Lambda allows one)
    assert lambda_.created[:1] == [uuid] and detectors(world) == [uuid] and world.gone(earlier)
    # and the failure it answers instead of is logged as an error, with the mapping
    [error] = [line for line in log_lines(log) if line["level"] == "ERROR"]
    assert (error["uuid"], "ServiceException" in error["error"]) == (uuid, True)


def test_a_create_whose_mapping_never_settles_answers_with_it(world: World) -> None:
    earlier, _ = _earlier(world)
    clock = Clock()
    uuid = answer(_create(world), FailsAfterCreate(world.lambda_, clock, fails_at=FOREVER), clock)
    assert clock.now < TIMEOUT and detectors(world) == [uuid] and world.gone(earlier)


def test_a_move_that_fails_after_its_mapping_exists_leaves_only_the_original(world: World) -> None:
    # Given the detector's mapping on orders, moved to payments by an update whose settle wait then fails
    event = _move(world)
    original = event["PhysicalResourceId"]
    clock = Clock()
    lambda_ = FailsAfterCreate(world.lambda_, clock, refusals=3)
    with pytest.raises(ClientError, match="ServiceException"):
        answer(event, lambda_, clock)
    # Then the mapping it made on payments is gone; the original is untouched (the rollback keeps it)
    assert world.gone(lambda_.created[0]) and detectors(world) == [original]
    assert world.mapping(original)["EventSourceArn"] == world.orders
