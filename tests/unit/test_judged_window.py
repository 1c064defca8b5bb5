"""Which window a resolution judges: the latest one every sibling shard has finished.

AWS documents no bound on how far apart sibling shards' consumers run ("Tumbling window aggregations do
not support resharding. When the shard ends, Lambda considers the window closed, and the child shards
start their own window in a fresh state"), and a consumer cannot tell a parent that ended from a sibling
that is behind: both stop writing heads. Every reading is covered: a window is judged once every shard
seen in it or in the SIBLING_WINDOWS windows before it has finished it, or RESOLVE_LAG_WINDOWS back.
"""

from __future__ import annotations

from hotkeys.detector.alerts.desk import RESOLVE_LAG_WINDOWS, SIBLING_WINDOWS, judged_window
from hotkeys.detector.snapshots import SegmentSnapshot
from hotkeys.detector.summary import Summary

W = 60
T0 = 1_796_083_200


def head(shard: str, window: int, final: bool = True, origin: str = "0") -> SegmentSnapshot:
    start = T0 + window * W
    return SegmentSnapshot(
        table="t",
        window_start=start,
        window_seconds=W,
        shard_id=shard,
        origin=origin,
        first_sequence="",
        last_sequence="",
        summary=Summary(writes=1, wcu=1),
        ttl_deletes=0,
        first_event=start,
        last_event=start,
        alert_min_span_seconds=10,
        final=final,
    )


def test_a_lone_shard_judges_the_window_it_just_finished() -> None:
    heads = [head("a", w) for w in range(3)]
    assert judged_window(heads, "a", T0 + 2 * W, W) == T0 + 2 * W


def test_siblings_that_finished_the_window_let_it_be_judged() -> None:
    heads = [head(shard, w) for shard in "abc" for w in range(3)]
    assert judged_window(heads, "a", T0 + 2 * W, W) == T0 + 2 * W


def test_a_sibling_still_in_the_window_holds_it_back_to_the_last_window_all_finished() -> None:
    # b has written window 2 but not finished it: window 1 is the latest all finished
    heads = [head("a", w) for w in range(3)] + [head("b", 0), head("b", 1), head("b", 2, final=False)]
    assert judged_window(heads, "a", T0 + 2 * W, W) == T0 + 1 * W


def test_a_sibling_three_windows_behind_holds_every_later_window_back() -> None:
    # b finished window 0 and has written nothing since (behind, or ended: the same evidence)
    heads = [head("a", w) for w in range(4)] + [head("b", 0)]
    assert judged_window(heads, "a", T0 + 3 * W, W) == T0
    # a window whose sibling range no longer reaches b is judged once this shard finishes it
    later = [head("a", w) for w in range(SIBLING_WINDOWS + 2)] + [head("b", 0)]
    assert judged_window(later, "a", T0 + (SIBLING_WINDOWS + 1) * W, W) == T0 + (SIBLING_WINDOWS + 1) * W


def test_without_evidence_the_window_lag_windows_back_is_judged() -> None:
    # b keeps a window open for ever (a stuck sibling): the judgement falls back to the lag
    heads = [head("a", w) for w in range(6)] + [head("b", w, final=False) for w in range(6)]
    assert judged_window(heads, "a", T0 + 5 * W, W) == T0 + (5 - RESOLVE_LAG_WINDOWS) * W


def test_every_origin_of_a_sibling_must_be_done() -> None:
    # b sealed a segment (done) and still counts window 1 under its next generation: window 0 is judged
    heads = [head("a", 0), head("a", 1), head("b", 0), head("b", 1, origin="0"), head("b", 1, final=False, origin="1")]
    assert judged_window(heads, "a", T0 + W, W) == T0
