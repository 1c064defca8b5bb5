"""How far behind the streams are: the stream consumer's ``IteratorAge`` (AWS/Lambda, Maximum).

Lambda's metric for stream event sources: "the age of the last record in each batch of records
processed", from the time the stream received it to when the mapping sends it to the function (Lambda
developer guide, "Types of metrics for Lambda functions"). Its maximum over every shard and every
mapping of the function tells the judge the oldest moment a shard may still be working on: a window
that ended before it is finished on every shard that is not silent for another reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

# The metric's latest minutes read: CloudWatch publishes a minute's figure a minute or two later.
LOOKBACK_SECONDS = 300
# A judge container reads it at most this often (a look every few seconds does not need a new figure).
READ_EVERY_SECONDS = 60


class IteratorAge:
    def __init__(self, cloudwatch: Any, function_name: str, clock: Callable[[], float] = time.time) -> None:
        self._cloudwatch = cloudwatch
        self._function = function_name
        self._clock = clock
        self._read: tuple[float, float] | None = None  # (read at, seconds)

    def __call__(self) -> float:
        now = self._clock()
        if self._read is None or now - self._read[0] >= READ_EVERY_SECONDS:
            self._read = (now, self._max_seconds(now))
        return self._read[1]

    def _max_seconds(self, now: float) -> float:
        answer = self._cloudwatch.get_metric_data(
            MetricDataQueries=[
                {
                    "Id": "age",
                    "MetricStat": {
                        "Metric": {
                            "Namespace": "AWS/Lambda",
                            "MetricName": "IteratorAge",
                            "Dimensions": [{"Name": "FunctionName", "Value": self._function}],
                        },
                        "Period": 60,
                        "Stat": "Maximum",
                        "Unit": "Milliseconds",
                    },
                    "ReturnData": True,
                }
            ],
            StartTime=datetime.fromtimestamp(now - LOOKBACK_SECONDS, tz=UTC),
            EndTime=datetime.fromtimestamp(now, tz=UTC),
        )
        values = [value for result in answer.get("MetricDataResults", []) for value in result.get("Values", [])]
        # No figure: no records delivered in those minutes (an idle stream is not behind).
        return max(values, default=0.0) / 1000
