"""Event files: plain JSON, or gzip-compressed JSON (``.json.gz``) for large samples.

Big files are read and written as streams: a reader yields the records of the ``Records``
array one at a time and a writer appends them, so memory does not grow with the file.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

CHUNK_CHARACTERS = 1 << 20
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()
_NUMBER_CHARACTERS = frozenset("0123456789.eE+-")


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


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"
    if compressed:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open(encoding="utf-8")


class NotAnEvent(ValueError):
    """The file is JSON, but not an object (a Lambda event is one)."""


class BadEventFile(ValueError):
    """The file is not valid JSON; the message says where, counted from the file's start."""


class EventReader:
    """The records of one event file, one at a time, and its other top-level fields once read.

    A small incremental parser of the top-level object: each value is decoded by the standard
    library's decoder as soon as the buffer holds all of it, and the ``Records`` array is
    yielded element by element. Any valid JSON layout is accepted (fields in any order,
    any whitespace). ``fields`` is complete when ``records()`` is exhausted.
    """

    def __init__(self, path: Path, chunk_characters: int = CHUNK_CHARACTERS, lists: bool = False) -> None:
        self.path = path
        self._chunk = chunk_characters
        self.fields: dict[str, Any] = {}
        self.saw_records = False
        # With ``lists``, a file that is one JSON array is read too, its elements as the records (decoded
        # Kinesis changes: ``hotkeys generate --format decoded``); ``is_list`` then says it was one.
        self._lists = lists
        self.is_list = False
        self._text = ""
        self._position = 0
        self._discarded = 0  # characters read and dropped from the buffer before _text
        self._eof = False
        self._stream: IO[str] | None = None

    def records(self) -> Iterator[Any]:
        try:
            yield from self._event()
        except json.JSONDecodeError as error:
            where = self._discarded + error.pos
            size = f" of {self._discarded + len(self._text):,}" if self._eof else ""
            message = error.msg.removesuffix(" at")
            raise BadEventFile(f"{message} at character {where:,}{size} (counted from 0)") from None

    def _event(self) -> Iterator[Any]:
        with _open_text(self.path) as self._stream:
            if self._lists and self._next_character() == "[":
                self.is_list = self.saw_records = True
                self._position += 1
                yield from self._elements()
                if self._next_character():
                    raise json.JSONDecodeError("extra data after the list", self._text, self._position)
                return
            if self._next_character() != "{":
                self._value()  # valid JSON that is not an object, or a decoding error
                raise NotAnEvent(f"{self.path} is not a JSON object")
            self._position += 1
            if self._next_character() == "}":
                self._position += 1
            else:
                yield from self._members()
            if self._next_character():
                raise json.JSONDecodeError("extra data after the event", self._text, self._position)

    def _members(self) -> Iterator[Any]:
        while True:
            name = self._value()
            if not isinstance(name, str):
                raise json.JSONDecodeError("expected a field name", self._text, self._position)
            self._expect(":")
            if name == "Records" and self._next_character() == "[":
                self.saw_records = True
                self._position += 1
                yield from self._elements()
            else:
                self.fields[name] = self._value()
            if self._separator("}"):
                return

    def _elements(self) -> Iterator[Any]:
        if self._next_character() == "]":
            self._position += 1
            return
        while True:
            yield self._value()
            if self._separator("]"):
                return

    def _separator(self, closing: str) -> bool:
        """Consumes ',' (False: more follows) or ``closing`` (True)."""
        character = self._next_character()
        if character not in (",", closing):
            raise json.JSONDecodeError(f"expected ',' or {closing!r}", self._text, self._position)
        self._position += 1
        return character == closing

    def _expect(self, character: str) -> None:
        if self._next_character() != character:
            raise json.JSONDecodeError(f"expected {character!r}", self._text, self._position)
        self._position += 1

    def _next_character(self) -> str:
        """The next non-whitespace character ('' at the end of the file), not consumed."""
        while True:
            match = _WHITESPACE.match(self._text, self._position)
            self._position = match.end() if match else self._position
            if self._position < len(self._text) or self._eof:
                return self._text[self._position : self._position + 1]
            self._fill()

    def _value(self) -> Any:
        self._next_character()
        while True:
            try:
                value, end = _decoder.raw_decode(self._text, self._position)
            except json.JSONDecodeError:
                if self._eof:
                    raise
                self._fill()
                continue
            if not self._eof and (end == len(self._text) or _cut_number(value, self._text[end])):
                self._fill()  # a number or literal may go on in the next chunk ("1" of "1.5e3")
                continue
            self._position = end
            return value

    def _fill(self) -> None:
        assert self._stream is not None
        chunk = self._stream.read(self._chunk)
        self._eof = not chunk
        self._discarded += self._position
        self._text = self._text[self._position :] + chunk
        self._position = 0


def _cut_number(value: Any, following: str) -> bool:
    """True if ``value`` is a number the decoder stopped short of (the chunk ended inside it)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and following in _NUMBER_CHARACTERS


class EventWriter:
    """Writes one Lambda event (``{"shardId": ..., "Records": [...]}``; without a shard id,
    ``{"Records": [...]}``; with ``plain_list``, a JSON array of the records) record by record, gzip if the
    name ends in ``.gz`` (mtime 0: the same records give the same bytes).

    The records go to a hidden temporary file beside ``path``, renamed to ``path`` only when the
    writer closes without an error: an interrupted run (Ctrl-C, a full disk) leaves no truncated
    event file, and a file already at ``path`` stays as it was."""

    def __init__(self, path: str | Path, shard_id: str | None, plain_list: bool = False) -> None:
        self.path = Path(path)
        self.temporary = self.path.with_name(f".{self.path.name}.partial")
        self.records = 0
        self._shard_id = shard_id
        self._plain_list = plain_list
        self._file: IO[str] | None = None
        self._raw: IO[bytes] | None = None

    def __enter__(self) -> EventWriter:
        if self.path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(self.path))
        if self.path.name.endswith(".gz"):
            self._raw = self.temporary.open("wb")
            compressed = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=6)
            self._file = io.TextIOWrapper(compressed, encoding="utf-8")
        else:
            self._file = self.temporary.open("w", encoding="utf-8")
        if self._plain_list:
            self._file.write("[")
        elif self._shard_id is None:
            self._file.write('{"Records": [')
        else:
            self._file.write('{"shardId": ' + json.dumps(self._shard_id) + ', "Records": [')
        return self

    def write(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(("\n" if not self.records else ",\n") + json.dumps(record))
        self.records += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._file is not None
        complete = False
        try:
            if kind is None:
                self._file.write("\n]\n" if self._plain_list else "\n]}\n")
            self._file.close()
            complete = kind is None
        finally:
            if self._raw is not None:  # GzipFile does not close a file object it was given
                self._raw.close()
            if complete:
                self.temporary.replace(self.path)
            else:
                self.temporary.unlink(missing_ok=True)
