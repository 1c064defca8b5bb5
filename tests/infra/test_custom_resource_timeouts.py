"""No CloudFormation operation of the stack waits more than 15 minutes on a custom resource.

CloudFormation waits for a custom resource's answer up to its ``ServiceTimeout`` (an hour by default). The
stack's custom resources run on CDK's provider framework: its onEvent function (15 minutes) invokes the
project's handler and answers with what the handler returns or raises, so a handler that runs into its own
timeout, or the framework's, leaves CloudFormation waiting for the ServiceTimeout with nothing answered. A
provider with ``is_complete`` answers from its waiter state machine, which polls it for a bounded number of
attempts. Every custom resource of every mode is checked, CDK's own (none today) as well as the project's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hotkeys.detector.provisioning import stream_mapping
from tests.infra.conftest import MODES, Synthesized

pytestmark = pytest.mark.infra

LIMIT_SECONDS = 900  # what the stack lets CloudFormation wait on one custom resource operation
# What a handler's timeout leaves below the function that invokes it and below the ServiceTimeout: the
# framework's own work (its start, the invoke, the response it uploads to CloudFormation's URL).
MARGIN_SECONDS = 60


def _custom_resources(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in synth.template["Resources"].items()
        if resource["Type"].startswith("Custom::") or resource["Type"] == "AWS::CloudFormation::CustomResource"
    }


def _function(synth: Synthesized, reference: Any) -> dict[str, Any]:
    """The function a ``Fn::GetAtt [id, Arn]`` names, with its logical id."""
    (logical_id, attribute) = reference["Fn::GetAtt"]
    function = synth.template["Resources"][logical_id]
    assert (function["Type"], attribute) == ("AWS::Lambda::Function", "Arn"), reference
    return {"Id": logical_id, **function["Properties"]}


def _waiter_seconds(synth: Synthesized, reference: Any) -> int:
    """How long the framework's waiter polls is_complete: its retries' intervals (BackoffRate 1)."""
    machine = synth.template["Resources"][reference["Ref"]]["Properties"]["DefinitionString"]
    text = "".join(part if isinstance(part, str) else "0" for part in machine["Fn::Join"][1])
    (retry,) = json.loads(text)["States"]["framework-isComplete-task"]["Retry"]
    assert retry.get("BackoffRate", 2) == 1, retry
    return int(retry["IntervalSeconds"]) * int(retry["MaxAttempts"])


@pytest.mark.parametrize("mode", list(MODES))
def test_no_custom_resource_keeps_cloudformation_waiting_more_than_15_minutes(synthesized: dict, mode: str) -> None:
    synth = synthesized[mode]
    resources = _custom_resources(synth)
    assert resources, "every mode maps a stream through Custom::StreamMapping"
    for logical_id, resource in resources.items():
        properties = resource["Properties"]
        # CloudFormation gives up on the resource after its ServiceTimeout (3,600 s when absent)
        assert "ServiceTimeout" in properties, logical_id
        service_timeout = int(properties["ServiceTimeout"])
        assert service_timeout <= LIMIT_SECONDS, logical_id
        invoked = _function(synth, properties["ServiceToken"])
        variables = invoked.get("Environment", {}).get("Variables", {})
        if "USER_ON_EVENT_FUNCTION_ARN" not in variables:
            # a provider that is its own handler (CDK's singleton providers): it answers within its timeout
            assert invoked["Timeout"] + MARGIN_SECONDS <= service_timeout, logical_id
            continue
        # The provider framework: its onEvent function waits for the handler, then answers
        handler = _function(synth, variables["USER_ON_EVENT_FUNCTION_ARN"])
        assert handler["Timeout"] + MARGIN_SECONDS <= invoked["Timeout"], (logical_id, handler["Id"])
        assert handler["Timeout"] + MARGIN_SECONDS <= service_timeout, (logical_id, handler["Id"])
        if "WAITER_STATE_MACHINE_ARN" in variables:
            # then its waiter polls is_complete, and answers (done, or timed out) after its last poll
            is_complete = _function(synth, variables["USER_IS_COMPLETE_FUNCTION_ARN"])
            waited = handler["Timeout"] + _waiter_seconds(synth, variables["WAITER_STATE_MACHINE_ARN"])
            assert waited + is_complete["Timeout"] + MARGIN_SECONDS <= service_timeout, logical_id


def test_the_stream_mappings_handler_has_time_to_wait_and_to_undo_a_failed_create(demo: Synthesized) -> None:
    # Its deadline is its timeout less ANSWER_SECONDS, and a create's waits stop UNDO_SECONDS before it: what
    # is left is the time a displacement, a create and its settling share (5 minutes at least).
    (handler,) = [
        function["Properties"]
        for function in demo.resources("AWS::Lambda::Function").values()
        if function["Properties"].get("Handler") == "hotkeys.detector.handlers.stream_mapping_app.on_event"
    ]
    waits = handler["Timeout"] - stream_mapping.ANSWER_SECONDS - stream_mapping.UNDO_SECONDS
    assert waits >= 300
