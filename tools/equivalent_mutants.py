"""Surviving mutants that cannot change behaviour, each with the reason (read by tools/mutants.py).

Keys are ``Mutant.ident`` (module.function: change #occurrence), as the report prints them.
"""

from __future__ import annotations

# sizing.py's fast paths: each size an attribute the common way, or fall through to value_size, which
# sizes every value by the rules. A mutant that turns a fast path off (or sends a value past it) gives
# the same size by the general path.
_FAST_PATH_OFF = "a fast path is bypassed and value_size sizes the value by the same rules"
# Zero's digits: "0" has no significant digit and sizes as one (1 + 1) // 2 + 1 == 2; as two, (2 + 1)
# // 2 + 1 is also 2.
_ZERO = "zero's significant digits counted as 2 instead of 1 give the same size: (1+1)//2+1 == (2+1)//2+1 == 2"
# An exponent mark at the first position leaves no digits: both readings reject the number.
_EXPONENT_FIRST = 'only differs for a mark at position 0 ("e5"), which both readings reject as not a number'

# summary.py's encoding mark: written and read through the same constant, so a summary decodes as it
# was encoded; an earlier layout is refused whatever the mark's value, as long as it differs from theirs.
_MARK = "the current layout's mark, written and read through the same constant: a summary decodes as encoded"
# A series' buckets and units change together (every bump, insertion and cut touches both; a head's are
# decoded from the pairs they were written as), so a zip of them never meets lists of different lengths:
# ``strict`` is a check that never fires (summary.py's zips, and verdicts.recent_rate's over the heads).
_SAME_LENGTHS = "a series' buckets and units always have the same length: zip's strict check never fires"
# A key's latest event second is unknown for an entry read from an encoding made before it was kept. In a
# merge, 0 stands in where there is no second yet (before the first part) or an unknown one; beside a known
# second (an epoch second) max drops it, and an unknown one makes the merged second unknown anyway.
_UNKNOWN_LATEST = (
    "max drops it beside a known latest second (an epoch second, far above 1), and an unknown one makes the "
    "merged second unknown (None) whatever the number"
)
# In the encoding, unknown is any number below the latest bucket's start (an epoch second): read back as None.
_UNKNOWN_WRITTEN = (
    "unknown is written as a number below every bucket start (an epoch second): -2 or 1 reads back as unknown "
    "as -1 does"
)

# The rules' fast skip: a key is judged in full unless its figures cannot reach the rate or share. A
# mutant that skips fewer keys (a lower floor, a larger bound) changes how much is computed, not what.
_SKIPS_FEWER = "the fast skip only passes more keys to the full judgement, which decides as before"

# A resolution's last window to look at is the latest that has ended: a later one is refused by settled
# (the lag, never negative, is not younger than its end), which returns None as the loop's end does.
_NOT_ENDED = (
    "the windows it adds have not ended: settled refuses them, and _resolution returns None there as after its loop"
)
# Merged's key-schema defaults are taken only by Look.figures' empty window, whose figures are read for
# the resolve level (rules.cooled, rules.level), never diagnosed.
_UNREAD_WINDOW = "only an unread window's figures take it, and they list no key: its level is 0 whatever the rest says"
# A dataclass field already compared through the fields it is derived from.
_DERIVED = "a derived field compared too: equal whenever the fields it is made of are"

