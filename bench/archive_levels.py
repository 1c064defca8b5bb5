"""CPU per record and compressed size of a TTL archive object at each gzip level (`python -m bench.archive_levels`).

The lines are the archive's own (``archive_line``) for TTL deletions of each item shape; each level's
time is the best of five compressions of the same text (CPU time), per record.
"""

from __future__ import annotations

import gzip
import sys
import time

from bench.shapes import records
from hotkeys.detector.consumer.archive import archive_line
from hotkeys.detector.domain.records import Change, ChangeKind

LEVELS = (1, 3, 6, 9)
RECORDS = 3000


def measure(shape: str) -> list[str]:
    change = Change("orders", "key", 1_796_083_200, 1, 0, ChangeKind.TTL_DELETE)
    text = ("\n".join(archive_line(change, r, "expireAt") for r in records(shape, "ttl-only", RECORDS)) + "\n").encode()
    rows = []
    for level in LEVELS:
        best = float("inf")
        for _ in range(5):
            started = time.process_time()
            body = gzip.compress(text, compresslevel=level, mtime=0)
            best = min(best, time.process_time() - started)
        rows.append(f"| {shape} | {level} | {best / RECORDS * 1e6:.1f} | {100 * len(body) / len(text):.1f}% |")
    return rows


def main() -> int:
    from bench.measurements import append, command_line

    lines = ["| items | gzip level | µs per record | compressed size |", "|---|---:|---:|---:|"]
    for shape in ("1KB-12", "100B"):
        lines += measure(shape)
    print("\n".join(lines))
    append(command_line("bench.archive_levels"), lines=lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
