"""What ``hotkeys redrive`` knows of the deployment it counts for: its settings (the stack's, or flags
checked against the stats table) and its TTL archive (``Archiving``; without the stack, the flags a TTL
deletion's handling waits for: ``ASKED``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from hotkeys.cli.common import UserError
from hotkeys.cli.deployed import Deployment
from hotkeys.detector.adapters.archive_store import TtlAttributeResolver
from hotkeys.detector.config import MAX_TUMBLING_WINDOW_SECONDS, OPTION_BY_NAME, Settings, Value, setting_text
from hotkeys.detector.consumer.archive import TtlArchiver
from hotkeys.detector.domain.records import Change, ChangeKind

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class Archiving(Enum):
    """What redrive knows of the deployment's TTL archive."""

    DEPLOYED = "deployed"  # it archives: the archiver port archives as the function does
    ABSENT = "absent"  # it archives nothing: TTL deletions are counted, as the function counts them
    UNKNOWN = "unknown"  # not known: a range holding a record the deployment may archive is refused


TtlJudge = Callable[[Change, dict[str, Any]], bool]
# The flags a record's handling waits for (``ASKED``'s), none when it is known.
Undecided = Callable[[Change, dict[str, Any]], tuple[str, ...]]

# What only the stack tells of the deployment's archive (``--no-stack``): each flag, what it says and
# how a refusal asks for it. Counted without it, a TTL deletion would be covered for good and archived
# otherwise than deployed (outside its prefix, or never), so the range waits for the flag instead.
ASKED = {
    "--archive-bucket": ("archive bucket (if any)", "--archive-bucket BUCKET"),
    "--archive-prefix": ("archive prefix", "--archive-prefix PREFIX"),
    "--archive-replicated-ttl": (
        "ARCHIVE_REPLICATED_TTL (whether TTL deletions replicated from another region are archived)",
        "--archive-replicated-ttl true|false",
    ),
}


def decided(change: Change, record: dict[str, Any]) -> tuple[str, ...]:
    return ()


def archive_unknown(change: Change, record: dict[str, Any]) -> tuple[str, ...]:
    """Without an archiver nor word that the deployment archives nothing: its own TTL deletions wait."""
    return ("--archive-bucket",) if change.kind is ChangeKind.TTL_DELETE else ()


def undecided_by(unknown: frozenset[str], replicated: bool, is_ttl_deletion: TtlJudge) -> Undecided:
    """The flags of ``unknown`` a record waits for: a TTL deletion (``is_ttl_deletion``, a replica's
    included) waits for all of them, but a replica's waits for none if told replicas are not archived
    (``replicated`` given false), and only a replica's waits for ``--archive-replicated-ttl``."""
    if not unknown:
        return decided  # the stack's settings (or flags that say everything): no judge, no reads
    own = tuple(flag for flag in ASKED if flag in unknown and flag != "--archive-replicated-ttl")
    every = tuple(flag for flag in ASKED if flag in unknown)
    told_not_archived = not replicated and "--archive-replicated-ttl" not in unknown

    def flags(change: Change, record: dict[str, Any]) -> tuple[str, ...]:
        if change.kind is ChangeKind.TTL_DELETE:
            return own
        if told_not_archived or not is_ttl_deletion(change, record):
            return ()
        return every

    return flags


def _listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def unknown_text(flags: list[str]) -> str:
    """What of the deployment ``flags`` (ASKED's, in its order) would tell."""
    return "the deployment's " + _listed([ASKED[flag][0] for flag in flags])


def give(flags: list[str]) -> str:
    """How a refusal asks for ``flags`` (ASKED's, in its order)."""
    alternative = " (or --no-archive if it archives nothing)" if "--archive-bucket" in flags else ""
    return f"give {_listed([ASKED[flag][1] for flag in flags])} as deployed{alternative}, or run with --stack NAME"


STREAM_RETENTION_SECONDS = 86_400  # what is older cannot be re-read, so its windows do not matter


@dataclass(frozen=True)
class RedriveFlags:
    """What the user gave on the command line (None: not given)."""

    dlq_url: str | None = None
    stats_table: str | None = None
    archive_bucket: str | None = None
    no_archive: bool = False
    settings: dict[str, Value] = field(default_factory=dict)  # by Settings attribute


@dataclass(frozen=True)
class RedrivePlan:
    settings: Settings
    dlq_url: str
    archiving: Archiving
    unknown: frozenset[str] = frozenset()  # ASKED's flags the deployment's archive is not known without


