"""What-if proposals in the template: the consumer and the judge count them, a topic of their own carries the
judge's notices (made only when something is proposed, with its own subscribers), and a malformed proposal
is refused at synth naming its option."""

from __future__ import annotations

from typing import Any

import pytest

from infra.option_schema import ContextError
from infra.options import options_from_context
from tests.infra.conftest import synth_template

pytestmark = pytest.mark.infra
PROPOSALS = {
    "whatIfIndexes": "by-status=status:KEYS_ONLY;by-day=day/createdAt:INCLUDE(total,price)",
    "whatIfKeys": "customer",
    "whatIfEmails": "planner@example.com",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_template(PROPOSALS)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def _function(template: dict[str, Any], handler: str) -> dict[str, Any]:
    (function,) = [
        f for f in _of_type(template, "AWS::Lambda::Function").values() if f["Properties"]["Handler"] == handler
    ]
    return function


def _what_if_topic(template: dict[str, Any]) -> str:
    (name,) = [n for n in _of_type(template, "AWS::SNS::Topic") if "WhatIf" in n]
    return name


def test_the_consumer_and_the_judge_count_the_proposals(template: dict[str, Any]) -> None:
    for handler in ("hotkeys.detector.handlers.app.handler", "hotkeys.detector.handlers.judge_app.handler"):
        variables = _function(template, handler)["Properties"]["Environment"]["Variables"]
        assert variables["WHAT_IF_INDEXES"] == PROPOSALS["whatIfIndexes"]
        assert variables["WHAT_IF_KEYS"] == "customer"


def test_the_judge_tells_a_topic_of_their_own_that_only_its_subscribers_receive(template: dict[str, Any]) -> None:
    topic = _what_if_topic(template)
    judge = _function(template, "hotkeys.detector.handlers.judge_app.handler")
    assert judge["Properties"]["Environment"]["Variables"]["WHAT_IF_TOPIC_ARN"] == {"Ref": topic}
    # encrypted with a key of its own
    assert "KmsMasterKeyId" in template["Resources"][topic]["Properties"]
    # the e-mail given, and nobody else, is subscribed to it
    subscriptions = [s["Properties"] for s in _of_type(template, "AWS::SNS::Subscription").values()]
    assert [(s["Protocol"], s["Endpoint"]) for s in subscriptions if s["TopicArn"] == {"Ref": topic}] == [
        ("email", "planner@example.com")
    ]
    # the judge may publish to it (and to the alert topic); no other function may
    publishers = [
        (name, statement)
        for name, policy in _of_type(template, "AWS::IAM::Policy").items()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if {"Ref": topic}
        in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]])
    ]
    assert [name for name, _statement in publishers] and all("Judge" in name for name, _s in publishers)
    # and CloudWatch alarms may not publish to it (no topic policy allows them)
    allowed = [
        statement
        for policy in _of_type(template, "AWS::SNS::TopicPolicy").values()
        if {"Ref": topic} in policy["Properties"]["Topics"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Allow"
    ]
    assert allowed == []


def test_without_a_proposal_there_is_no_what_if_topic() -> None:
    template = synth_template({})
    assert [n for n in _of_type(template, "AWS::SNS::Topic") if "WhatIf" in n] == []
    judge = _function(template, "hotkeys.detector.handlers.judge_app.handler")
    assert "WHAT_IF_TOPIC_ARN" not in judge["Properties"]["Environment"]["Variables"]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"whatIfIndexes": "by-status"}, r"-c whatIfIndexes: .*an index is NAME=ATTRIBUTE"),
        (
            {"whatIfIndexes": "by-status=status:SOME"},
            r"-c whatIfIndexes: .*the projection is ALL, KEYS_ONLY or INCLUDE",
        ),
        ({"whatIfIndexes": "x=status"}, r"-c whatIfIndexes: .*'x' is no index name"),
        ({"whatIfKeys": "customer id"}, r"-c whatIfKeys: .*'customer id' is no attribute name"),
        ({"whatIfKeys": "a+b+c+d+e"}, r"-c whatIfKeys: .*at most 4 attributes"),
        ({"whatIfIndexes": "by-status=status", "countIndexes": "false"}, r"-c countIndexes: .*what-if"),
        ({"whatIfEmails": "planner@example.com"}, "whatIfEmails goes with whatIfIndexes or whatIfKeys"),
        ({"whatIfKeys": "customer", "whatIfEmails": "planner"}, "-c whatIfEmails: 'planner' is not an e-mail"),
    ],
)
def test_a_malformed_proposal_is_refused_naming_its_option(context: dict[str, str], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        options_from_context(context)
