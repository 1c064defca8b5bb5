"""Temporarily set environment variables (the detector reads its settings and endpoints from them)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from hotkeys.detector.adapters.aws import reset_clients
from hotkeys.detector.wiring import reset_ports


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` for the block, then restore; cached AWS clients are rebuilt on both sides."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    reset_clients()
    reset_ports()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reset_clients()
        reset_ports()
