"""The ``hotkeys`` command line's arguments: one builder per command, each declaring its flags in the
order its ``--help`` lists them, with the settings each command takes and its examples."""

from __future__ import annotations

import argparse
from typing import Any

from hotkeys.cli.common import (
    OneLineParser,
    add_aws_flags,
    add_setting_flags,
    at_least,
    between,
    iso_time,
    number,
)
from hotkeys.cli.generate_tables import NewTable, TableFlag, TableFlagAppend
from hotkeys.deployment import JUDGE_MEMORY_MB
from hotkeys.detector.config import OPTIONS

# The settings each command that runs the detector's code takes, as the function's own flags.
REPLAY_SETTINGS = tuple(option.name for option in OPTIONS if option.cli_flag)
WATCH_SETTINGS = (
    "window_seconds",
    "partition_wcu_limit",
    "alert_threshold",
    "alert_min_span_seconds",
    "summary_capacity",
    "partition_key_attribute",
    "count_indexes",
    "what_if_indexes",
    "what_if_keys",
)
REDRIVE_SETTINGS = (
    "window_seconds",
    "summary_capacity",
    "partition_key_attribute",
    "count_indexes",
    "what_if_indexes",
    "what_if_keys",
    "archive_prefix",
    "archive_replicated_ttl",
    "ttl_attribute",
)
# What --no-stack cannot read: a range holding a TTL deletion whose handling depends on it waits for the flag.
REDRIVE_NOTES = {
    "archive_prefix": "with --no-stack and --archive-bucket, TTL deletions wait for it",
    "archive_replicated_ttl": "with --no-stack, TTL deletions replicated from another region wait for true or false",
}
TOP_SETTINGS = ("partition_wcu_limit", "alert_threshold")
DEFAULT_STACK = "HotKeyDetector"

EXAMPLES_TOP = """examples:
  hotkeys top --stats-table hotkeys-stats
  hotkeys top --stats-table hotkeys-stats --table orders --last 5 --limit 20
  hotkeys top --stats-table hotkeys-stats --table orders --index by-status
  hotkeys top --stats-table hotkeys-stats --since 2026-11-30T10:00:00Z --json
"""
# The function's structured logs, quiet in the commands that run its code unless this names a level.
LOG_LEVEL_HELP = """environment:
  HOTKEYS_LOG_LEVEL=DEBUG|INFO|WARNING|ERROR  also print the function's own JSON logs (on stderr,
                                              apart from the command's output; default: none, the
                                              command reports what they say)
"""
EXAMPLES_REPLAY = (
    """examples (from the repository's root: events/ holds the samples):
  hotkeys replay events/hot-key-burst.json.gz
  hotkeys replay events/*.json events/*.json.gz --limit 3
  hotkeys replay events/sharded-keys.json.gz --json
  hotkeys replay events/mixed-traffic.json --report report.html
  hotkeys replay events/hot-key-burst.json.gz --endpoint-url http://127.0.0.1:5000
exit status: 0, or 1 when none of the records could be counted, 2 on a usage error
"""
    + LOG_LEVEL_HELP
)


