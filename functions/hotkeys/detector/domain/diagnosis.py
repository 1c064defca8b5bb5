"""Which kind of hot key it is, and which fix works: write-sharded families and the classic antipatterns.

Pure functions of a window's figures (key texts and write units); thresholds are named below and
in docs/decisions.md §30. These are heuristics about key *names*: they suggest, the figures decide.

**Write-sharded families.** Teams that shard a key write ``event#42#0`` … ``event#42#9``: a key
with a separator inside (one of ``# _ : | . -``) whose last separator is followed by a number of at
most three digits is read as a shard of the family named by everything before that number
(``shard_families(pattern=...)`` takes another scheme: a regular expression whose named group
``stem`` is the family). Keys ending in a date are not shards. A family needs at least
``MIN_FAMILY_SHARDS`` members in the window, at most ``MAX_FAMILY_SHARDS``, and numeric suffixes
below twice their count (0..9, 1..10: suffixes; 517..530: identifiers). Its verdict compares the
hottest shard with the mean (``UNEVEN_SPREAD``) and the family's total with what its shards absorb (``NEAR_CAPACITY``
of shards x limit: then enough suffixes to bring each to ``HEADROOM`` of the limit).

**Antipatterns**, checked in this order for a hot key:

* *time bucket*: the key holds a date or an hour (``2026-12-01``, ``20261201``, ``2026-12-01T10``,
  ``2026-12``): every write of the current period lands on one partition;
* *low cardinality* (an index key): at most ``FEW_KEYS`` distinct keys in the index's window and
  the key is a short word (``PENDING``): a status or type as the index key;
* *single key*: one key takes at least ``SINGLE_KEY_SHARE`` of its table's (or index's) writes in
  the window, among at most ``FEW_KEYS`` distinct keys: a global counter, log or singleton item;
* *low cardinality* (a table key): at most ``FEW_KEYS`` distinct keys and a short word.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from hotkeys.detector.domain.rate import percent_of_limit, whole

MIN_FAMILY_SHARDS = 2
MAX_FAMILY_SHARDS = 200
# A family whose hottest shard writes this many times the family's mean is unevenly sharded.
UNEVEN_SPREAD = 1.5
# A family writing this fraction of what its shards can absorb (shards x limit) should add suffixes,
# enough to bring each to HEADROOM of the limit.
NEAR_CAPACITY = 0.6
HEADROOM = 0.5
SINGLE_KEY_SHARE = 0.9
FEW_KEYS = 10
DEFAULT_SHARD_PATTERN = r"(?P<stem>[^#_:|.\-]+[#_:|.\-].*[^#_:|.\-][#_:|.\-])\d{1,3}"

TIME_BUCKET, SINGLE_KEY, LOW_CARDINALITY = "time bucket", "single key", "low cardinality"
SHARD_FAMILY = "write-sharded family"
_DATE = re.compile(r"(?<!\d)(?:\d{4}-\d{2}(?:-\d{2}(?:[T ]\d{2})?)?|20\d{6}(?:\d{2})?)(?!\d)")
_WORD = re.compile(r"[A-Za-z][A-Za-z_ ]{0,23}")
# Keys in prose (remedies, e-mail and chat text) are cut to this many characters: a key may be 2,048
# bytes (2,732 characters of base64) and an alert repeats it in every form it sends (SNS takes at most
# 256 KB); the alert's JSON document carries the key whole, once per form.
KEY_IN_TEXT_CHARS = 200


def key_in_text(key: str) -> str:
    """The key as prose quotes it: whole up to ``KEY_IN_TEXT_CHARS`` characters, else its start and '…'."""
    return key if len(key) <= KEY_IN_TEXT_CHARS else key[:KEY_IN_TEXT_CHARS] + "…"


@dataclass(frozen=True)
class Family:
    """A write-sharded key family in one window: its shards' figures rolled up."""

    stem: str
    shards: int
    wcu: int
    hottest_key: str
    hottest_wcu: int

    @property
    def spread(self) -> float:
        """Hottest shard over the mean shard (1.0: perfectly even)."""
        return self.hottest_wcu * self.shards / self.wcu if self.wcu else 1.0

    def verdict(self, window_seconds: int, partition_limit: int) -> str:
        """The family's rates are averages over ``window_seconds`` (the whole window in ``top`` and a
        replay's families line; the window so far in an alert's remedy)."""
        total = self.wcu / window_seconds
        hottest = self.hottest_wcu / window_seconds
        head = (
            f"{key_in_text(self.stem)}* ({self.shards} shards): {whole(total)} WCU/s in total on average, hottest "
            f"shard {key_in_text(self.hottest_key)} at {whole(percent_of_limit(hottest, partition_limit))}% of the "
            f"limit on average, spread max/mean {self.spread:.1f}"
        )
        if self.spread >= UNEVEN_SPREAD:
            return f"{head} — uneven: one shard draws more than its part; pick suffixes at random or by a hash"
        capacity = self.shards * partition_limit
        if total >= NEAR_CAPACITY * capacity:
            needed = max(self.shards + 1, math.ceil(total / (HEADROOM * partition_limit)))
            return (
                f"{head} — at {whole(percent_of_limit(total, capacity))}% of what {self.shards} shards absorb: use "
                f"about {needed} suffixes (half the limit each, room to grow)"
            )
        return f"{head} — sharding works"