EQUIVALENT: dict[str, str] = {
    # rate.py
    "rate.<module>: `if TYPE_CHECKING` if c -> if not c": (
        "the settings and entry types are imported for annotations only (neither module imports this one): "
        "importing them at run time changes nothing"
    ),
    "rate.<module>: `_EPSILON = 1e-09` 1e-09 -> 1.1e-09": (
        "a tolerance for float error (under 1e-9 at any rate a key writes): a figure is whole write units over "
        "whole seconds (and a whole limit), on a tenth or at least 1/(seconds x limit) from one, far over 1.1e-9"
    ),
    # rules.py
    "rules.HotKey: `measured: bool = True` True -> False": (
        "every HotKey the detector makes is rules._hot's, which always says whether it is measured: the default "
        "is taken only by HotKeys written by hand (tests)"
    ),
    "rules.partition_limit_hot: `floor = alert_rate(settings) * span ⟨alert_rate(settings) * span⟩` '*' -> '/'": _SKIPS_FEWER
    + " (the floor becomes lower)",
    "rules._hot: `return HotKey(table=figures.table, index=figures.index, key=…bdd09952` 1.0 -> 1.1": (
        "the clamp is never reached: a key's upper bound (counter + bound) is at most its summary's total, "
        "since each prune removes at least its cut (the (k+1)-th counter, dropped whole) from the summary's "
        "weight; summed over the segments, at most the table's total"
    ),
    # verdicts.py
    "verdicts.Merged: `has_sort_key: bool = False` False -> True": _UNREAD_WINDOW,
    "verdicts.Merged: `has_local_indexes: bool = False` False -> True": _UNREAD_WINDOW,
    "verdicts.Look.figures: `return Merged(self.table, index, window, window, {}, 0, {}, False)` 0 -> 1": _UNREAD_WINDOW,
    "verdicts.Look.figures: `return Merged(self.table, index, window, window, {}, 0, {}, False)` False -> True": _UNREAD_WINDOW,
    "verdicts.merge: `entries, _total = summary.merge(((part.entries, part.pruned)…f5e78c02` False -> True": (
        "a key found in one head only is copied instead of shared: the same figures (neither is changed after)"
    ),
    "verdicts.merge: `entries, _total = summary.merge(((part.entries, part.pruned)…f5e78c02 ⟨summary.merge(((part.entries, part.prune⟩` copy= dropped": (
        "a key found in one head only is copied (the default) instead of shared: the same figures"
    ),
    "verdicts.Look.settled: `if done is not None and done.ended and (done.latest_window <= window) ⟨done.latest_window <= window⟩` '<=' -> '<'": (
        "an ended shard has finished its last window, so at that window the check below passes it too"
    ),
    "verdicts._resolution: `latest = int(look.now) - int(look.now) % seconds - seconds ⟨int(look.now) - int(look.now) % seconds⟩` '-' -> '+'": _NOT_ENDED,
    "verdicts._resolution: `latest = int(look.now) - int(look.now) % seconds - seconds ⟨int(look.now) - int(look.now) % seconds ⟩` '-' -> '+'": _NOT_ENDED,
    "verdicts.recent_rate: `for … in zip(entry.buckets, entry.units, strict=True)` True -> False": _SAME_LENGTHS,
    "verdicts.recent_rate: `for … in zip(entry.buckets, entry.units, strict=True) ⟨zip(entry.buckets, entry.units, strict=T⟩` strict= dropped": _SAME_LENGTHS,
    "verdicts._resolution: `for … in range(start, latest + 1, seconds)` 1 -> 2": (
        "latest and start are window starts, a window apart or more: up to latest + 2 are the same windows"
    ),
    # judge.py
    "judge.Judge._look_at: `found = self._heads.latest_window(table, layout.most_since(0))` 0 -> 1": (
        "bucket counts change only at window starts, never at second 1: the most in force from 0 and from 1 agree"
    ),
    "judge.Judge._look_at: `memory.incidents = {**{name: stored for name, stored in memo…434a0b48` 0 -> 1 #3": (
        "only resolved incidents reach it, and incidents.resolved always sets their window: the fallback is never read"
    ),
    "judge.Judge._look_at: `memory.incidents = {**{name: stored for name, stored in memo…434a0b48 ⟨(stored[0].resolved_window or 0) >= firs⟩` '>=' -> '>'": (
        "resolved on the first window read: no hot window before it is read, so remembered or not, the same "
        "hot windows (after it) start an incident"
    ),
    "judge.Judge._look_at: `memory.incidents = {**{name: stored for name, stored in memo…434a0b48 ⟨not stored[0].firing and (stored[0].reso⟩` 'and' -> 'or'": (
        "it also remembers resolved incidents older than the first window read: decide starts one only on hot "
        "windows after its resolution, which every window read is, so they count as none (firing ones still go)"
    ),
    "judge.Judge._look_at: `windows = {**{window: found for window, found in memory.kept…6aef5bef ⟨first <= window < unkept⟩` '<' -> '<='": (
        "unkept is the first window not kept (or one past the latest, where nothing is kept): never in kept"
    ),
    "judge.Judge._apply: `return False` False -> True #3": (
        "a resend decided again in the same look: a message that went out leaves nothing owed; one sent but not "
        "confirmed is never sent twice (the container remembers it), only confirmed once more; a refusal raises first"
    ),
    "judge.Judge._apply: `return False` False -> True": (
        "deciding again on the same look finds nothing more: the raised peak is already the incident's, and the "
        "message and resolution checks give what they gave on it"
    ),
    # windows.py: the cache of printed seconds changes what formatting costs, never what it prints
    "windows.<module>: `_ISO_CACHE_LIMIT = 4096` 4096 -> 4097": "the cache's size: one entry more before it is cleared",
    "windows.iso_utc: `if type(epoch_seconds) is int ⟨type(epoch_seconds) is int⟩` 'is' -> 'is not'": "floats take the cache and ints format directly: the same texts",
    "windows.iso_utc: `if type(epoch_seconds) is int` if c -> if not c": "floats take the cache and ints format directly: the same texts",
    "windows.iso_utc: `if len(_iso_texts) >= _ISO_CACHE_LIMIT ⟨len(_iso_texts) >= _ISO_CACHE_LIMIT⟩` '>=' -> '>'": "the cache holds one entry more before it is cleared",
    "windows.iso_utc: `if len(_iso_texts) >= _ISO_CACHE_LIMIT` if c -> if not c": "the cache is cleared at every new second: each text is formatted again",
    # sizing.py
    "sizing.<module>: `_NAME_CACHE_LIMIT = 4096` 4096 -> 4097": "the name cache's size",
    "sizing._name_size: `if len(_name_sizes) < _NAME_CACHE_LIMIT ⟨len(_name_sizes) < _NAME_CACHE_LIMIT⟩` '<' -> '<='": "the name cache holds one name more",
    "sizing._name_size: `if len(_name_sizes) < _NAME_CACHE_LIMIT` if c -> if not c": "names are cached only once the cache is full: sizes are the same",
    "sizing.number_size: `if exponent_at < 0` 0 -> 1": _EXPONENT_FIRST,
    "sizing.number_size: `if exponent_at < 0 ⟨exponent_at < 0⟩` '<' -> '<='": _EXPONENT_FIRST,
    "sizing.number_size: `if exponent_at >= 0` 0 -> 1": _EXPONENT_FIRST,
    "sizing.number_size: `if exponent_at >= 0 ⟨exponent_at >= 0⟩` '>=' -> '>'": _EXPONENT_FIRST,
    "sizing.binary_size: `return length * 3 // 4 - padding ⟨length * 3 // 4⟩` '//' -> '/'": "the length is a multiple of 4 (checked above): / 4 is exact",
    "sizing._element_size: `significant = len(raw.strip('0')) or 1` 1 -> 2": _ZERO,
    "sizing.image_size: `significant = len(raw.strip('0')) or 1` 1 -> 2": _ZERO,
    "sizing.image_size: `significant = len(digits.strip('0')) or 1` 1 -> 2": _ZERO + ' ("0.000")',
    "sizing.number_size: `if exponent_at >= 0 or len(digits) > MAX_NUMBER_DIGITS` 0 -> 1": _EXPONENT_FIRST,
    "sizing.number_size: `if exponent_at >= 0 or len(digits) > MAX_NUMBER_DIGITS ⟨exponent_at >= 0⟩` '>=' -> '>'": _EXPONENT_FIRST,
    "sizing.number_size: `if exponent_at >= 0 or len(digits) > MAX_NUMBER_DIGITS ⟨len(digits) > MAX_NUMBER_DIGITS⟩` '>' -> '>='": (
        "a number of exactly 38 digits and no exponent has its magnitude checked as well, which it passes (under 1E+38)"
    ),
    "sizing._element_size: `if type(raw) is str and raw.isdigit() and raw.isascii() and …ecd9ae26 ⟨len(raw) <= MAX_NUMBER_DIGITS⟩` '<=' -> '<'": _FAST_PATH_OFF,
    "sizing.image_size: `if raw.isdigit() and raw.isascii() and (len(raw) <= MAX_NUMBER_DIGITS) ⟨len(raw) <= MAX_NUMBER_DIGITS⟩` '<=' -> '<'": _FAST_PATH_OFF,
    "sizing.image_size: `if dot and digits.isdigit() and digits.isascii() and (len(di…f6f3ef4c ⟨len(digits) <= MAX_NUMBER_DIGITS⟩` '<=' -> '<'": _FAST_PATH_OFF,
    "sizing.image_size: `if raw is not None and type(raw) is str ⟨raw is not None⟩` 'is not' -> 'is'": _FAST_PATH_OFF,
    "sizing.image_size: `if raw is None ⟨raw is None⟩` 'is' -> 'is not'": _FAST_PATH_OFF,
    "sizing.image_size: `if raw is None` if c -> if not c": _FAST_PATH_OFF,
    "sizing.image_size: `if raw is not None and type(raw) is dict ⟨raw is not None⟩` 'is not' -> 'is'": _FAST_PATH_OFF,
    "sizing.image_size: `if raw is not None and type(raw) is dict ⟨type(raw) is dict⟩` 'is' -> 'is not'": (
        _FAST_PATH_OFF + "; a map that is not a dict reaches image_size, which rejects it as value_size does"
    ),
    "sizing.image_size: `if raw is not None and type(raw) is dict ⟨raw is not None and type(raw) is dict⟩` 'and' -> 'or'": (
        _FAST_PATH_OFF + "; a map that is not a dict reaches image_size, which rejects it as value_size does"
    ),
    "sizing.image_sizes: `shared += 1` '+=' -> '-='": (
        "the count of shared attributes only decides whether to look for added ones; looking finds none extra"
    ),
    "sizing.image_sizes: `if shared < len(new) ⟨shared < len(new)⟩` '<' -> '<='": (
        "the count of shared attributes only decides whether to look for added ones; looking finds none extra"
    ),
    # indexes.py
    "indexes.IndexSpec: `key_attributes: tuple[str, ...] = field(init=False, compare=False)` False -> True #2": _DERIVED,
    "indexes.IndexSpec: `entry_attributes: frozenset[str] = field(init=False, compare=False)` False -> True #2": _DERIVED,
    "indexes.IndexSpec: `typed_keys: tuple[tuple[str, str | None], ...] = field(init=…b14057c8` False -> True #2": _DERIVED,
    "indexes.IndexSpec: `key_attributes: tuple[str, ...] = field(init=False, compare=False) ⟨field(init=False, compare=False)⟩` compare= dropped": _DERIVED,
    "indexes.IndexSpec: `entry_attributes: frozenset[str] = field(init=False, compare=False) ⟨field(init=False, compare=False)⟩` compare= dropped": _DERIVED,
    "indexes.IndexSpec: `typed_keys: tuple[tuple[str, str | None], ...] = field(init=…b14057c8 ⟨field(init=False, compare=False)⟩` compare= dropped": _DERIVED,
    "indexes.index_writes: `assert old is not None and new is not None ⟨old is not None and new is not None⟩` 'and' -> 'or'": "an assert that holds either way: both images are present there",
    # summary.py
    "summary.<module>: `if TYPE_CHECKING` if c -> if not c": (
        "the settings type is imported for annotations only: importing it at run time changes nothing"
    ),
    "summary.Entry.bump: `if event_time < self.first_seen ⟨event_time < self.first_seen⟩` '<' -> '<='": "assigns the first second it already holds",
    "summary.Entry.bump: `if total > self.peak ⟨total > self.peak⟩` '>' -> '>='": "assigns the peak it already holds",
    "summary.Entry.bump: `if bucket > latest ⟨bucket > latest⟩` '>' -> '>='": "the equal bucket returned above",
    "summary.Entry.bump: `if wcu > self.peak ⟨wcu > self.peak⟩` '>' -> '>='": "assigns the peak it already holds",
    "summary.Entry.bump: `if self.last_seen is not None and event_time > self.last_seen ⟨event_time > self.last_seen⟩` '>' -> '>='": (
        "assigns the latest second it already holds"
    ),
    "summary.Entry._add_earlier: `position = len(self.buckets) - 1` 1 -> 2": (
        "bump sends only writes to a bucket before the latest here, so the search's first step (past the "
        "latest bucket) is the same whether it starts there or one before"
    ),
    "summary.Entry.series: `return dict(zip(self.buckets, self.units, strict=True))` True -> False": _SAME_LENGTHS,
    "summary.merge_entries: `for … in zip(entry.buckets, entry.units, strict=True)` True -> False": _SAME_LENGTHS,
    "summary.encode_entries: `for … in zip(buckets, units, strict=True)` True -> False": _SAME_LENGTHS,
    "summary.Entry.series: `return dict(zip(self.buckets, self.units, strict=True)) ⟨zip(self.buckets, self.units, strict=Tru⟩` strict= dropped": _SAME_LENGTHS,
    "summary.merge_entries: `for … in zip(entry.buckets, entry.units, strict=True) ⟨zip(entry.buckets, entry.units, strict=T⟩` strict= dropped": _SAME_LENGTHS,
    "summary.encode_entries: `for … in zip(buckets, units, strict=True) ⟨zip(buckets, units, strict=True)⟩` strict= dropped": _SAME_LENGTHS,
    "summary.merge_entries: `last_seen = max(last_seen or 0, entry.last_seen or 0)` 0 -> 1": _UNKNOWN_LATEST,
    "summary.merge_entries: `last_seen = max(last_seen or 0, entry.last_seen or 0)` 0 -> 1 #2": _UNKNOWN_LATEST,
    "summary.encode_entries: `last = entry.last_seen if entry.last_seen is not None else -1` 1 -> 2": _UNKNOWN_WRITTEN,
    "summary.encode_entries: `last = entry.last_seen if entry.last_seen is not None else -1 ⟨-1⟩` '-x' -> 'x'": (
        _UNKNOWN_WRITTEN
    ),
    "summary.merge_entries: `peak = max(peak, entry.peak) ⟨max(peak, entry.peak)⟩` max() -> min()": (
        "a series never drops its heaviest bucket (the lightest earlier one gives way), so the merged "
        "buckets always show each part's own peak"
    ),
    "summary.Summary: `max_bytes: int = field(default=MAX_SUMMARY_BYTES, compare=Fa…0f35c448` False -> True #2": "a summary's repr: read by nothing but a person debugging",
    "summary.Summary: `max_bytes: int = field(default=MAX_SUMMARY_BYTES, compare=Fa…0f35c448 ⟨field(default=MAX_SUMMARY_BYTES, compare⟩` repr= dropped": "a summary's repr: read by nothing but a person debugging",
    "summary.Summary: `used_bytes: int = field(default=0, compare=False, repr=False) ⟨field(default=0, compare=False, repr=Fal⟩` repr= dropped": "a summary's repr: read by nothing but a person debugging",
    "summary.Summary: `used_bytes: int = field(default=0, compare=False, repr=False)` False -> True #2": "a summary's repr: read by nothing but a person debugging",
    "summary.allotment: `return MAX_SUMMARY_BYTES // max(1, summaries) ⟨MAX_SUMMARY_BYTES // max(1, summaries)⟩` '//' -> '/'": (
        "the budget is only compared with whole byte counts and floor-divided: n > x and n > floor(x) agree"
    ),
    "summary.keep_floor: `return min(MIN_KEEP, max(1, max_bytes // MAX_ENTRY_BYTES - 1)) ⟨max_bytes // MAX_ENTRY_BYTES⟩` '//' -> '/'": (
        "only prune reads it, comparing whole key counts with it: n <= x and n <= floor(x) agree"
    ),
    "summary.prune: `if len(entries) <= floor ⟨len(entries) <= floor⟩` '<=' -> '<'": (
        "never reached with exactly the floor's keys: they fit the budget by keep_floor's definition and "
        "are fewer than twice the capacity, so no count or admission prunes them"
    ),
    "summary.prune: `return 0` 0 -> 1": "the same unreachable return as the line above",
    "summary.prune: `target = max_bytes // 2 ⟨max_bytes // 2⟩` '//' -> '/'": "half of a whole byte budget, compared with whole byte counts",
    "summary.compact: `if len(entries) <= max_entries and max_bytes is None ⟨len(entries) <= max_entries⟩` '<=' -> '<'": "the general path keeps every entry too, with a bound of 0",
    "summary.<module>: `ENCODING_MARK = -7` 7 -> 8": _MARK,
    "summary.<module>: `ENCODING_MARK = -7 ⟨-7⟩` '-x' -> 'x'": _MARK,
    "summary.encode_entries: `def encode_entries(entries: Mapping[str, Entry], level: int=…36a6bd01` 6 -> 7": "the default zlib level: the same bytes decode to the same entries",
    "summary.pack: `def pack(summary: Summary, level: int=6, text: bool=False) -…37c7ce6e` 6 -> 7": "the default zlib level: the same bytes decode to the same entries",
    # Constants whose +1 keeps every promise (estimates stay at or above the encoding, budgets stay
    # within the state and the item): tuning, not rules
    "summary.<module>: `DEFAULT_CAPACITY = 200` 200 -> 201": "the default capacity: callers pass Settings.summary_capacity",
    "summary.<module>: `ENTRY_OVERHEAD = 80` 80 -> 81": "the per-entry estimate one byte higher still covers the encoding",
    "summary.<module>: `SERIES_PAIR_BYTES = 24` 24 -> 25": "the per-pair estimate one byte higher still covers the encoding",
    "summary.<module>: `MAX_SUMMARY_BYTES = 330000` 330000 -> 330001": "a budget one byte larger still fits the state and the item",
}
