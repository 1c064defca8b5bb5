"""DynamoDB's throttle metrics by cause: names, what each cause means and what fixes it.

Pure constants, no I/O: the stack alarms on these metrics (infra/throttle_alarms.py), ``hotkeys
doctor`` reads them, an alarm's explainer names the cause from them.

AWS documents (DynamoDB developer guide, "CloudWatch throttling metrics", and "DynamoDB metrics and
dimensions") one metric per cause and operation, in namespace ``AWS/DynamoDB``, per table (dimension
``TableName``) and per global secondary index (``TableName`` and ``GlobalSecondaryIndexName``); "The
TableName dimension returns [...] for the table, but not for any global secondary indexes". The cause is
the one a throttled request carries in ``ThrottlingReasons`` (``reason`` of the form
``<Table|Index><Read|Write><cause>``).
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "AWS/DynamoDB"
TABLE_DIMENSION = "TableName"
INDEX_DIMENSION = "GlobalSecondaryIndexName"
OPERATIONS = ("Read", "Write")
# One partition's documented ceiling, whatever the table's capacity settings (units per second).
PARTITION_UNITS = {"Read": 3000, "Write": 1000}


@dataclass(frozen=True)
class Cause:
    key: str  # KeyRange | MaxOnDemand | Provisioned | AccountLimit
    metric_suffix: str  # <Read|Write><metric_suffix> is the CloudWatch metric
    reason_suffix: str  # <Table|Index><Read|Write><reason_suffix> is the ThrottlingReasons reason
    meaning: str
    fix: str
    # True: a hot key or key range, which the detector's partition advice is about; False: a capacity
    # setting or a quota, which no key design fixes.
    key_problem: bool

    def metric(self, operation: str) -> str:
        return f"{operation}{self.metric_suffix}"

    def reason(self, operation: str, index: bool) -> str:
        return f"{'Index' if index else 'Table'}{operation}{self.reason_suffix}"


CAUSES = (
    Cause(
        "KeyRange",
        "KeyRangeThroughputThrottleEvents",
        "KeyRangeThroughputExceeded",
        "one partition's key range took more than a partition serves (1,000 write or 3,000 read units a second)",
        "spread the hot key (write sharding, a caching layer for reads): see the detector's partition advice",
        True,
    ),
    Cause(
        "MaxOnDemand",
        "MaxOnDemandThroughputThrottleEvents",
        "MaxOnDemandThroughputExceeded",
        "the table's or index's on-demand maximum throughput (OnDemandThroughput) was reached",
        "raise or remove the on-demand maximum (UpdateTable OnDemandThroughput): a setting, not a key problem",
        False,
    ),
    Cause(
        "Provisioned",
        "ProvisionedThroughputThrottleEvents",
        "ProvisionedThroughputExceeded",
        "the table's or index's provisioned capacity was used up",
        "raise the provisioned capacity or its auto scaling maximum, or switch to on-demand: not a key problem",
        False,
    ),
    Cause(
        "AccountLimit",
        "AccountLimitThrottleEvents",
        "AccountLimitExceeded",
        "the account's per-table throughput quota in this region was reached",
        "request a higher DynamoDB throughput quota (Service Quotas): not a key problem",
        False,
    ),
)
CAUSE_BY_KEY = {cause.key: cause for cause in CAUSES}


@dataclass(frozen=True)
class ThrottleMetric:
    operation: str
    cause: Cause

    @property
    def name(self) -> str:
        return self.cause.metric(self.operation)


THROTTLE_METRICS = tuple(ThrottleMetric(operation, cause) for cause in CAUSES for operation in OPERATIONS)
METRIC_BY_NAME = {metric.name: metric for metric in THROTTLE_METRICS}