EXAMPLES_WATCH = """examples:
  hotkeys watch --table orders
  hotkeys watch --table orders --from trim-horizon --once --json
  hotkeys watch --table orders --endpoint-url http://127.0.0.1:5000 --duration 60
"""
EXAMPLES_REDRIVE = (
    """examples:
  hotkeys redrive --stack HotKeyDetector --dry-run
  hotkeys redrive --stack HotKeyDetector --region eu-west-1 --json
  hotkeys redrive --no-stack --dlq-url URL --stats-table NAME --window-seconds 60 \\
    --archive-bucket BUCKET --archive-prefix ttl-archive/ --archive-replicated-ttl false
the deployed function's settings (window, key attribute, archive, ...) are read from the stack;
a flag that disagrees with them is refused. An entry of a DynamoDB stream (DDBStreamBatchInfo) is
re-read from the stream, one of a Kinesis stream (KinesisBatchInfo) from its Kinesis shard, skipping
the copies of changes already counted (docs/kinesis.md). With --no-stack, a range holding TTL deletions whose
handling the flags leave open (--archive-bucket or --no-archive, --archive-prefix,
--archive-replicated-ttl) stays in the DLQ, naming the flags to give
exit status: 0 when the DLQ is done, 1 while entries remain (run again), 2 on a usage error or
when entries wait for flags
"""
    + LOG_LEVEL_HELP
)
EXAMPLES_COST = """examples:
  hotkeys cost --writes-per-second 10000
  hotkeys cost --writes-per-second 100 --lean
  hotkeys cost --writes-per-second 2500 --avg-item-kb 4 --tables 3 --reads-per-second 20000 --json
  hotkeys cost --writes-per-second 1000 --source kinesis --kinesis-shards 8
  hotkeys cost --writes-per-second 1000 --source kinesis --stream-made-by-stack --enhanced-fan-out
"""
EXAMPLES_DOCTOR = """examples:
  hotkeys doctor --stack HotKeyDetector
  hotkeys doctor --stack HotKeyDetector --region eu-west-1 --json
it checks each table's stream (or, in a Kinesis mode, the Kinesis stream and its mapping), warns when a
table's DynamoDB stream already has two other readers (then read Kinesis Data Streams: docs/kinesis.md),
and checks the function, its access, the alerts and the stats table
exit status: 0 when every check passes (warnings allowed), 1 when one fails, 2 on a usage error
"""
EXAMPLES_GENERATE = """examples:
  hotkeys generate --out zipf.json --keys 100000 --rate 200 --duration 300
  hotkeys generate --out burst.json.gz --rate 10 --hot 'event#42:900wcu@30s+20s'
  hotkeys generate --out load.json --shards 4 --ttl-fraction 0.05 --seed 7
  hotkeys generate --out gsi.json --attribute region=4 --attribute customer=100000
  hotkeys generate --out health.json --ttl-values seconds=0.9,milliseconds=0.1 --large-fraction 0.01
  hotkeys generate --out kds.json.gz --source kinesis --duplicates 0.05 --reorder 10 --kinesis-shards 3
  hotkeys generate --out changes.json --source kinesis --format decoded --precision MILLISECOND
  hotkeys generate --out shared.json --source kinesis --table carts --hot 'cart#7:900wcu@30s' \\
      --table orders --attribute region=2
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="hotkeys", description="Find the DynamoDB partition keys about to throttle.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    # (in this order in --help and in a wrong command's message)
    for add in (_add_top, _add_replay, _add_watch, _add_redrive, _add_cost, _add_doctor, _add_generate):
        add(commands)
    return parser


def _add_top(commands: Any) -> None:
    top = _command(
        commands,
        "top",
        "hottest partition keys per window (the tables' and their indexes'), from the stats table; then the "
        "write-sharded key families and the keys DynamoDB throttled (Contributor Insights, where it is on)",
        EXAMPLES_TOP,
    )
    top.add_argument("--stats-table", required=True, help="the detector's stats table (stack output StatsTableName)")
    top.add_argument("--table", help="only this source table")
    top.add_argument(
        "--index",
        metavar="NAME",
        default="all",
        help="whose partitions: 'all' (default: the table's, every counted global secondary index's and every "
        "what-if proposal's, hottest first), 'table' (the table's only), 'real' (the table's and its GSIs'), "
        "'proposed' (the proposals' only) or one index's name (a proposal's: 'by-status (proposed)')",
    )
    when = top.add_mutually_exclusive_group()
    when.add_argument("--since", help="windows starting at or after this ISO 8601 time (UTC if no zone)")
    when.add_argument(
        "--last",
        type=at_least(1),
        help="the last N windows (default: those of the 15 minutes up to the latest one; of the day with --table)",
    )
    top.add_argument("--limit", type=at_least(1), default=10, help="at most K rows (default 10)")
    add_setting_flags(top, TOP_SETTINGS)
    _add_common(top)


def _add_replay(commands: Any) -> None:
    replay = _command(commands, "replay", "run the real handler over event files, locally", EXAMPLES_REPLAY)
    replay.add_argument(
        "event_files",
        nargs="+",
        metavar="EVENT_FILE",
        help="Lambda DynamoDB-stream event JSON, plain or gzipped (- reads standard input)",
    )
    replay.add_argument("--limit", type=at_least(1), default=5, help="keys shown per window (default 5)")
    replay.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write an HTML heat-map report (it loads plotly's script from a file written beside it: "
        "move or send the two together)",
    )
    add_setting_flags(replay.add_argument_group("the function's settings (as deployed with -c ...)"), REPLAY_SETTINGS)
    _add_common(replay)


def _add_watch(commands: Any) -> None:
    watch = _command(commands, "watch", "live top keys of a table's stream, read from here", EXAMPLES_WATCH)
    watch.add_argument("--table", required=True, help="the table whose stream to read")
    watch.add_argument(
        "--from",
        dest="start",
        choices=["latest", "trim-horizon"],
        default="latest",
        help="start at new records (default) or at the oldest the stream keeps (24 h)",
    )
    watch.add_argument("--interval", type=number(0, above=True), default=2.0, help="seconds between polls (default 2)")
    watch.add_argument("--duration", type=number(0), default=0, help="stop after this many seconds (default: Ctrl-C)")
    watch.add_argument("--once", action="store_true", help="read until caught up, print once, exit")
    watch.add_argument("--limit", type=at_least(1), default=10, help="rows shown (default 10)")
    add_setting_flags(watch, WATCH_SETTINGS)
    _add_common(watch)


def _add_redrive(commands: Any) -> None:
    redrive = _command(commands, "redrive", "re-read the stream ranges in the DLQ and count them", EXAMPLES_REDRIVE)
    source = redrive.add_mutually_exclusive_group()
    source.add_argument(
        "--stack", help="the detector's stack: its function's settings and DLQ are used (default HotKeyDetector)"
    )
    source.add_argument(
        "--no-stack", action="store_true", help="no stack to read: take the settings from the flags below"
    )
    given = redrive.add_argument_group(
        "the deployed function's settings (read from the stack; given with it, each must match the deployment)"
    )
    given.add_argument("--dlq-url", help="the DLQ (stack output DeadLetterQueueUrl)")
    given.add_argument("--stats-table", help="the stats table (stack output StatsTableName)")
    archive = given.add_mutually_exclusive_group()
    archive.add_argument("--archive-bucket", help="archive redriven TTL deletions here (ArchiveBucketName)")
    archive.add_argument(
        "--no-archive", action="store_true", help="the deployment archives nothing: count TTL deletions unarchived"
    )
    add_setting_flags(given, REDRIVE_SETTINGS, REDRIVE_NOTES)
    redrive.add_argument("--dry-run", action="store_true", help="report only: count nothing, delete nothing")
    redrive.add_argument("--keep", action="store_true", help="leave the messages in the DLQ")
    _add_common(redrive)


def _add_cost(commands: Any) -> None:
    """``hotkeys cost``: the tables' traffic and shape, then the stack's options."""
    cost = _command(commands, "cost", "monthly cost of the detector vs Contributor Insights", EXAMPLES_COST)
    cost.add_argument(
        "--writes-per-second", type=number(0, above=True), required=True, help="the tables' writes per second"
    )
    cost.add_argument(
        "--avg-item-kb", type=number(0, 400, above=True), default=1.0, help="average item size in KB (default 1)"
    )
    cost.add_argument("--tables", type=at_least(1), default=1, help="tables watched (default 1)")
    cost.add_argument(
        "--gsis",
        type=at_least(0),
        default=0,
        help="global secondary indexes per table (default 0; CI bills rules per index)",
    )
    cost.add_argument(
        "--what-if",
        type=at_least(0),
        default=0,
        metavar="N",
        help="what-if proposals per table (whatIfIndexes plus whatIfKeys; default 0): counted as a GSI is",
    )
    cost.add_argument(
        "--sort-keys",
        action="store_true",
        help="the tables and indexes have a sort key (Contributor Insights: 4 rules each instead of 2)",
    )
    cost.add_argument("--reads-per-second", type=number(0), default=0, help="reads (Contributor Insights bills them)")
    cost.add_argument(
        "--throttled-per-second",
        type=number(0),
        default=0,
        help="throttled requests (events of Contributor Insights' throttled-keys mode; default 0)",
    )
    _add_cost_deployment(cost)
    _add_cost_source(cost)


def _add_cost_source(cost: argparse.ArgumentParser) -> None:
    """``hotkeys cost``'s flags of the changes' source: DynamoDB Streams, or a Kinesis data stream."""
    source = cost.add_argument_group("the source (docs/cost.md: Kinesis Data Streams for DynamoDB)")
    source.add_argument(
        "--source",
        choices=("dynamodb", "kinesis"),
        default="dynamodb",
        help="where the detector reads the changes: DynamoDB Streams (default) or a Kinesis data stream",
    )
    source.add_argument(
        "--kinesis-mode",
        choices=("on-demand", "provisioned"),
        default=None,
        help="the Kinesis stream's capacity mode (default on-demand)",
    )
    source.add_argument(
        "--enhanced-fan-out",
        action="store_true",
        help="as -c kinesisEnhancedFanOut=true: the detector reads through its own enhanced fan-out consumer",
    )
    source.add_argument(
        "--stream-made-by-stack",
        action="store_true",
        help="as -c enableKinesis=true: the stack made the stream, so its hours and writes are priced too",
    )
    source.add_argument(
        "--kinesis-shards",
        type=at_least(1),
        default=None,
        help="the stream's open shards (default: what the writes need; on-demand at least 4, twice the need)",
    )
    source.add_argument(
        "--kinesis-record-kb",
        type=number(0, 1024, above=True),
        default=None,
        help="the stream's mean record size in KB, IncomingBytes / IncomingRecords (default: from --avg-item-kb)",
    )


def _add_cost_deployment(cost: argparse.ArgumentParser) -> None:
    """``hotkeys cost``'s flags of the deployment: its options (-c ...), the TTL deletions it archives,
    its functions' memory and logs."""
    cost.add_argument(
        "--throttled-key-insights",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="as -c throttledKeyInsights (default: on, off with --lean); --no-throttled-key-insights: the stack "
        "leaves Contributor Insights off",
    )
    cost.add_argument(
        "--lean",
        action="store_true",
        help="deployed with -c lean=true: no dashboard, no throttle alarms, fewer alarms (docs/cost.md)",
    )
    cost.add_argument("--ttl-deletes-per-second", type=number(0), default=0, help="TTL deletions to archive")
    cost.add_argument(
        "--memory-mb", type=between(128, 10_240), default=512, help="function memory, 128 to 10240 (default 512)"
    )
    cost.add_argument(
        "--judge-memory-mb",
        type=between(128, 10_240),
        default=JUDGE_MEMORY_MB,
        help=f"the judge's memory, as -c judgeMemoryMb (default {JUDGE_MEMORY_MB})",
    )
    cost.add_argument(
        "--consumer-system-log-level",
        type=str.upper,
        choices=("WARN", "INFO", "DEBUG"),
        default="WARN",
        help="as -c consumerSystemLogLevel (default WARN: no Lambda start and report records)",
    )
    cost.add_argument("--json", action="store_true", help="machine-readable output")


