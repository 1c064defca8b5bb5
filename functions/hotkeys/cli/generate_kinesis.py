"""``hotkeys generate --source kinesis``: the workload's changes as Kinesis Data Streams for DynamoDB records."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from hotkeys.cli.common import UserError

if TYPE_CHECKING:
    from hotkeys.emulator.generate import Workload
    from hotkeys.emulator.kinesis import KinesisOptions

# The flags only the Kinesis source takes (their defaults are None in the parser, so a given one is seen).
KINESIS_FLAGS = {
    "format": "--format",
    "duplicates": "--duplicates",
    "duplicate_event_ids": "--duplicate-event-ids",
    "reorder": "--reorder",
    "precision": "--precision",
    "kinesis_shards": "--kinesis-shards",
}


def kinesis_options(args: argparse.Namespace) -> KinesisOptions | None:
    """The Kinesis options the flags ask for (None: ``--source dynamodb``); a flag of the other source is refused."""
    from hotkeys.emulator.kinesis import KinesisOptions, Precision

    if args.source != "kinesis":
        given = [flag for name, flag in KINESIS_FLAGS.items() if getattr(args, name) is not None]
        if given:
            raise UserError(f"{given[0]} applies to Kinesis records: add --source kinesis")
        return None
    if args.shards != 1:
        raise UserError(
            "--shards is the DynamoDB stream's shard count; Kinesis records go to --kinesis-shards N (one file)"
        )
    return KinesisOptions(
        shards=args.kinesis_shards or 1,
        duplicates=args.duplicates or 0.0,
        duplicate_event_ids=args.duplicate_event_ids or "new",
        reorder=args.reorder or 0.0,
        precision=cast(Precision, args.precision or "MICROSECOND"),
    )


def write_kinesis(workloads: Sequence[Workload], options: KinesisOptions, path: str, decoded: bool) -> int:
    """Streams the workloads (one per table, the tables sharing the stream) into one file of Kinesis records
    (``decoded``: the decoded changes, a JSON list); returns the records written."""
    from hotkeys.cli.progress import progress_bar
    from hotkeys.emulator.generate import GenerateError
    from hotkeys.emulator.io import EventWriter
    from hotkeys.emulator.kinesis import deliveries

    try:
        options.validate()
    except GenerateError as error:
        raise UserError(str(error)) from None
    folder = Path(path).parent
    if not folder.is_dir():
        raise UserError(f"--out: {str(folder)!r} is not a folder (create it first)")
    try:
        writer = EventWriter(path, None, plain_list=decoded)
        total = sum(workload.record_count() for workload in workloads) + options.duplicate_count(workloads)
        with writer, progress_bar("generating", total) as advance:
            for record in deliveries(workloads, options):
                writer.write(record.change if decoded else record.lambda_record())
                advance(1)
    except OSError as error:
        raise UserError(f"--out: cannot write {path!r}: {error.strerror}") from None
    return writer.records
