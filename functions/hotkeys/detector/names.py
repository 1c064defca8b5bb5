"""Names the function and the stack share (the standard library only: the CDK app reads them without Powertools)."""

import hashlib

SERVICE = "hotkey-detector"
NAMESPACE = "HotKeyDetector"
# The stack's name unless `-c stackName` gives another (infra/app_factory.py).
DEFAULT_STACK_NAME = "HotKeyDetector"
# Where a deployed function reads its stack's namespace (Powertools' own variable).
NAMESPACE_VARIABLE = "POWERTOOLS_METRICS_NAMESPACE"


def metrics_namespace(stack_name: str) -> str:
    """The namespace of one stack's own metrics: ``NAMESPACE`` for the default stack name (the metrics every
    earlier release wrote: dashboards and alarm history carry on), ``NAMESPACE/<stack name>`` for any other,
    so that two stacks in one account and region never share an alarm's metric."""
    return NAMESPACE if stack_name == DEFAULT_STACK_NAME else f"{NAMESPACE}/{stack_name}"


# Write units counted per global secondary index: metric "IndexWriteUnits/<table>/<index>".
INDEX_METRIC_PREFIX = "IndexWriteUnits/"
# Stream records each watched table's invocations got through: metric "StreamRecordsRead/<table>".
READ_METRIC_PREFIX = "StreamRecordsRead/"
# CloudWatch's limit on a metric name (API reference, "Metric": MetricName "Maximum length of 255").
MAX_METRIC_NAME = 255


def metric_name(prefix: str, *names: str) -> str:
    """``<prefix><name>/<name>...``; when names (up to 255 characters each) make it longer than CloudWatch
    allows, cut to fit and ended by a digest of the whole name, so each still has a metric of its own under
    the same prefix. (The stack names its alarms' metrics with the same function.)"""
    name = prefix + "/".join(names)
    if len(name) <= MAX_METRIC_NAME:
        return name
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).hexdigest()
    return f"{name[: MAX_METRIC_NAME - len(digest) - 1]}-{digest}"


# The partition keys of the archive spool's items in the stats table (adapters/archive_spool.py): the
# function may delete those items only.
SPOOL_PREFIX = "SPOOL#"