def _add_doctor(commands: Any) -> None:
    doctor = _command(
        commands,
        "doctor",
        "check that a deployed detector is actually watching, with the fix for each problem",
        EXAMPLES_DOCTOR,
    )
    doctor.add_argument("--stack", default=DEFAULT_STACK, help=f"the stack's name (default {DEFAULT_STACK})")
    _add_common(doctor)


def _add_generate(commands: Any) -> None:
    gen = _command(commands, "generate", "write a synthetic stream workload as event files", EXAMPLES_GENERATE)
    gen.add_argument("--out", required=True, help="output file (.json or .json.gz); one file per shard if --shards > 1")
    _add_generate_workload(gen)
    gen.add_argument("--shards", type=at_least(1), default=1, help="stream shards (keys map to shards by hash)")
    gen.add_argument(
        "--source",
        choices=("dynamodb", "kinesis"),
        default="dynamodb",
        help="the change stream the records come from: DynamoDB Streams (default) or Kinesis Data Streams "
        "for DynamoDB; the same seed gives the same changes",
    )
    gen.add_argument("--json", action="store_true", help="print what was written as JSON")
    _add_generate_kinesis(gen.add_argument_group("with --source kinesis"))


def _add_generate_workload(gen: argparse.ArgumentParser) -> None:
    """``hotkeys generate``'s tables and each one's workload (``generate_tables``: a flag after a ``--table``
    is that table's)."""
    gen.add_argument(
        "--table",
        dest="tables",
        action=NewTable,
        metavar="NAME",
        help="source table name (default orders); again for several tables on one Kinesis stream: the workload's "
        "flags after a --table are that table's, those before the first --table every table's",
    )
    gen.add_argument(
        "--keys", action=TableFlag, type=at_least(1), default=10_000, help="distinct partition keys (default 10000)"
    )
    gen.add_argument(
        "--zipf",
        action=TableFlag,
        type=number(0, above=True),
        default=0.8,  # generate.DEFAULT_ZIPF (generate loads when it runs)
        help="Zipf exponent of key popularity, above 0 (default 0.8: no key near a heavy share; 1.1: the top ~15%%)",
    )
    gen.add_argument(
        "--rate", action=TableFlag, type=number(0), default=100, help="background records per second (default 100)"
    )
    gen.add_argument(
        "--duration", action=TableFlag, type=at_least(1), default=120, help="seconds of traffic (default 120)"
    )
    gen.add_argument(
        "--item-bytes",
        action=TableFlag,
        type=at_least(1),
        default=1000,
        help="median item size in bytes (default 1000)",
    )
    gen.add_argument(
        "--item-spread", action=TableFlag, type=float, default=0.3, help="lognormal sigma of item sizes (default 0.3)"
    )
    gen.add_argument(
        "--ttl-fraction",
        action=TableFlag,
        type=number(0, 1),
        default=0.0,
        help="share of records that are TTL deletions",
    )
    gen.add_argument("--hot", action=TableFlagAppend, default=[], help="inject a hot key: 'KEY:900wcu@30s[+20s]'")
    _add_generate_items(gen)
    gen.add_argument("--seed", action=TableFlag, type=int, default=1, help="random seed (same seed, same files)")
    gen.add_argument(
        "--start",
        action=TableFlag,
        type=iso_time,
        default="2026-12-01T00:00:00Z",
        help="time of the first record (ISO 8601)",
    )


