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
# A series' buckets and units change together (every bump, insertion and cut touches both), so a zip of
# them never meets lists of different lengths: ``strict`` is a check that never fires.
_SAME_LENGTHS = "a series' buckets and units always have the same length: zip's strict check never fires"

# The rules' fast skip: a key is judged in full unless its figures cannot reach the rate or share. A
# mutant that skips fewer keys (a lower floor, a larger bound) changes how much is computed, not what.
_SKIPS_FEWER = "the fast skip only passes more keys to the full judgement, which decides as before"

EQUIVALENT: dict[str, str] = {
    # rules.py
    "rules.partition_limit_hot: '*' -> '/' #1": _SKIPS_FEWER + " (the floor becomes lower)",
    "rules._hot: 1.0 -> 1.1 #1": (
        "the clamp is never reached: a key's upper bound (counter + bound) is at most its summary's total, "
        "since each prune removes at least its cut (the (k+1)-th counter, dropped whole) from the summary's "
        "weight; summed over the segments, at most the table's total"
    ),
    # windows.py: the cache of printed seconds changes what formatting costs, never what it prints
    "windows.<module>: 4096 -> 4097 #1": "the cache's size: one entry more before it is cleared",
    "windows.iso_utc: 'is' -> 'is not' #1": "floats take the cache and ints format directly: the same texts",
    "windows.iso_utc: if c -> if not c #3": "floats take the cache and ints format directly: the same texts",
    "windows.iso_utc: '>=' -> '>' #1": "the cache holds one entry more before it is cleared",
    "windows.iso_utc: if c -> if not c #1": "the cache is cleared at every new second: each text is formatted again",
    # sizing.py
    "sizing.<module>: 4096 -> 4097 #1": "the name cache's size",
    "sizing._name_size: '<' -> '<=' #1": "the name cache holds one name more",
    "sizing._name_size: if c -> if not c #1": "names are cached only once the cache is full: sizes are the same",
    "sizing.number_size: 0 -> 1 #2": _EXPONENT_FIRST,
    "sizing.number_size: '<' -> '<=' #1": _EXPONENT_FIRST,
    "sizing.number_size: 0 -> 1 #3": _EXPONENT_FIRST,
    "sizing.number_size: '>=' -> '>' #1": _EXPONENT_FIRST,
    "sizing.binary_size: '//' -> '/' #1": "the length is a multiple of 4 (checked above): / 4 is exact",
    "sizing._element_size: 1 -> 2 #2": _ZERO,
    "sizing.image_size: 1 -> 2 #2": _ZERO,
    "sizing.image_size: 1 -> 2 #5": _ZERO + ' ("0.000")',
    "sizing.image_size: 'is not' -> 'is' #2": _FAST_PATH_OFF,
    "sizing.image_size: if c -> if not c #10": _FAST_PATH_OFF,
    "sizing.image_size: 'is not' -> 'is' #3": _FAST_PATH_OFF,
    "sizing.image_size: if c -> if not c #9": _FAST_PATH_OFF,
    "sizing.image_size: 'is not' -> 'is' #4": _FAST_PATH_OFF,
    "sizing.image_size: if c -> if not c #8": _FAST_PATH_OFF,
    "sizing.image_size: 'is' -> 'is not' #4": (
        _FAST_PATH_OFF + "; a map that is not a dict reaches image_size, which rejects it as value_size does"
    ),
    "sizing.image_size: if c -> if not c #6": (
        _FAST_PATH_OFF + "; a map that is not a dict reaches image_size, which rejects it as value_size does"
    ),
    "sizing.image_sizes: '+=' -> '-=' #1": (
        "the count of shared attributes only decides whether to look for added ones; looking finds none extra"
    ),
    "sizing.image_sizes: '<' -> '<=' #1": (
        "the count of shared attributes only decides whether to look for added ones; looking finds none extra"
    ),
    # indexes.py
    "indexes.IndexSpec: False -> True #3": "a derived field compared too: equal whenever the fields it is made of are",
    "indexes.IndexSpec: False -> True #5": "a derived field compared too: equal whenever the fields it is made of are",
    "indexes.IndexSpec: False -> True #7": "a derived field compared too: equal whenever the fields it is made of are",
    "indexes.index_writes: 'and' -> 'or' #4": "an assert that holds either way: both images are present there",
    # summary.py
    "summary.<module>: if c -> if not c #1": (
        "the settings type is imported for annotations only: importing it at run time changes nothing"
    ),
    "summary.Entry.bump: '<' -> '<=' #1": "assigns the first second it already holds",
    "summary.Entry.bump: '>' -> '>=' #1": "assigns the peak it already holds",
    "summary.Entry.bump: '>' -> '>=' #2": "the equal bucket returned above",
    "summary.Entry.bump: '>' -> '>=' #3": "assigns the peak it already holds",
    "summary.Entry._add_earlier: 1 -> 2 #1": (
        "bump sends only writes to a bucket before the latest here, so the search's first step (past the "
        "latest bucket) is the same whether it starts there or one before"
    ),
    "summary.Entry.series: True -> False #1": _SAME_LENGTHS,
    "summary.merge_entries: True -> False #1": _SAME_LENGTHS,
    "summary.encode_entries: True -> False #1": _SAME_LENGTHS,
    "summary.merge_entries: max() -> min() #1": (
        "a series never drops its heaviest bucket (the lightest earlier one gives way), so the merged "
        "buckets always show each part's own peak"
    ),
    "summary.Summary: False -> True #2": "a summary's repr: read by nothing but a person debugging",
    "summary.Summary: False -> True #4": "a summary's repr: read by nothing but a person debugging",
    "summary.allotment: '//' -> '/' #1": (
        "the budget is only compared with whole byte counts and floor-divided: n > x and n > floor(x) agree"
    ),
    "summary.keep_floor: '//' -> '/' #1": (
        "only prune reads it, comparing whole key counts with it: n <= x and n <= floor(x) agree"
    ),
    "summary.prune: '<=' -> '<' #1": (
        "never reached with exactly the floor's keys: they fit the budget by keep_floor's definition and "
        "are fewer than twice the capacity, so no count or admission prunes them"
    ),
    "summary.prune: 0 -> 1 #1": "the same unreachable return as the line above",
    "summary.prune: '//' -> '/' #1": "half of a whole byte budget, compared with whole byte counts",
    "summary.compact: '<=' -> '<' #1": "the general path keeps every entry too, with a bound of 0",
    "summary.<module>: 7 -> 8 #1": _MARK,
    "summary.<module>: '-x' -> 'x' #1": _MARK,
    "summary.encode_entries: 6 -> 7 #1": "the default zlib level: the same bytes decode to the same entries",
    "summary.pack: 6 -> 7 #1": "the default zlib level: the same bytes decode to the same entries",
    # Constants whose +1 keeps every promise (estimates stay at or above the encoding, budgets stay
    # within the state and the item): tuning, not rules
    "summary.<module>: 200 -> 201 #1": "the default capacity: callers pass Settings.summary_capacity",
    "summary.<module>: 80 -> 81 #1": "the per-entry estimate one byte higher still covers the encoding",
    "summary.<module>: 24 -> 25 #1": "the per-pair estimate one byte higher still covers the encoding",
    "summary.<module>: 330000 -> 330001 #1": "a budget one byte larger still fits the state and the item",
}
