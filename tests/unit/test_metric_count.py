"""`hotkeys cost` prices the handler's custom metrics by their count: the count is the set the handler
publishes when every counter is non-zero (index metrics are priced per counted GSI apart)."""

from __future__ import annotations

import dataclasses

from hotkeys.cli.cost import CUSTOM_METRICS
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.handlers.app import _record_metrics
from hotkeys.detector.observability import metrics


def test_the_cost_model_counts_every_metric_the_handler_can_publish() -> None:
    outcome = BatchOutcome()
    for counter in dataclasses.fields(outcome):
        if counter.type in ("int", int):
            setattr(outcome, counter.name, 1)
    _record_metrics(outcome)
    assert len(metrics.metric_set) == CUSTOM_METRICS