def _add_generate_items(gen: argparse.ArgumentParser) -> None:
    """``hotkeys generate``'s item flags (a table's, as the workload's: ``_add_generate_workload``)."""
    gen.add_argument(
        "--attribute",
        action=TableFlagAppend,
        default=[],
        metavar="NAME=N",
        help="items carry NAME#1..NAME#N (Zipf), stable per key: 'region=4'",
    )
    gen.add_argument(
        "--ttl-values",
        action=TableFlag,
        metavar="FORMAT=SHARE,...",
        help="items carry expireAt in a format per key, the shares summing to 1: 'seconds=0.9,milliseconds=0.1' "
        "(seconds: 1 to 30 days ahead, milliseconds, microseconds, string, missing, too_old: 6 years back)",
    )
    gen.add_argument(
        "--large-fraction",
        action=TableFlag,
        type=float,
        default=0.0,
        metavar="F",
        help="share of keys (0 to 1) whose items are --large-bytes instead of the drawn size (default 0)",
    )
    gen.add_argument(
        "--large-bytes",
        action=TableFlag,
        type=int,
        default=380_000,  # generate.DEFAULT_LARGE_BYTES, MAX_LARGE_BYTES (generate loads when it runs)
        metavar="N",
        help="size of those items by DynamoDB's rules (default 380000, 1 to 409344: 400 KB less a margin)",
    )


