"""``hotkeys generate``'s tables: one by default, several on one Kinesis stream with ``--table`` given again.

The workload's flags (``TABLE_FLAGS``) given before the first ``--table`` are every table's; given after a
``--table``, that table's alone (a ``--hot`` or ``--attribute`` there replaces those given before the first
``--table``). So ``--table carts --hot 'cart#7:900wcu@40s' --table orders --attribute region=2`` makes a hot
key in carts only and a low-cardinality attribute in orders only, each table's changes the ones its own
command would write. The other flags (``--out``, ``--source``, the Kinesis flags) are the run's, wherever they
stand. Parsing only: the parser imports this module, so it imports nothing heavy.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hotkeys.cli.common import UserError

if TYPE_CHECKING:
    from hotkeys.emulator.generate import Workload

DEFAULT_TABLE = "orders"
# The flags that describe one table's workload (argparse destinations): a --table section may give its own.
TABLE_FLAGS = (
    "keys",
    "zipf",
    "rate",
    "duration",
    "item_bytes",
    "item_spread",
    "ttl_fraction",
    "hot",
    "attribute",
    "ttl_values",
    "large_fraction",
    "large_bytes",
    "seed",
    "start",
)


@dataclass
class TableSection:
    """One ``--table NAME`` and the workload flags given after it (before the next ``--table``)."""

    name: str
    given: dict[str, Any] = field(default_factory=dict)


class NewTable(argparse.Action):
    """``--table NAME``: a table of its own; the workload flags that follow are its."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), TableSection(str(values))])


class TableFlag(argparse.Action):
    """A workload flag: the current ``--table``'s if one was given before it, else every table's."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        sections = getattr(namespace, "tables", None)
        if sections:
            sections[-1].given[self.dest] = values
        else:
            setattr(namespace, self.dest, values)


class TableFlagAppend(argparse.Action):
    """A workload flag given once per value (``--hot``, ``--attribute``), scoped as ``TableFlag``."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        sections = getattr(namespace, "tables", None)
        if sections:
            sections[-1].given.setdefault(self.dest, []).append(values)
        else:  # (a new list: argparse's default object is shared by every parse)
            setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])


def table_arguments(args: argparse.Namespace) -> list[argparse.Namespace]:
    """Each table's arguments: the run's, with its own section's flags over them (one table, ``orders``,
    without ``--table``); several only on a Kinesis stream, each named once."""
    sections: Sequence[TableSection] = args.tables or [TableSection(DEFAULT_TABLE)]
    names = [section.name for section in sections]
    twice = next((name for number, name in enumerate(names) if name in names[:number]), None)
    if twice is not None:
        raise UserError(f"--table {twice!r} is given twice: name each table once")
    if len(sections) > 1 and args.source != "kinesis":
        raise UserError(
            "several --table share one stream only with --source kinesis: DynamoDB Streams give each table a "
            "stream of its own (generate each table's file with a command of its own)"
        )
    return [argparse.Namespace(**{**vars(args), **section.given, "table": section.name}) for section in sections]


def workloads(args: argparse.Namespace) -> list[Workload]:
    """The workload of each table the flags name (validated; a run's records bounded over every table)."""
    from hotkeys.emulator.generate import (
        MAX_RECORDS,
        GenerateError,
        InjectedHotKey,
        Workload,
        parse_attribute,
        parse_ttl_values,
    )

    made = []
    for table in table_arguments(args):
        try:
            workload = Workload(
                table=table.table,
                keys=table.keys,
                zipf=table.zipf,
                rate=table.rate,
                duration=table.duration,
                item_bytes=table.item_bytes,
                item_spread=table.item_spread,
                ttl_fraction=table.ttl_fraction,
                shards=table.shards,
                seed=table.seed,
                start=table.start,
                hot=tuple(InjectedHotKey.parse(spec, table.duration) for spec in table.hot),
                attributes=tuple(parse_attribute(spec) for spec in table.attribute),
                ttl_values=parse_ttl_values(table.ttl_values) if table.ttl_values is not None else (),
                large_fraction=table.large_fraction,
                large_bytes=table.large_bytes,
            )
            workload.validate()
        except GenerateError as error:
            raise UserError(f"{_named(table.table, args)}{error}") from None
        made.append(workload)
    records = sum(workload.record_count() for workload in made)
    if records > MAX_RECORDS:
        raise UserError(
            f"those tables are {records:,} records together, over the {MAX_RECORDS:,} one run writes: lower "
            "their --rate, --duration or --hot rates, or generate them in parts with --start"
        )
    return made


def _named(table: str, args: argparse.Namespace) -> str:
    """A table's name before its error, when the run has several."""
    return f"--table {table}: " if args.tables and len(args.tables) > 1 else ""
