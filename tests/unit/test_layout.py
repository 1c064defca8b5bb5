"""A consumer container's layout cache: when it reads the registry again."""

from __future__ import annotations

import itertools
import random

from hotkeys.detector.consumer import layout as layouts
from hotkeys.detector.consumer.layout import Layout, LayoutCache


def _caches(count: int, now: list[float], reads: list[float]) -> list[LayoutCache]:
    def read(table: str) -> Layout:
        reads.append(now[0])
        return Layout(table, 60)

    rng = random.Random(7)
    return [LayoutCache(read, lambda: now[0], 60, draw=rng.random) for _ in range(count)]


def test_a_container_reads_the_layout_again_within_refresh_seconds_not_before_its_spread() -> None:
    now, reads = [0.0], []
    (cache,) = _caches(1, now, reads)
    cache.layout("t")
    for second in range(1, 1000):
        now[0] = float(second)
        cache.layout("t")
    gaps = [later - earlier for earlier, later in itertools.pairwise(reads)]
    assert gaps and all(
        layouts.REFRESH_SECONDS * (1 - layouts.REFRESH_SPREAD) <= gap <= layouts.REFRESH_SECONDS for gap in gaps
    )


def test_containers_that_read_together_at_a_deploy_do_not_read_together_again() -> None:
    # Given 1,000 containers whose first reads fall in the same second (a deploy)
    now, reads = [0.0], []
    caches = _caches(1000, now, reads)
    for cache in caches:
        cache.layout("t")
    assert len(reads) == 1000
    # When they keep working, second by second, for three refresh periods
    reads.clear()
    for second in range(1, 3 * layouts.REFRESH_SECONDS):
        now[0] = float(second)
        for cache in caches:
            cache.layout("t")
    # Then no second sees more than a few percent of them read the registry's partition
    per_second: dict[int, int] = {}
    for at in reads:
        per_second[int(at)] = per_second.get(int(at), 0) + 1
    assert len(reads) >= 2000
    assert max(per_second.values()) <= 30


def test_a_failed_write_reads_the_layout_at_the_next_use() -> None:
    now, reads = [0.0], []
    (cache,) = _caches(1, now, reads)
    cache.layout("t")
    now[0] = 1.0
    cache.forget("t")
    cache.layout("t")
    assert reads == [0.0, 1.0]
