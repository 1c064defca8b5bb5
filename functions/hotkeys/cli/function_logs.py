"""The function's structured logs while a CLI command runs its code (``replay``, ``redrive``)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any, cast


@contextlib.contextmanager
def function_logs(*listeners: logging.Handler) -> Iterator[None]:
    """The function's structured logs while a command runs its code: quiet unless HOTKEYS_LOG_LEVEL names
    a level, and then on stderr (in Lambda they go to stdout, which CloudWatch reads; here stdout is the
    command's, ``--json`` included). ``listeners`` see its errors whatever the level (the replay's
    reasons why records were not counted)."""
    from hotkeys.detector.observability import logger

    handler = cast("logging.StreamHandler[Any]", logger.registered_handler)  # powertools': a StreamHandler
    level, shown, stream = logger.log_level, handler.level, handler.stream
    asked = os.environ.get("HOTKEYS_LOG_LEVEL", "CRITICAL")
    wanted = logging.getLevelName(asked.upper())
    if not isinstance(wanted, int):
        print(
            f"hotkeys: HOTKEYS_LOG_LEVEL={asked} is not a level (DEBUG, INFO, WARNING or ERROR): the function's "
            "logs stay quiet",
            file=sys.stderr,
        )
        wanted = logging.CRITICAL
    logger.setLevel(min(wanted, logging.ERROR))
    handler.setLevel(wanted)
    handler.setStream(sys.stderr)
    function_log = logging.getLogger(logger.name)
    for listener in listeners:
        function_log.addHandler(listener)
    try:
        yield
    finally:
        for listener in listeners:
            function_log.removeHandler(listener)
        handler.setLevel(shown)
        handler.setStream(stream)
        logger.setLevel(level)
