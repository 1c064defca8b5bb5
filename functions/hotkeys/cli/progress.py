"""A progress bar on stderr for long runs, only when stderr is a terminal (logs and pipes stay clean)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

Advance = Callable[[int], None]
STEP = 1000  # records between redraws: the bar costs nothing per record


@contextlib.contextmanager
def progress_bar(description: str, total: int | None, enabled: bool | None = None) -> Iterator[Advance]:
    """Yields ``advance(records)``; a no-op unless ``enabled`` (default: stderr is a terminal)."""
    if not (sys.stderr.isatty() if enabled is None else enabled):
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True, force_terminal=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        pending = 0

        def advance(records: int) -> None:
            nonlocal pending
            pending += records
            if pending >= STEP:
                bar.advance(task, pending)
                pending = 0

        yield advance
        bar.advance(task, pending)


def _ignore(_records: int) -> None:
    return None