def plan_from_deployment(flags: RedriveFlags, deployment: Deployment) -> RedrivePlan:
    """The deployed function's settings; a flag that disagrees with them is refused, naming both values."""
    deployed = deployment.settings
    owner = f"{deployment.function} (stack {deployment.stack!r})"

    def refuse(flag: str, given: str, deployed_text: str) -> UserError:
        return UserError(f"{flag} {given} disagrees with the deployment: {owner} has {deployed_text}; leave {flag} out")

    for name, value in flags.settings.items():
        option = OPTION_BY_NAME[name]
        have = getattr(deployed, name)
        if value is not None and _as_loaded(name, value) != have:
            shown = setting_text(have) if have is not None else "unset"
            raise refuse(str(option.cli_flag), setting_text(value), f"{option.variable}={shown}")
    if flags.stats_table is not None and flags.stats_table != deployed.stats_table_name:
        raise refuse("--stats-table", flags.stats_table, f"STATS_TABLE_NAME={deployed.stats_table_name}")
    bucket = deployed.archive_bucket_name
    if flags.archive_bucket is not None and flags.archive_bucket != bucket:
        raise refuse(
            "--archive-bucket", flags.archive_bucket, f"ARCHIVE_BUCKET_NAME={bucket}" if bucket else "no archive bucket"
        )
    if flags.no_archive and bucket:
        raise UserError(f"--no-archive disagrees with the deployment: {owner} archives TTL deletions to {bucket}")
    dlq_url = deployment.dlq_url or flags.dlq_url
    if not dlq_url:
        raise UserError(f"stack {deployment.stack!r} has no DeadLetterQueueUrl output: give --dlq-url")
    if flags.dlq_url is not None and flags.dlq_url != dlq_url:
        raise UserError(
            f"--dlq-url {flags.dlq_url} disagrees with the deployment: stack {deployment.stack!r}'s "
            f"DeadLetterQueueUrl is {dlq_url}; leave --dlq-url out"
        )
    return RedrivePlan(
        settings=replace(deployed, alert_topic_arn=None),  # alerts are not sent for redriven (old) records
        dlq_url=dlq_url,
        archiving=Archiving.DEPLOYED if bucket else Archiving.ABSENT,
    )


def _as_loaded(name: str, value: Value) -> Value:
    """A flag's value as the function's settings hold it (a prefix gets its trailing /)."""
    if name == "archive_prefix" and isinstance(value, str) and not value.endswith("/"):
        return value + "/"
    return value


# The archive's settings redrive asks for without the stack: flag -> setting.
ARCHIVE_SETTINGS = {"--archive-prefix": "archive_prefix", "--archive-replicated-ttl": "archive_replicated_ttl"}
NO_STACK_NEEDS = "--no-stack needs --dlq-url and --stats-table (or leave --no-stack out to read them from the stack)"


def plan_without_stack(flags: RedriveFlags, settings: Settings) -> RedrivePlan:
    """Settings from flags alone (``--no-stack``): the archive is what the flags say, or unknown."""
    if not flags.dlq_url or not flags.stats_table:
        raise UserError(NO_STACK_NEEDS)
    archive_flags = [flag for flag, name in ARCHIVE_SETTINGS.items() if flags.settings.get(name) not in (None, False)]
    if flags.no_archive and archive_flags:
        # Settings of an archive said to be absent: one of the two statements is wrong, and which is not known.
        raise UserError(
            f"--no-archive contradicts {' and '.join(archive_flags)}: an archive that does not exist has no settings"
        )
    if flags.archive_bucket:
        archiving = Archiving.DEPLOYED
    else:
        archiving = Archiving.ABSENT if flags.no_archive else Archiving.UNKNOWN
    # A setting not given takes the function's default in ``settings``; what the deployment has is not
    # known, and matters only where it may archive.
    unknown = {flag for flag, name in ARCHIVE_SETTINGS.items() if flags.settings.get(name) is None}
    unknown |= {"--archive-bucket"} if archiving is Archiving.UNKNOWN else set()
    if archiving is Archiving.ABSENT:
        unknown = set()
    return RedrivePlan(
        settings=replace(settings, alert_topic_arn=None),
        dlq_url=flags.dlq_url,
        archiving=archiving,
        unknown=frozenset(unknown),
    )


def stored_window_lengths(reader: Any, since: int, until: int) -> set[int]:
    """The lengths of the windows of any watched table stored for windows starting in [since, until]."""
    return {seconds for table in reader.tables() for _, seconds in reader.windows(table, since, until)}


def check_window_flag(reader: Any, window_seconds: int, given: int | None, now: float) -> None:
    """Refuse a window length (flag or default) that no stored window of the stream's retention has."""
    moment = int(now)
    since = moment - STREAM_RETENTION_SECONDS - MAX_TUMBLING_WINDOW_SECONDS
    lengths = stored_window_lengths(reader, since, moment + MAX_TUMBLING_WINDOW_SECONDS)
    if lengths and window_seconds not in lengths:
        flag = f"--window-seconds {given}" if given is not None else f"--window-seconds (default {window_seconds})"
        stored = " and ".join(f"{length} s" for length in sorted(lengths))
        raise UserError(
            f"{flag} disagrees with the stats table: its windows of the last day are {stored} long "
            f"(give --window-seconds {min(lengths)}, or read the settings with --stack NAME)"
        )


class _NoStore:
    def put(self, key: str, body: bytes) -> None:
        raise RuntimeError("the TTL judge never writes")


def ttl_judge(settings: Settings, dynamodb: DynamoDBClient) -> TtlJudge:
    """What an unknown deployment may archive: TTL deletions, replicated ones included (as with
    ARCHIVE_REPLICATED_TTL, judged by the table's TTL attribute)."""
    resolver = TtlAttributeResolver(settings.ttl_attribute, dynamodb)
    return TtlArchiver(_NoStore(), settings.archive_prefix, resolver, replicated_ttl=True).wanted
