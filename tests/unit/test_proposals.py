"""What-if proposals: the grammar a user types, the names every view shows, and the notices' once-a-day rule."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hotkeys.detector.adapters.what_if_store import DynamoWhatIfClaims
from hotkeys.detector.alerts.what_if import WhatIf, WhatIfNotices, subject
from hotkeys.detector.proposals import INCLUDE, KEYS_ONLY, Proposal, ProposalError, is_proposed, parse, where


def test_an_index_proposal_reads_its_keys_projection_and_table() -> None:
    (plain, scoped) = parse("by-status=status; tickets:by-day=day+region/createdAt:INCLUDE(total, price)", None)
    assert plain == Proposal(name="by-status (proposed)", partition_key=("status",))
    assert scoped == Proposal(
        name="by-day (proposed)",
        partition_key=("day", "region"),
        sort_key=("createdAt",),
        projection=INCLUDE,
        included=frozenset({"total", "price"}),
        table="tickets",
    )
    assert parse("by-x=x:keys_only", None)[0].projection == KEYS_ONLY
    assert plain.applies_to("orders") and scoped.applies_to("tickets") and not scoped.applies_to("orders")


def test_a_key_proposal_is_the_table_keyed_by_its_attributes() -> None:
    (proposal,) = parse(None, "orders:customer+region")
    assert (proposal.name, proposal.partition_key, proposal.table) == (
        "keyed by customer+region (proposed)",
        ("customer", "region"),
        "orders",
    )
    assert proposal.rekeying and proposal.projection == "ALL"


@pytest.mark.parametrize(
    ("indexes", "keys", "message"),
    [
        ("status", None, "an index is NAME=ATTRIBUTE"),
        ("ab=status", None, "'ab' is no index name"),
        ("by status=status", None, "is no index name"),
        ("by-status=", None, "an attribute name is missing"),
        ("by-status=a+", None, "an attribute name is missing"),
        ("by-status=a:INCLUDE()", None, "INCLUDE lists an empty attribute name"),
        ("by-status=a:INCLUDE(b c)", None, "'b c' is no attribute name"),
        ("by-status=a+a", None, "an attribute is named twice"),
        (None, "a+b+c+d+e", "at most 4 attributes"),
        ("by-x=a;by-x=b", None, "'by-x' is proposed twice"),
        ("by-x=a;orders:by-x=b", None, "'by-x' is proposed twice"),
        (None, "a;b;c;d;e;f", "at most 5 proposals per table"),
        ("by-a=a;by-b=b;by-c=c", "d;orders:e;f", r"at most 5 proposals per table \(indexes and keys together\), got 6"),
        ("t1:aaa=x", None, "'t1' is no table name"),
        ("my table:aaa=x", None, "'my table' is no table name"),
        ("by-x=status/status", None, "an attribute is in both the partition key and the sort key"),
        ("by-x=a:INCLUDE(b,b)", None, "INCLUDE lists an attribute twice"),
    ],
)
def test_a_malformed_proposal_says_what_is_wrong(indexes: str | None, keys: str | None, message: str) -> None:
    with pytest.raises(ProposalError, match=message):
        parse(indexes, keys)


def test_the_same_name_on_two_tables_is_two_proposals() -> None:
    assert len(parse("orders:by-x=a;users:by-x=b", None)) == 2


def test_a_proposals_name_can_never_be_a_real_index_and_reads_as_proposed() -> None:
    # DynamoDB's index names are [a-zA-Z0-9_.-]: a space and parentheses mark every proposal
    assert is_proposed("by-status (proposed)") and not is_proposed("by-status") and not is_proposed(None)
    assert where("orders", "by-status (proposed)") == "orders index by-status (proposed)"
    assert where("orders", "keyed by customer (proposed)") == "orders keyed by customer (proposed)"
    assert where("orders", "by-status") == "orders index by-status"
    assert where("orders", None) == "orders"


def finding(window: int, hot: bool = True, peak: float = 2120.0) -> WhatIf:
    return WhatIf(
        table="tickets",
        proposal="by-status (proposed)",
        key="PENDING",
        window_start=window,
        wcu_per_second=peak,
        at_most_wcu_per_second=peak,
        share=0.6,
        partition_wcu_limit=1000,
        suggested_shards=3,
        hot=hot,
    )


def test_the_subject_names_the_proposal_its_partition_and_the_peak() -> None:
    assert subject(finding(0)) == (
        "[what-if] tickets index by-status (proposed): PENDING would peak at 2,120 WCU/s, 212% of limit"
    )


def test_a_hot_proposal_is_told_once_per_utc_day_and_a_cold_one_never(stats_table_name: str) -> None:
    table: Any = boto3.resource("dynamodb").Table(stats_table_name)
    sent: list[WhatIf] = []
    day = 1_796_083_200  # a UTC midnight
    first, second = (
        WhatIfNotices(DynamoWhatIfClaims(table), sent.append),
        WhatIfNotices(DynamoWhatIfClaims(table), sent.append),
    )
    assert first.consider([finding(day + 60, hot=False)]) == 0
    assert first.consider([finding(day + 120)]) == 1
    assert first.consider([finding(day + 180, peak=3000.0)]) == 0  # the same day, this container
    assert second.consider([finding(day + 240)]) == 0  # the same day, another judge: the claim is taken
    assert second.consider([finding(day + 86_400)]) == 1  # the next day
    assert [(f.window_start, f.wcu_per_second) for f in sent] == [(day + 120, 2120.0), (day + 86_400, 2120.0)]


def test_without_a_what_if_topic_nothing_is_claimed_or_sent(stats_table_name: str) -> None:
    table: Any = boto3.resource("dynamodb").Table(stats_table_name)
    assert WhatIfNotices(DynamoWhatIfClaims(table), None).consider([finding(0)]) == 0
    assert table.scan()["Items"] == []


def test_throttles_are_never_read_for_a_proposal() -> None:
    from hotkeys.detector.consumer.snapshots import WindowFigures
    from hotkeys.detector.domain.summary import Summary
    from hotkeys.detector.throttling.throttles import landed_from_figures

    figures = [
        WindowFigures("orders", 0, 60, Summary(), index=index)
        for index in (None, "by-status", "by-status (proposed)", "keyed by region (proposed)")
    ]
    assert [landed.index for landed in landed_from_figures(figures)] == [None, "by-status"]


def test_a_cold_proposal_gets_no_subject_nor_fix_and_a_hot_one_names_its_other_hot_partitions() -> None:
    from dataclasses import replace

    from hotkeys.detector.alerts.what_if import document

    cold = document(replace(finding(0, hot=False, peak=250.0), suggested_shards=1))
    assert "subject" not in cold and "advice" not in cold and cold["hot"] is False
    hot = document(replace(finding(0), also_hot=("PAID",)))
    assert hot["also_hot"] == ["PAID"]
    assert hot["advice"] == (
        "Before creating it: choose a higher-cardinality index partition key, or add a write-sharding suffix to "
        "'PENDING' (and to 'PAID', also over the alert rate): 1..3 keeps each partition under the alert rate."
    )


def test_a_proposal_no_write_reached_is_named_with_what_it_lacks() -> None:
    from hotkeys.cli.replay_view import unseen_proposals
    from hotkeys.detector.config import Settings

    chosen = Settings(stats_table_name="s", what_if_indexes="by-x=stauts;nosuch:by-y=y", what_if_keys="orders:region")
    assert unseen_proposals([], chosen, ["orders"]) == [
        "orders index by-x (proposed): no item written carries 'stauts' (as a scalar)",
        "nosuch index by-y (proposed): table nosuch is not in the input",
        "orders keyed by region (proposed): no item written carries 'region' (as a scalar)",
    ]
