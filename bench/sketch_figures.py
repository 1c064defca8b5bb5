"""Figures of the detector's bounded structures (`python -m bench.sketch_figures`; logged in docs/measurements.md).

* the distinct-item estimate (``items.ItemStats.distinct``): error over 300 trials at each size,
  sort keys of four naming styles;
* the largest serialized shard state the worst-case fillers of ``tests/unit/test_state_size.py``
  build (2,048-byte keys of each kind; 20 indexes, under 2,048-byte or four-attribute keys of 4-byte
  characters; item figures), against ``state.max_state_bytes``.
"""

from __future__ import annotations

import importlib
import json
import random
import statistics
import sys
from pathlib import Path

from hotkeys.detector.consumer.state import MAX_RANGES, max_state_bytes
from hotkeys.detector.domain.items import ItemStats, item_digest

TRIALS = 300
SIZES = (5, 12, 25, 60, 120, 250)


def distinct_errors() -> list[str]:
    rng = random.Random(1)
    lines = []
    for size in SIZES:
        errors = []
        for trial in range(TRIALS):
            stats = ItemStats()
            prefix = rng.choice(["item#", "2026-12-01T", "x", "user-"])
            for number in range(size):
                stats.add(item_digest(f"{prefix}{rng.choice(['', str(trial)])}{number}"), None, 1)
            errors.append(stats.distinct - size)
        lines.append(
            f"- {size} items: mean error {statistics.mean(errors):+.2f}, standard deviation "
            f"{statistics.pstdev(errors):.2f} ({100 * statistics.pstdev(errors) / size:.0f}%), "
            f"largest {max(abs(e) for e in errors)}"
        )
    return lines


def state_sizes() -> list[str]:
    # The test's own worst-case fillers (one definition), loaded by name: the suite is not part of
    # what `make lint` type-checks.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    fillers = importlib.import_module("tests.unit.test_state_size")
    fill, worst_case_keys, index_names = fillers.fill, fillers.worst_case_keys, fillers.INDEX_NAMES

    cases = {
        f"{kind} keys": fill(worst_case_keys(kind, 2000), MAX_RANGES + 40)
        for kind in ("binary", "cjk", "emoji", "control")
    }
    cases["20 indexes, binary keys"] = fill(worst_case_keys("binary", 600), MAX_RANGES + 40, indexes=index_names)
    cases["20 indexes, four-attribute keys of 4-byte characters"] = fill(
        worst_case_keys("emoji", 600),
        MAX_RANGES + 40,
        indexes=index_names,
        index_keys=fillers.multi_attribute_index_keys(600),
    )
    cases["item figures, emoji keys"] = fill(worst_case_keys("emoji", 2000), MAX_RANGES + 40, items=5)
    lines = [f"- largest state, {name}: {len(json.dumps(state.to_json())):,} bytes" for name, state in cases.items()]
    return [*lines, f"- bound (state.max_state_bytes): {max_state_bytes():,} bytes"]


def main() -> int:
    from bench.measurements import append, command_line

    lines = distinct_errors() + state_sizes()
    print("\n".join(lines))
    append(command_line("bench.sketch_figures"), lines=lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
