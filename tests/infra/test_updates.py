"""Updates as CloudFormation applies them (``cloudformation_update``): what each change of the watched
tables or of the reading position does to the event source mappings, and the release that moved them
from ``AWS::Lambda::EventSourceMapping`` to ``Custom::StreamMapping`` (its earlier templates' mappings are
in tests/infra/fixtures, synthesized at commit 39d0cc4). docs/deploy.md ("Changing what is watched") says the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.cloudformation_update import mapping_conflicts, mapping_restarts, readers_after
from tests.infra.conftest import synth_template

pytestmark = pytest.mark.infra

FIXTURES = Path(__file__).parent / "fixtures"
STREAMS = {
    name: f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}/stream/2026-01-01T00:00:00.000"
    for name in ("orders", "users", "carts")
}


def _watching(names: str, way: str, **more: str) -> dict[str, str]:
    if way == "enableStream":
        return {"tableNames": names, "enableStream": "true", **more}
    return {"tableNames": names, "tableStreamArns": ",".join(STREAMS[n] for n in names.split(",")), **more}


WAYS = ["enableStream", "tableStreamArns"]


def _update(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str]]:
    """(conflicts, restarts) of a deploy of ``after``'s context over a stack deployed with ``before``'s."""
    old, new = synth_template(before), synth_template(after)
    return mapping_conflicts(old, new), mapping_restarts(old, new)


@pytest.mark.parametrize("way", WAYS)
def test_adding_a_table_at_the_end_creates_its_mapping_and_restarts_none(way: str) -> None:
    assert _update(_watching("orders", way), _watching("orders,users", way)) == ([], [])


@pytest.mark.parametrize("way", WAYS)
def test_adding_a_table_at_the_front_creates_its_mapping_and_restarts_none(way: str) -> None:
    assert _update(_watching("users", way), _watching("orders,users", way)) == ([], [])


@pytest.mark.parametrize("way", WAYS)
def test_a_mapping_setting_that_updates_in_place_restarts_none(way: str) -> None:
    assert _update(_watching("orders", way), _watching("orders", way, maxRecordAgeHours="12")) == ([], [])


@pytest.mark.parametrize("way", WAYS)
def test_removing_the_first_table_keeps_the_others_mappings(way: str) -> None:
    assert _update(_watching("orders,users", way), _watching("users", way)) == ([], [])


@pytest.mark.parametrize("way", WAYS)
def test_reordering_the_tables_changes_no_mapping(way: str) -> None:
    assert _update(_watching("orders,users", way), _watching("users,orders", way)) == ([], [])


@pytest.mark.parametrize("way", WAYS)
def test_changing_the_starting_position_after_a_deploy_updates_in_place(way: str) -> None:
    before, after = _watching("orders", way), _watching("orders", way, startingPosition="TRIM_HORIZON")
    assert _update(before, after) == ([], [])
    # (the property changes; the handler leaves a reading mapping where it is: stream_mapping_app)
    old, new = synth_template(before), synth_template(after)
    assert _starting_positions(old) == ["LATEST"] and _starting_positions(new) == ["TRIM_HORIZON"]


def _starting_positions(template: dict[str, Any]) -> list[str]:
    return [
        r["Properties"]["Settings"]["StartingPosition"]
        for r in template["Resources"].values()
        if r["Type"] == "Custom::StreamMapping"
    ]


@pytest.mark.parametrize("way", WAYS)
def test_the_release_that_brings_custom_mappings_moves_each_without_a_conflict(way: str) -> None:
    # The earlier release's template (its mapping and stream resources, as the CLI synthesized them then)
    released = json.loads((FIXTURES / f"mappings-39d0cc4-{way}.json").read_text())
    now = synth_template(_watching("orders,users", way))
    assert mapping_conflicts(released, now) == []
    restarts = mapping_restarts(released, now)
    # Each table's reading starts again, once (docs/deploy.md: "Upgrading from a release before ...")
    assert len(restarts) == 2
    assert {r.split(" restarts ")[1].split(" (")[0] for r in restarts} == {
        repr(("stream of table", name)) if way == "enableStream" else repr(STREAMS[name])
        for name in ("orders", "users")
    }


def _template(**mappings: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            name: {"Type": "AWS::Lambda::EventSourceMapping", "Properties": p} for name, p in mappings.items()
        }
    }


def test_the_model_sees_a_replacement_and_a_create_on_a_function_and_stream_that_has_a_mapping() -> None:
    orders = {"FunctionName": {"Ref": "F"}, "EventSourceArn": "arn:s/orders", "StartingPosition": "LATEST"}
    users = {**orders, "EventSourceArn": "arn:s/users"}
    # A replacement of the same mapping (StartingPosition), and a new id for a stream another id reads
    assert mapping_conflicts(_template(A=orders), _template(A={**orders, "StartingPosition": "TRIM_HORIZON"})) == [
        "A replaced while A reads 'arn:s/orders'"
    ]
    assert mapping_conflicts(_template(A=orders, B=users), _template(A=users)) == [
        "A replaced while B reads 'arn:s/users'"
    ]
    # In place, a new stream, or another function: no conflict
    assert mapping_conflicts(_template(A=orders), _template(A={**orders, "BatchSize": 10})) == []
    assert mapping_conflicts(_template(A=orders), _template(A=orders, B=users)) == []
    assert mapping_conflicts(_template(A=orders), _template(A=orders, B={**orders, "FunctionName": {"Ref": "G"}})) == []


def _custom(**mappings: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            name: {
                "Type": "Custom::StreamMapping",
                "Properties": {
                    "FunctionName": p["FunctionName"],
                    "EventSourceArn": p["EventSourceArn"],
                    "Settings": {k: v for k, v in p.items() if k not in ("FunctionName", "EventSourceArn")},
                },
            }
            for name, p in mappings.items()
        }
    }


def test_the_model_sees_custom_mappings_update_in_place_and_displace_on_create() -> None:
    orders = {"FunctionName": {"Ref": "F"}, "EventSourceArn": "arn:s/orders", "StartingPosition": "LATEST"}
    users = {**orders, "EventSourceArn": "arn:s/users"}
    by_arn = {**orders, "FunctionName": {"Fn::GetAtt": ["F", "Arn"]}}
    # A starting position, in place; a stream moved to another logical id: displaced, restarted
    assert _plan(_custom(A=orders), _custom(A={**orders, "StartingPosition": "TRIM_HORIZON"})) == ([], [])
    # A stream that moves to a new logical id: the new resource displaces the old one's mapping, restarted
    assert _plan(_custom(A=orders), _custom(C=orders)) == ([], ["C restarts 'arn:s/orders' (displaces A's mapping)"])
    # From CloudFormation's mapping (function by Ref) to a custom one (by Arn): the same function, displaced
    assert _plan(_template(A=orders), _custom(M=by_arn)) == ([], ["M restarts 'arn:s/orders' (displaces A's mapping)"])
    # A resource that moves onto a stream whose holder the same update removes keeps that mapping (as a
    # rollback's move back must), and the holder's cleanup delete then unmaps it: flagged. The stack never
    # does this: its resources are named by table, and a table's stream is its own.
    assert _plan(_custom(A=orders, B=users), _custom(A=users))[0] == [
        "A moves onto 'arn:s/users', which B's cleanup delete unmaps"
    ]
    # Two live resources on one stream, or a CloudFormation mapping created on a stream a custom one holds
    assert _plan(_custom(A=orders), _custom(A=orders, B=orders))[0] == ["B and A both map 'arn:s/orders'"]
    assert _plan(_custom(A=orders), _template(B=orders))[0] == ["B created while A reads 'arn:s/orders'"]


def _plan(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    return mapping_conflicts(before, after), mapping_restarts(before, after)


def _every_outcome(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, dict[str, int]]]:
    """The readers of each stream after the update succeeds, and after it fails at each step and rolls back."""
    outcomes = [("completed", readers_after(before, after, None))]
    steps = len(_mappings_of(after)) + 1
    outcomes += [(f"failed after {k}", readers_after(before, after, k)) for k in range(steps)]
    return outcomes


def _mappings_of(template: dict[str, Any]) -> list[str]:
    return [i for i, r in template["Resources"].items() if r["Type"] in ("Custom::StreamMapping", MAPPING)]


MAPPING = "AWS::Lambda::EventSourceMapping"


def _streams_of(template: dict[str, Any]) -> set[str]:
    return {key for key, count in readers_after(template, template, None).items() if count}


@pytest.mark.parametrize("way", WAYS)
def test_the_upgrade_from_the_earlier_release_leaves_every_stream_read_once_however_it_ends(way: str) -> None:
    released = json.loads((FIXTURES / f"mappings-39d0cc4-{way}.json").read_text())
    now = synth_template(_watching("orders,users", way))
    for outcome, readers in _every_outcome(released, now):
        # each of the two tables' streams read by exactly one of the stack's mappings, done or rolled back
        assert sorted(readers.values()) == [1, 1], (outcome, readers)


@pytest.mark.parametrize("way", WAYS)
def test_an_upgrade_that_also_adds_a_table_leaves_only_the_watched_streams_read_however_it_ends(way: str) -> None:
    released = json.loads((FIXTURES / f"mappings-39d0cc4-{way}.json").read_text())
    now = synth_template(_watching("orders,users,carts", way))
    for outcome, readers in _every_outcome(released, now):
        watched = _streams_of(now if outcome == "completed" else released)
        assert {stream for stream, count in readers.items() if count} == watched, (outcome, readers)
        assert {readers[stream] for stream in watched} == {1}, (outcome, readers)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("before", "after"),
    [("orders", "orders,users"), ("orders,users", "users"), ("orders,users", "users,orders")],
    ids=["add", "remove", "reorder"],
)
def test_a_change_of_the_watched_tables_leaves_every_stream_read_once_however_it_ends(
    way: str, before: str, after: str
) -> None:
    old, new = synth_template(_watching(before, way)), synth_template(_watching(after, way))
    for outcome, readers in _every_outcome(old, new):
        # completed: what the new template watches, once each; rolled back: what the old one watched
        watched = _streams_of(new if outcome == "completed" else old)
        assert {stream for stream, count in readers.items() if count} == watched, (outcome, readers)
        assert set(readers[stream] for stream in watched) == {1}, (outcome, readers)


def test_an_upgrade_rolled_back_is_read_by_the_kept_mapping_and_would_be_unread_without_the_rule() -> None:
    stream = "arn:aws:dynamodb:eu-west-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
    orders = {"FunctionName": {"Ref": "F"}, "EventSourceArn": stream, "StartingPosition": "LATEST"}
    released = {"Resources": {"A": {"Type": MAPPING, "Properties": orders}}}
    custom = {
        "Resources": {
            "M": {
                "Type": "Custom::StreamMapping",
                "Properties": {"FunctionName": {"Fn::GetAtt": ["F", "Arn"]}, "EventSourceArn": stream},
            }
        }
    }
    assert readers_after(released, custom, 1) == {repr(stream): 1}
    # (the handler's rule away: the earlier mapping displaced, the new one deleted by the rollback)
    assert readers_after(released, custom, 1, rollback_keeps=False) == {repr(stream): 0}
    assert readers_after(released, custom, 0) == {repr(stream): 1}
    assert readers_after(released, custom, None) == {repr(stream): 1}


# -- the Kinesis modes (#49) ------------------------------------------------------------------------------

KINESIS = "arn:aws:kinesis:eu-west-1:111122223333:stream/table-changes"
KINESIS_WAYS = {
    "kinesisStreamArn": {"kinesisStreamArn": KINESIS},
    "enableKinesis": {"enableKinesis": "true"},
    "enableKinesis with fan-out": {"enableKinesis": "true", "kinesisEnhancedFanOut": "true"},
}


def _kinesis(names: str, way: str) -> dict[str, str]:
    return {"tableNames": names, **KINESIS_WAYS[way]}


def _kinesis_sources(readers: dict[str, int]) -> dict[str, int]:
    return {source: count for source, count in readers.items() if "kinesis" in source}


@pytest.mark.parametrize("kinesis", list(KINESIS_WAYS))
@pytest.mark.parametrize("way", WAYS)
def test_moving_from_the_dynamodb_streams_to_kinesis_and_back_leaves_one_source_read_however_it_ends(
    way: str, kinesis: str
) -> None:
    streams, moved = synth_template(_watching("orders,users", way)), synth_template(_kinesis("orders,users", kinesis))
    for before, after in ((streams, moved), (moved, streams)):
        # Lambda refuses nothing: the Kinesis mapping is a new source of the function, created before the cleanup
        # deletes the tables' mappings (a window of minutes in which both are read: docs/deploy.md)
        assert mapping_conflicts(before, after) == []
        assert mapping_restarts(before, after) == []
        for outcome, readers in _every_outcome(before, after):
            # completed: what the new template reads, once each; rolled back: what the old one read, once each
            watched = _streams_of(after if outcome == "completed" else before)
            assert {source for source, count in readers.items() if count} == watched, (outcome, readers)
            assert {readers[source] for source in watched} == {1}, (outcome, readers)
    # one Kinesis source for both tables, and none in the DynamoDB-stream modes
    assert len(_kinesis_sources(readers_after(moved, moved, None))) == 1
    assert _kinesis_sources(readers_after(streams, streams, None)) == {}


@pytest.mark.parametrize("kinesis", list(KINESIS_WAYS))
def test_adding_removing_and_reordering_tables_in_a_kinesis_mode_keeps_its_one_mapping(kinesis: str) -> None:
    for before, after in (("orders", "orders,users"), ("orders,users", "users"), ("orders,users", "users,orders")):
        old, new = synth_template(_kinesis(before, kinesis)), synth_template(_kinesis(after, kinesis))
        # the mapping stays where it is (same logical id, same source): updated in place, never restarted
        assert _update(_kinesis(before, kinesis), _kinesis(after, kinesis)) == ([], [])
        assert _mappings_of(old) == _mappings_of(new)


def test_turning_fan_out_on_moves_the_mapping_to_the_consumer_without_a_conflict() -> None:
    direct, fan_out = _kinesis("orders", "enableKinesis"), _kinesis("orders", "enableKinesis with fan-out")
    for before, after in ((direct, fan_out), (fan_out, direct)):
        old, new = synth_template(before), synth_template(after)
        assert mapping_conflicts(old, new) == []
        for outcome, readers in _every_outcome(old, new):
            watched = _streams_of(new if outcome == "completed" else old)
            assert {source for source, count in readers.items() if count} == watched, (outcome, readers)
            assert {readers[source] for source in watched} == {1}, (outcome, readers)
