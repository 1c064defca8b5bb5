"""Updates as CloudFormation applies them (``cloudformation_update``): what each change of the watched
tables or of the reading position does to the event source mappings. README ("Changing what is
watched") says the same; a change Lambda would refuse is marked with its issue."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.cloudformation_update import mapping_conflicts
from tests.infra.conftest import synth_template

pytestmark = pytest.mark.infra

STREAMS = {
    name: f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}/stream/2026-01-01T00:00:00.000"
    for name in ("orders", "users")
}
POSITIONAL = "#35 item 2: mappings are named by position, and a replacement is created before the old one is deleted"


def _watching(names: str, way: str, **more: str) -> dict[str, str]:
    if way == "enableStream":
        return {"tableNames": names, "enableStream": "true", **more}
    return {"tableNames": names, "tableStreamArns": ",".join(STREAMS[n] for n in names.split(",")), **more}


WAYS = ["enableStream", "tableStreamArns"]


def _update(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The mapping conflicts of a deploy of ``after``'s context over a stack deployed with ``before``'s."""
    return mapping_conflicts(synth_template(before), synth_template(after))


@pytest.mark.parametrize("way", WAYS)
def test_adding_a_table_at_the_end_creates_its_mapping_and_replaces_none(way: str) -> None:
    assert _update(_watching("orders", way), _watching("orders,users", way)) == []


@pytest.mark.parametrize("way", WAYS)
def test_a_mapping_setting_that_updates_in_place_replaces_none(way: str) -> None:
    assert _update(_watching("orders", way), _watching("orders", way, maxRecordAgeHours="12")) == []


@pytest.mark.xfail(strict=True, reason=POSITIONAL)
@pytest.mark.parametrize("way", WAYS)
def test_removing_the_first_table_keeps_the_others_mappings(way: str) -> None:
    assert _update(_watching("orders,users", way), _watching("users", way)) == []


@pytest.mark.xfail(strict=True, reason=POSITIONAL)
def test_reordering_the_tables_replaces_no_mapping() -> None:
    assert _update(_watching("orders,users", "enableStream"), _watching("users,orders", "enableStream")) == []


@pytest.mark.xfail(
    strict=True, reason="#35 item 2: StartingPosition requires replacement, on the same function and stream"
)
def test_changing_the_starting_position_after_a_deploy_updates_without_a_rollback() -> None:
    before, after = (
        _watching("orders", "tableStreamArns"),
        _watching("orders", "tableStreamArns", startingPosition="TRIM_HORIZON"),
    )
    assert _update(before, after) == []


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