def shard_families(keys: Iterable[tuple[str, int]], pattern: str = DEFAULT_SHARD_PATTERN) -> list[Family]:
    """The write-sharded families among (key, write units) pairs of one window, heaviest first."""
    matcher = re.compile(pattern)
    members: dict[str, list[tuple[str, int]]] = {}
    for key, wcu in keys:
        found = matcher.fullmatch(key)
        if found is None or not found.group("stem") or _ends_in_date(key):
            continue
        members.setdefault(found.group("stem"), []).append((key, wcu))
    families = []
    for stem, shards in members.items():
        if not MIN_FAMILY_SHARDS <= len(shards) <= MAX_FAMILY_SHARDS or not _suffixes_dense(stem, shards):
            continue
        hottest_key, hottest_wcu = max(shards, key=lambda pair: (pair[1], pair[0]))
        families.append(Family(stem, len(shards), sum(wcu for _, wcu in shards), hottest_key, hottest_wcu))
    families.sort(key=lambda family: (-family.wcu, family.stem))
    return families


def _ends_in_date(key: str) -> bool:
    return any(found.end() == len(key) for found in _DATE.finditer(key))


def _suffixes_dense(stem: str, shards: list[tuple[str, int]]) -> bool:
    """Numeric suffixes below twice their count look like shard numbers, not identifiers."""
    suffixes = [key[len(stem) :] for key, _ in shards]
    if not all(suffix.isdigit() for suffix in suffixes):
        return True  # another scheme (a caller's pattern): its suffixes are its business
    return max(int(suffix) for suffix in suffixes) < 2 * len(shards)


@dataclass(frozen=True)
class Diagnosis:
    pattern: str
    remedy: str


def classify(key: str, share: float, distinct_keys: int, index: str | None = None) -> Diagnosis | None:
    """The antipattern a hot key shows, if its name and its window's figures point to one.

    ``share``: the key's part of its table's (or index's) write units in the window;
    ``distinct_keys``: how many keys wrote in that window (at least, when the summary pruned).
    """
    shown = key_in_text(key)
    if _DATE.search(key):
        return Diagnosis(
            TIME_BUCKET,
            f"a time-bucket key sends every write of the period to one partition: suffix it ({shown}#0..N, "
            "readers query each suffix) or key by the entity and reach the period through a sharded index",
        )
    few = distinct_keys <= FEW_KEYS
    if index is not None and few and _WORD.fullmatch(key):
        return Diagnosis(
            LOW_CARDINALITY,
            "a status or type as the index key: suffix the index key attribute "
            f"({shown}#0..N) or make the index sparse (only items that must be found carry the attribute)",
        )
    if share >= SINGLE_KEY_SHARE and few:
        return Diagnosis(
            SINGLE_KEY,
            "one key takes nearly every write (a global counter, log or singleton item): shard it "
            f"({shown}#0..N, sum or merge on read), or aggregate in memory and write once a second",
        )
    if few and _WORD.fullmatch(key):
        return Diagnosis(
            LOW_CARDINALITY,
            "a status or type as the partition key: key by the entity and find items by status "
            f"through an index with a suffixed key ({shown}#0..N)",
        )
    return None
