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
    label: str  # what a person reads: "<label> limit"
    metric_suffix: str  # <Read|Write><metric_suffix> is the CloudWatch metric
    reason_suffix: str  # <Table|Index><Read|Write><reason_suffix> is the ThrottlingReasons reason
    meaning: str
    fix: str  # what to do, and whether the partition key is the problem
    # True: a hot key or key range, which the detector's partition advice is about; False: a capacity
    # setting or a quota, which no key design fixes.
    key_problem: bool

    def metric(self, operation: str) -> str:
        return f"{operation}{self.metric_suffix}"

    def reason(self, operation: str, index: bool) -> str:
        return f"{'Index' if index else 'Table'}{operation}{self.reason_suffix}"

    @property
    def what_to_do(self) -> str:
        """The cause and its fix in one sentence (an alarm's description, an explanation's message)."""
        return f"{self.meaning}: {self.fix}"


CAUSES = (
    Cause(
        "KeyRange",
        "key range",
        "KeyRangeThroughputThrottleEvents",
        "KeyRangeThroughputExceeded",
        "one partition's key range took more than a partition serves (1,000 write units/s, 3,000 read units/s), "
        "whatever the table's capacity",
        "a key problem. Spread each hot key over suffixes ('key#1..N', reads fanned out over them), cache hot "
        "reads, or pick a partition key with more distinct values (the detector's partition advice)",
        True,
    ),
    Cause(
        "MaxOnDemand",
        "on-demand maximum",
        "MaxOnDemandThroughputThrottleEvents",
        "MaxOnDemandThroughputExceeded",
        "the table's or index's on-demand maximum throughput (OnDemandThroughput) was reached",
        "a capacity setting, not a key problem. Raise or remove the maximum (UpdateTable OnDemandThroughput)",
        False,
    ),
    Cause(
        "Provisioned",
        "provisioned",
        "ProvisionedThroughputThrottleEvents",
        "ProvisionedThroughputExceeded",
        "the table's or index's provisioned capacity was used up",
        "a capacity setting, not a key problem. Raise the provisioned capacity or its auto scaling maximum, or switch "
        "to on-demand",
        False,
    ),
    Cause(
        "AccountLimit",
        "account",
        "AccountLimitThrottleEvents",
        "AccountLimitExceeded",
        "the account's per-table throughput quota in this region was reached",
        "a quota, not a key problem. Request a higher DynamoDB throughput quota (Service Quotas)",
        False,
    ),
)
CAUSE_BY_KEY = {cause.key: cause for cause in CAUSES}
CAUSE_BY_LABEL = {cause.label: cause for cause in CAUSES}


@dataclass(frozen=True)
class ThrottleMetric:
    operation: str
    cause: Cause

    @property
    def name(self) -> str:
        return self.cause.metric(self.operation)


THROTTLE_METRICS = tuple(ThrottleMetric(operation, cause) for cause in CAUSES for operation in OPERATIONS)
METRIC_BY_NAME = {metric.name: metric for metric in THROTTLE_METRICS}
