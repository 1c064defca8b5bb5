"""Updates as CloudFormation applies them (``cloudformation_update``): what each change of the watched
tables or of the reading position does to the event source mappings. README ("Changing what is
watched") says the same; a change Lambda would refuse is marked with its issue."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from infra.app_factory import STACK_NAME, build_app
from tests.infra.cloudformation_update import mapping_conflicts

pytestmark = pytest.mark.infra

STREAMS = {
    name: f"arn:aws:dynamodb:eu-west-1:111122223333:table/{name}/stream/2026-01-01T00:00:00.000"
    for name in ("orders", "users")
}
POSITIONAL = "#35 item 2: mappings are named by position, and a replacement is created before the old one is deleted"


def _synth(context: dict[str, str]) -> dict[str, Any]:
    outdir = tempfile.mkdtemp(prefix="cdk-update-")
    app, _stack = build_app(context, outdir=outdir)
    app.synth()
    template: dict[str, Any] = json.loads((Path(outdir) / f"{STACK_NAME}.template.json").read_text())
    return template


def _watching(names: str, way: str, **more: str) -> dict[str, str]:
    if way == "enableStream":
        return {"tableNames": names, "enableStream": "true", **more}
    return {"tableNames": names, "tableStreamArns": ",".join(STREAMS[n] for n in names.split(",")), **more}


WAYS = ["enableStream", "tableStreamArns"]


@pytest.mark.parametrize("way", WAYS)
def test_adding_a_table_at_the_end_creates_its_mapping_and_replaces_none(way: str) -> None:
    assert mapping_conflicts(_synth(_watching("orders", way)), _synth(_watching("orders,users", way))) == []


@pytest.mark.parametrize("way", WAYS)
def test_a_mapping_setting_that_updates_in_place_replaces_none(way: str) -> None:
    before, after = _synth(_watching("orders", way)), _synth(_watching("orders", way, maxRecordAgeHours="12"))
    assert mapping_conflicts(before, after) == []


@pytest.mark.xfail(strict=True, reason=POSITIONAL)
@pytest.mark.parametrize("way", WAYS)
def test_removing_the_first_table_keeps_the_others_mappings(way: str) -> None:
    assert mapping_conflicts(_synth(_watching("orders,users", way)), _synth(_watching("users", way))) == []


@pytest.mark.xfail(strict=True, reason=POSITIONAL)
def test_reordering_the_tables_replaces_no_mapping() -> None:
    before, after = _synth(_watching("orders,users", "enableStream")), _synth(_watching("users,orders", "enableStream"))
    assert mapping_conflicts(before, after) == []


@pytest.mark.xfail(
    strict=True, reason="#35 item 2: StartingPosition requires replacement, on the same function and stream"
)
def test_changing_the_starting_position_after_a_deploy_updates_without_a_rollback() -> None:
    before = _synth(_watching("orders", "tableStreamArns"))
    after = _synth(_watching("orders", "tableStreamArns", startingPosition="TRIM_HORIZON"))
    assert mapping_conflicts(before, after) == []


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
