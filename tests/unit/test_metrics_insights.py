"""Reading a Metrics Insights query: the query the stack writes for a table it does not own, the variants
the documented grammar allows (CloudWatch user guide, "Metrics Insights query components and syntax"), and
a one-line reason for anything whose table cannot be told."""

from __future__ import annotations

import pytest

from hotkeys.detector.throttling.metrics_insights import Query, UnreadableQuery, is_query, parse_query

# infra.throttle_alarms.insights_query's text for `orders`, written out (the infra tests check the template's
# queries against this reader too: tests/infra/test_throttling.py)
STACKS = (
    'SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM SCHEMA("AWS/DynamoDB", GlobalSecondaryIndexName, '
    "TableName) WHERE TableName = 'orders'"
)


def test_the_stacks_query_names_its_metric_namespace_schema_and_table() -> None:
    assert parse_query(STACKS) == Query(
        function="SUM",
        metric="WriteKeyRangeThroughputThrottleEvents",
        namespace="AWS/DynamoDB",
        schema=("GlobalSecondaryIndexName", "TableName"),
        fixed={"TableName": "orders"},
    )


@pytest.mark.parametrize(
    ("query", "schema", "fixed"),
    [
        # keywords in any case, identifiers quoted or not, the SCHEMA's keys in any order, spread over lines
        (
            'select sum("WriteKeyRangeThroughputThrottleEvents")\n  from schema("AWS/DynamoDB", TableName, '
            '"GlobalSecondaryIndexName")\n  where "TableName" = \'orders\'',
            ("TableName", "GlobalSecondaryIndexName"),
            {"TableName": "orders"},
        ),
        # no SCHEMA: the namespace alone, any dimensions
        (
            "SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM \"AWS/DynamoDB\" WHERE TableName = 'orders'",
            None,
            {"TableName": "orders"},
        ),
        # more conditions: `=` fixes a label, `!=` narrows without naming one value
        (
            'SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM SCHEMA("AWS/DynamoDB", '
            "GlobalSecondaryIndexName, TableName) WHERE GlobalSecondaryIndexName != 'by-day' AND "
            "TableName = 'orders' AND GlobalSecondaryIndexName = 'by-status'",
            ("GlobalSecondaryIndexName", "TableName"),
            {"TableName": "orders", "GlobalSecondaryIndexName": "by-status"},
        ),
        # GROUP BY, ORDER BY and LIMIT change the series returned, not the metrics matched
        (
            'SELECT SUM(WriteKeyRangeThroughputThrottleEvents) FROM SCHEMA("AWS/DynamoDB", '
            "GlobalSecondaryIndexName, TableName) WHERE TableName = 'orders' GROUP BY GlobalSecondaryIndexName "
            "ORDER BY MAX() DESC LIMIT 5",
            ("GlobalSecondaryIndexName", "TableName"),
            {"TableName": "orders"},
        ),
    ],
)
def test_documented_variants_name_the_same_table(
    query: str, schema: tuple[str, ...] | None, fixed: dict[str, str]
) -> None:
    parsed = parse_query(query)
    assert (parsed.metric, parsed.namespace, parsed.schema, parsed.fixed) == (
        "WriteKeyRangeThroughputThrottleEvents",
        "AWS/DynamoDB",
        schema,
        fixed,
    )


def test_a_quoted_identifier_with_an_escaped_quote_and_a_keyword_name() -> None:
    # The guide: `SELECT AVG("Bytes\"Input\"")`, and a metric called LIMIT is written "LIMIT".
    assert parse_query('SELECT AVG("Bytes\\"Input\\"") FROM "AWS/EC2"').metric == 'Bytes"Input"'
    assert parse_query('SELECT MAX("LIMIT") FROM "AWS/EC2" LIMIT 5').metric == "LIMIT"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (
            "SELECT SUM(X) FROM \"AWS/DynamoDB\" WHERE TableName = 'orders' OR TableName = 'users'",
            "joins conditions with OR",
        ),
        ("SELECT SUM(X) FROM \"AWS/DynamoDB\" WHERE (TableName = 'orders')", "has parentheses"),
        (
            "SELECT SUM(X) FROM \"AWS/DynamoDB\" WHERE TableName = 'orders' AND TableName = 'users'",
            "sets TableName to two values",
        ),
        ('SELECT SUM(X) FROM "AWS/DynamoDB" WHERE TableName = \'orders', "an unterminated quote at character 53"),
        ('SELECT SUM(X) FROM "AWS/DynamoDB" WHERE TableName = orders', "a label value in single quotes expected"),
        ('SELECT MEDIAN(X) FROM "AWS/DynamoDB"', "MEDIAN is not a Metrics Insights function"),
        ('SELECT SUM(X FROM "AWS/DynamoDB"', "')' expected, found 'FROM'"),
        ("SELECT SUM(X) FROM", "it ends where a namespace or SCHEMA(...) was expected"),
        ("SELECT SUM(X) FROM \"AWS/DynamoDB\" TableName = 'orders'", "unexpected 'TableName' after the FROM"),
        (
            "SELECT SUM(X) FROM \"AWS/DynamoDB\" WHERE TableName ~ 'orders'",
            "unexpected text \"~ 'orders'\" at character 51",
        ),
    ],
)
def test_a_query_whose_labels_cannot_be_told_is_one_line_why(query: str, says: str) -> None:
    with pytest.raises(UnreadableQuery) as raised:
        parse_query(query)
    assert says in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("expression", "query"),
    [
        (STACKS, True),
        ('  select sum(X) from "AWS/DynamoDB"', True),
        ("m1/m2", False),  # metric math over the alarm's other entries (the guide's sample)
        ("SEARCH('{AWS/DynamoDB,TableName} orders', 'Sum', 60)", False),
        ("SELECTED_METRIC * 2", False),
    ],
)
def test_only_a_select_is_a_query(expression: str, query: bool) -> None:
    assert is_query(expression) is query
