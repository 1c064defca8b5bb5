"""Runs ``hotkeys redrive``: the plan from the stack (or the flags), one run over the DLQ, its report."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from hotkeys.cli.common import UserError, aws_clients, settings_from_args
from hotkeys.cli.redrive import Counting, Readers, RedriveResult, RedriveRun, redrive_queue
from hotkeys.cli.redrive_kinesis import redrive_kinesis_entry
from hotkeys.cli.redrive_plan import (
    RedriveFlags,
    RedrivePlan,
    check_window_flag,
    give,
    plan_from_deployment,
    plan_without_stack,
    ttl_judge,
    undecided_by,
    unknown_text,
)
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.handlers.wiring import build_ports


def redrive(args: argparse.Namespace, console: Console, settings_names: tuple[str, ...], default_stack: str) -> int:
    aws = aws_clients(args)
    plan = _plan(args, aws, settings_names, default_stack)
    ports = build_ports(plan.settings, aws)
    if args.no_stack:  # the flags' window against the stored windows, before any entry is received
        check_window_flag(ports.stats, plan.settings.window_seconds, args.window_seconds, time.time())
    judge = ttl_judge(plan.settings, aws.client("dynamodb"))
    undecided = undecided_by(plan.unknown, plan.settings.archive_replicated_ttl, judge)
    counting = Counting(plan.settings, ports, ports.stats, plan.archiving, undecided)
    run = redrive_queue(
        plan.dlq_url,
        counting,
        aws.client("sqs"),
        Readers(aws.client("dynamodbstreams"), functools.partial(_kinesis_entry, aws.client("kinesis"))),
        dry_run=args.dry_run,
        keep=args.keep,
    )
    if args.json:
        print(json.dumps(run.results, indent=2))
        for line in (_unreceived(run), _spooled(run)):
            if line:
                print(f"hotkeys: {line}", file=sys.stderr)
    else:
        _show(run, console)
    if run.needs:  # as a usage error: one line on stderr, whatever the output
        print(f"hotkeys: {_kept_for_flags(run)}", file=sys.stderr)
    return run.exit_status


def _kinesis_entry(kinesis: Any, info: dict[str, Any], counting: Counting, dry_run: bool) -> RedriveResult:
    return redrive_kinesis_entry(info, counting, kinesis, dry_run)


def _plan(
    args: argparse.Namespace, aws: AwsClients, settings_names: tuple[str, ...], default_stack: str
) -> RedrivePlan:
    """The settings, DLQ and archive of the run: the stack's, or (``--no-stack``) the flags'."""
    from hotkeys.cli.deployed import DeploymentError, StackNotFound, read_deployment
    from hotkeys.cli.redrive_plan import NO_STACK_NEEDS

    flags = RedriveFlags(
        dlq_url=args.dlq_url,
        stats_table=args.stats_table,
        archive_bucket=args.archive_bucket,
        no_archive=args.no_archive,
        settings={name: getattr(args, name) for name in settings_names},
    )
    if args.no_stack:
        if not args.dlq_url or not args.stats_table:
            raise UserError(NO_STACK_NEEDS)  # before the settings, which need the stats table
        settings = settings_from_args(
            args, settings_names, stats_table_name=args.stats_table, archive_bucket_name=args.archive_bucket
        )
        return plan_without_stack(flags, settings)
    try:
        deployment = read_deployment(aws.client("cloudformation"), aws.client("lambda"), args.stack or default_stack)
    except (StackNotFound, DeploymentError) as error:
        raise UserError(str(error)) from None
    return plan_from_deployment(flags, deployment)


def _kept_for_flags(run: RedriveRun) -> str:
    kept = sum(1 for item in run.results if item.get("needs"))
    entries, them, their = ("entry", "it", "its") if kept == 1 else ("entries", "them", "their")
    return (
        f"{kept} DLQ {entries} kept (nothing of {them} counted): {their} TTL deletions wait for "
        f"{unknown_text(run.needs)}; {give(run.needs)}"
    )


def _spooled(run: RedriveRun) -> str:
    if (run.spool_moved, run.spool_empty) == (0, True):
        return ""
    return f"moved {run.spool_moved} spooled archive object(s) into S3" + (
        "" if run.spool_empty else "; S3 still refuses some: they stay spooled, run redrive again"
    )


def _unreceived(run: RedriveRun) -> str:
    drained = run.drained
    if not drained.remaining:
        return ""
    counts = drained.counts
    return (
        f"about {drained.remaining} more entries are in the DLQ (SQS counts {counts.visible} visible, "
        f"{drained.in_flight_elsewhere} received by someone else, {counts.delayed} delayed): run redrive again"
    )


def _show(run: RedriveRun, console: Console) -> None:
    # soft_wrap: a line is never broken at the console's width (160 when piped, 80 where rich takes the
    # output for a dumb terminal, the window's on a tty): each stays whole for grep and for the reader.
    def say(text: str, markup: bool = True, highlight: bool = True) -> None:
        console.print(text, soft_wrap=True, markup=markup, highlight=highlight)

    spooled = _spooled(run)
    if spooled:
        say(spooled, highlight=False)
    if not run.results and not run.drained.remaining:
        say("The DLQ is empty.")
    for item in run.results:
        where = f"{item.get('shard_id', '')} {item.get('start', '')}..{item.get('end', '')}"
        if item.get("message_id") is not None:  # (not a stream batch's entry: left in the DLQ)
            say(f"[red]not redriven[/] DLQ message {escape(str(item['message_id']))}: {escape(item['unreadable'])}")
            continue
        if item.get("unreadable"):
            say(f"[red]could no longer be read[/] {escape(where)}: {escape(item['unreadable'])}")
            continue
        if item.get("refused"):
            say(f"[red]refused[/] {escape(where)}: {escape(item['refused'])}")
            continue
        say(
            f"{where}: read {item['read']}, already counted {item['already_counted']}, counted now {item['counted']}"
            + (f", copies of counted changes {item['copies']}" if item.get("copies") else "")
            + (f", archived {item['archived']}" if item["archived"] else "")
            + (" (dry run)" if run.dry_run else ""),
            markup=False,
        )
        for bad in item["malformed"]:
            say(f"  malformed {bad['sequence_number']}: {bad['reason']}", markup=False)
    unreceived = _unreceived(run)
    if unreceived:
        say(unreceived[0].upper() + unreceived[1:] + ".", markup=False)
    if run.exit_status:
        say(f"Entries remain in the DLQ (exit status {run.exit_status}).")
