"""The benchmarks' emulated time (``hotkeys.emulator.lanes``, where the model is stated) and their environment."""

from __future__ import annotations

import os
from datetime import UTC, datetime

from hotkeys.emulator.lanes import EventSourceMapping, Lane, Ticker, Turns, consume_side_by_side, event_second

__all__ = [
    "EventSourceMapping",
    "Lane",
    "Ticker",
    "Turns",
    "consume_side_by_side",
    "epoch",
    "event_second",
    "moto_environment",
]


def epoch(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


def moto_environment(**extra: str) -> None:
    """The process environment of a benchmark on in-process moto: dummy credentials in us-east-1, no
    endpoint override, no X-Ray (``extra``: more variables)."""
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
            "POWERTOOLS_TRACE_DISABLED": "true",
            **extra,
        }
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
