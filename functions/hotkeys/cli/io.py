"""Event files: plain JSON, or gzip-compressed JSON (``.json.gz``) for large samples."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def read_event_file(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def write_event_file(path: str | Path, event: dict[str, Any]) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(event, indent=1 if len(event.get("Records", [])) <= 200 else None)
    if target.name.endswith(".gz"):
        # mtime=0 keeps the bytes identical for the same content (reproducible files).
        target.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        target.write_text(text + "\n")
