"""Surviving mutants that cannot change behaviour, each with the reason (read by tools/mutants.py).

Keys are ``Mutant.ident`` (module.function: change #occurrence), as the report prints them.
"""

from __future__ import annotations

# The rules' fast skip: a key is judged in full unless its figures cannot reach the rate or share. A
# mutant that skips fewer keys (a lower floor, a larger bound) changes how much is computed, not what.
_SKIPS_FEWER = "the fast skip only passes more keys to the full judgement, which decides as before"

EQUIVALENT: dict[str, str] = {
    # rules.py
    "rules.Elsewhere: 0 -> 1 #2": (
        "NOWHERE's last_event: read only for a key an Elsewhere lists (merged_key), and NOWHERE lists "
        "none; every other Elsewhere is built with its own (desk._merged)"
    ),
    "rules.partition_limit_hot: '*' -> '/' #1": _SKIPS_FEWER + " (the floor becomes lower)",
    "rules.partition_limit_hot: 0 -> 1 #1": _SKIPS_FEWER + " (a bound one unit larger)",
    "rules.partition_limit_hot: 0 -> 1 #2": _SKIPS_FEWER + " (a bound one unit larger)",
    "rules.share_hot: 0 -> 1 #2": _SKIPS_FEWER + " (a bound one unit larger)",
    "rules.share_hot: '<=' -> '<' #1": (
        "a table with no write units in the window has no entries here (every write is at least one "
        "unit), so the loop that would divide by its total never runs"
    ),
    "rules.near: '>' -> '>=' #1": (
        "as share_hot's: a table with no write units has no entries to judge (every write is a unit or more)"
    ),
    "rules.share_hot: 1.0 -> 1.1 #1": (
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
}
