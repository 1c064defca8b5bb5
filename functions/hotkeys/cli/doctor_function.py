"""``hotkeys doctor``'s checks of the consumer function: its iterator age and errors over the last hour,
and its Powertools layer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from hotkeys.cli.doctor_model import FAIL, OK, WARN, Check, Clients
from hotkeys.deployment import ITERATOR_AGE_ALARM_MS, POWERTOOLS_PARAMETER, POWERTOOLS_VERSION

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.literals import StatisticType


def _statistic(clients: Clients, function: str, metric: str, statistic: StatisticType, now: float) -> float | None:
    end = datetime.fromtimestamp(now, tz=UTC)
    points = clients.cloudwatch.get_metric_statistics(
        Namespace="AWS/Lambda",
        MetricName=metric,
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        StartTime=end - timedelta(hours=1),
        EndTime=end,
        Period=3600,
        Statistics=[statistic],
    )["Datapoints"]
    values = [float(point[statistic]) for point in points]
    if not values:
        return None
    return max(values) if statistic == "Maximum" else sum(values)


def check_function_health(clients: Clients, function: str, now: float) -> list[Check]:
    age = _statistic(clients, function, "IteratorAge", "Maximum", now)
    errors = _statistic(clients, function, "Errors", "Sum", now)
    checks = []
    if age is None:
        checks.append(Check("iterator age (last hour)", OK, "no data: no records in the last hour"))
    elif age >= ITERATOR_AGE_ALARM_MS:
        checks.append(
            Check(
                "iterator age (last hour)",
                FAIL,
                f"the detector lags its stream by up to {age / 60_000:.0f} min",
                "records older than the maximum record age go to the DLQ: find the cause in the function's logs "
                "(errors, a final invocation that keeps failing, throttles)",
            )
        )
    else:
        checks.append(Check("iterator age (last hour)", OK, f"at most {age / 1000:.1f} s behind"))
    if errors:
        checks.append(
            Check(
                "function errors (last hour)",
                WARN,
                f"{errors:.0f} failed invocations (retried and bisected by Lambda)",
                "persistent errors end in the DLQ: see the logs ('malformed stream record', AWS errors)",
            )
        )
    else:
        checks.append(Check("function errors (last hour)", OK, "none"))
    return checks


def check_layer(clients: Clients, function: str) -> Check:
    layers = [
        str(layer["Arn"])
        for layer in clients.lambda_.get_function_configuration(FunctionName=function).get("Layers", [])
    ]
    name = "Powertools layer"
    try:
        expected = clients.ssm.get_parameter(Name=POWERTOOLS_PARAMETER)["Parameter"]["Value"]
    except ClientError:
        return Check(name, WARN, f"cannot read {POWERTOOLS_PARAMETER} here; layers: {', '.join(layers) or 'none'}")
    if expected in layers:
        return Check(name, OK, f"Powertools {POWERTOOLS_VERSION}, as tested")
    return Check(
        name,
        WARN,
        f"the function's layers ({', '.join(layers) or 'none'}) are not Powertools {POWERTOOLS_VERSION} ({expected})",
        "redeploy without -c powertoolsLayerArn, or with the ARN above",
    )