def _add_generate_kinesis(group: Any) -> None:
    """``hotkeys generate``'s Kinesis flags (each refused without ``--source kinesis``: none is given a default
    here, so a flag given with the DynamoDB source is seen)."""
    group.add_argument(
        "--format",
        choices=("lambda", "decoded"),
        help='lambda (default: a Lambda Kinesis event, {"Records": [...]}, each change base64 in kinesis.data) '
        "or decoded (a JSON list of the decoded changes, in arrival order)",
    )
    group.add_argument(
        "--duplicates",
        type=number(0, 1),
        metavar="FRACTION",
        help="share of the changes sent a second time, as the producer's retry would (default 0)",
    )
    group.add_argument(
        "--duplicate-event-ids",
        choices=("new", "same"),
        help="a duplicate's eventID: a new one (default) or the first copy's",
    )
    group.add_argument(
        "--reorder",
        type=number(0, 86_400),
        metavar="SECONDS",
        help="records arrive up to SECONDS after the change was made, so arrival order is shuffled (default 0)",
    )
    group.add_argument(
        "--precision",
        type=str.upper,
        choices=("MICROSECOND", "MILLISECOND"),
        help="of ApproximateCreationDateTime in the decoded change (default MICROSECOND)",
    )
    group.add_argument(
        "--kinesis-shards",
        type=between(1, 1024),
        metavar="N",
        help="Kinesis shards; a record goes to one by the MD5 of its partition key, from the item's (default 1)",
    )


def _command(commands: Any, name: str, summary: str, examples: str) -> argparse.ArgumentParser:
    """One subcommand, with its examples shown as written below its --help."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=summary, epilog=examples, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dynamodb-hotkeys")
    except PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown (not installed)"


def _add_common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--json", action="store_true", help="machine-readable output")
    add_aws_flags(command)
