"""`hotkeys cost` prices the handler's custom metrics by the hours they are published in: the counts it uses
are the metrics the handler writes in every line, and those it writes only when something happened (index
metrics are priced per counted GSI apart)."""

from __future__ import annotations

import dataclasses

from hotkeys.cli import cost
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.handlers.app import LINE_PROPERTIES, _record_metrics
from hotkeys.detector.observability import metrics


def _published(outcome: BatchOutcome) -> set[str]:
    _record_metrics(outcome)
    names = set(metrics.metric_set)
    metrics.clear_metrics()
    return names


def test_a_line_where_nothing_happened_carries_only_the_metrics_priced_every_hour() -> None:
    # A flush of a quiet table: records counted, nothing else
    assert _published(BatchOutcome(counted=12, stats_writes=1, summary_size=3, keys_over_one_percent=2)) == {
        "RecordsCounted"
    }
    assert cost.CONSUMER_METRICS_ALWAYS == 1


def test_the_cost_model_counts_every_metric_the_handler_can_publish() -> None:
    outcome = BatchOutcome()
    for counter in dataclasses.fields(outcome):
        if counter.type in ("int", int):
            setattr(outcome, counter.name, 1)
    published = _published(outcome)
    assert len(published) == cost.CONSUMER_METRICS_ALWAYS + cost.CONSUMER_METRICS_RARE
    # of which the pair a table with TTL deletions publishes every hour
    assert {"TtlDeletions", "ItemsArchived"} <= published and cost.CONSUMER_METRICS_TTL == 2
    # and the flush figures no alarm watches are properties of the line, not metrics (no metric charge)
    assert not published & {name for name, _ in LINE_PROPERTIES}


def test_an_index_is_published_when_it_was_written() -> None:
    written = _published(BatchOutcome(counted=1, index_wcu={("orders", "by-status"): 4, ("orders", "by-day"): 0}))
    assert written == {"RecordsCounted", "IndexWriteUnits/orders/by-status"}


def test_the_cost_model_counts_the_judges_metrics_as_it_publishes_them() -> None:
    from hotkeys.detector.alerts.judge import LookOutcome
    from hotkeys.detector.alerts.look_chain import Wake
    from hotkeys.detector.handlers.judge_app import publish_metrics

    def published(woke: Wake) -> set[str]:
        publish_metrics(woke)
        names = set(metrics.metric_set)
        metrics.clear_metrics()
        return names

    # A look where nothing happened writes the metrics priced every hour
    assert len(published(Wake(due=0, looked=True, outcome=LookOutcome(tables=1)))) == cost.JUDGE_METRICS_ALWAYS
    # and one where everything did, the rare ones besides
    busy = LookOutcome(tables=1, published=1, failed=1, what_ifs=1)
    assert len(published(Wake(0, True, 0.5, busy, restarted=True))) == (
        cost.JUDGE_METRICS_ALWAYS + cost.JUDGE_METRICS_RARE
    )
