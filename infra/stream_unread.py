"""One watched table's StreamUnread alarm: the table writes, and nothing of its stream is read.

Whatever stops the reading (its mapping deleted, disabled or left on the stream the table had before;
a record the consumer fails on again and again; the consumer failing for that table only), the sign is
the same: DynamoDB counts the table's writes (``ConsumedWriteCapacityUnits``) or TTL deletions
(``TimeToLiveDeletedItemCount``) and the consumer's ``StreamRecordsRead/<table>`` stays at zero. Per
table, so that other tables' traffic cannot mask it (the function's ``IteratorAge`` is the maximum over
all its mappings, and has no data for a mapping that is gone). docs/decisions.md §80.

Why three periods of two minutes: the consumer writes its metrics at most once a minute, and the first
line after a quiet minute at once (``handlers/app.MetricsBuffer``), so a table read as it writes shows
reads in one of any three consecutive periods of two minutes in which it wrote. Three unread periods
in a row are six minutes; CloudWatch's evaluation and DynamoDB's metric delay add a few more: a table
left unread is named within ten minutes of its first unread write. "Alarms that evaluate metrics in the
AWS/DynamoDB namespace always ignore missing data" (PutMetricAlarm): whether that holds for a metric-math
alarm is not documented, so an alarm may stay in ALARM while its table is quiet, until it writes and is read.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from hotkeys.detector.names import READ_METRIC_PREFIX, metric_name
from hotkeys.throttling import NAMESPACE, TABLE_DIMENSION
from infra.monitoring import detector_metric

PERIOD = Duration.minutes(2)
UNREAD_PERIODS = 3
# "IF(condition, trueValue, falseValue)", FILL and the logical operators: CloudWatch's metric math syntax.
EXPRESSION = "IF(FILL(written, 0) + FILL(expired, 0) > 0 AND FILL(read, 0) == 0, 1, 0)"


def unread_description(table_name: str) -> str:
    return (
        f"Table {table_name} writes and the detector reads none of its stream: its hot keys go unreported. "
        "`hotkeys doctor` names the cause (the mapping deleted, disabled or on the table's old stream; a "
        "record failing again and again; the consumer failing) and `cdk deploy` restores the mapping. "
        "A table whose writes in those minutes all changed nothing (failed conditions, identical puts) "
        "has no stream records either: then the alarm says only that."
    )


def _table_sum(table_name: str, metric: str) -> cloudwatch.Metric:
    """One of DynamoDB's own metrics of the table, summed over a period."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric,
        dimensions_map={TABLE_DIMENSION: table_name},
        statistic="Sum",
        period=PERIOD,
    )


class StreamUnreadAlarm(Construct):
    """The alarm of one table, by its name (``table_name`` may be a token: a table the stack creates)."""

    def __init__(self, scope: Construct, construct_id: str, *, table_name: str) -> None:
        super().__init__(scope, construct_id)
        written = _table_sum(table_name, "ConsumedWriteCapacityUnits")
        # TTL deletions are stream records too, and consume no write capacity: a table that only expires items
        # (what the archive is for) would otherwise go unread unnoticed.
        expired = _table_sum(table_name, "TimeToLiveDeletedItemCount")
        read = detector_metric(self, metric_name(READ_METRIC_PREFIX, table_name), period=PERIOD)
        unread = cloudwatch.MathExpression(
            expression=EXPRESSION,
            using_metrics={"written": written, "expired": expired, "read": read},
            label="written, none read",
            period=PERIOD,
        )
        self.alarm = unread.create_alarm(
            self,
            "Alarm",
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=UNREAD_PERIODS,
            datapoints_to_alarm=UNREAD_PERIODS,
            alarm_description=unread_description(table_name),
            # A table that does not write is not unread.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
