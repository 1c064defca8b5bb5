"""The ownership record of Contributor Insights: physical ids and tags within DynamoDB's and CloudFormation's limits."""

from __future__ import annotations

import re

from hotkeys.detector.provisioning.insights_owners import (
    ENABLED_TAG,
    OWNER_TAG,
    TABLE_FLAG,
    Held,
    held,
    index_token,
    new_owner,
    owners_in,
    physical_id,
    record_tags,
    recorded,
)

# DynamoDB's tag restrictions (developer guide, "Tagging restrictions in DynamoDB")
TAG_TEXT = re.compile(r"[A-Za-z0-9 +\-=._:/]*")
STACK = "arn:aws:cloudformation:eu-west-1:111122223333:stack/HotKeyDetector/5b8f3a10-0000-4000-8000-000000000001"


def test_each_create_is_a_new_owner_even_for_the_same_resource() -> None:
    first = new_owner(STACK, "Insightsorders1a2b3c4d", "request-1")
    again = new_owner(STACK, "Insightsorders1a2b3c4d", "request-2")
    assert first.token != again.token and first.label == again.label == "HotKeyDetector/Insightsorders1a2b3c4d"
    assert new_owner(STACK, "Insightsorders1a2b3c4d", "request-1") == first


def test_owner_tags_fit_dynamodbs_tag_limits_whatever_the_stack() -> None:
    owner = new_owner("not an arn, with @ and * in it " * 20, "L" * 255, "r")
    assert len(owner.tag) <= 128 and TAG_TEXT.fullmatch(owner.tag)
    assert len(owner.label) <= 256 and TAG_TEXT.fullmatch(owner.label)


def test_physical_ids_name_the_table_and_the_owner_and_stay_small() -> None:
    owner = new_owner(STACK, "Insights", "r")
    table = "t" * 255  # the longest table name
    text = physical_id(table, owner)
    assert len(text) < 1024
    assert held(text) == Held(table, owner.token)


def test_ids_written_before_68_still_say_what_they_enabled() -> None:
    token = index_token("by-status")
    assert held(f"throttled-insights:orders:T.{token}") == Held("orders", None, frozenset({TABLE_FLAG, token}))
    assert held("throttled-insights:orders:") == Held("orders", None, frozenset())


def test_any_other_id_holds_nothing() -> None:
    for other in ("AWSCDK::CustomResourceProviderFramework::CREATE_FAILED", "stream-orders", "", "hotkeys-insights:x:"):
        assert held(other) is None


def test_the_record_splits_into_tag_values_of_at_most_256_characters_and_reads_back() -> None:
    # More GSIs than one value holds (the GSI quota can be raised)
    flags = {TABLE_FLAG} | {index_token(f"index-{i}") for i in range(40)}
    tags = record_tags(flags)
    assert len(tags) == 2 and all(len(v) <= 256 and TAG_TEXT.fullmatch(v) for v in tags.values())
    assert all(key.startswith(ENABLED_TAG) and len(key) <= 128 for key in tags)
    assert recorded(tags | {OWNER_TAG + "abc": "S/L", "team": "payments"}) == flags
    assert record_tags([]) == {}


def test_owners_are_read_from_their_tags_only() -> None:
    assert owners_in({OWNER_TAG + "a1": "S/L", OWNER_TAG + "b2": "T/L", ENABLED_TAG + "0": "T", "owner": "x"}) == {
        "a1",
        "b2",
    }
