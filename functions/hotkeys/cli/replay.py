"""``hotkeys replay``: the real handler over event files, through the event-source-mapping emulation.

The backend is in-process moto unless an endpoint URL is given (moto server,
LocalStack, or anything AWS-compatible); the stats table, alert topic (with an
SQS queue subscribed to show what was published), archive bucket and DLQ are
created there with the same names and settings the stack uses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import io
import json
import logging
import re
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotkeys.cli.function_logs import function_logs
from hotkeys.deployment import DEMO_TABLE_TTL_ATTRIBUTE, EVENT_SOURCE
from hotkeys.detector.adapters.aws import AwsClients
from hotkeys.detector.config import Settings
from hotkeys.detector.consumer.pipeline import BatchOutcome
from hotkeys.detector.domain.records import without_images
from hotkeys.emulator import kinesis
from hotkeys.emulator.emulation import Containers, Deployment, Judging, emulate
from hotkeys.emulator.esm import DeadLetter
from hotkeys.emulator.io import BadEventFile, EventReader, NotAnEvent
from hotkeys.emulator.lanes import EventSourceMapping, Invoke, event_second
from hotkeys.emulator.local import LocalResources, create_stats_table
from hotkeys.emulator.positions import sequence_of

DEFAULT_SHARD = "shardId-00000000000000000000"


class ReplayError(ValueError):
    """A user mistake in the replay's input (missing file, not an event)."""


@dataclass
class FakeLambdaContext:
    function_name: str = "hotkey-detector-replay"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:hotkey-detector-replay"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


# Why an invocation failed without a record to blame (no record-level reason was logged for it).
DEBUG_HINT = "HOTKEYS_LOG_LEVEL=DEBUG shows its logs"
FUNCTION_FAILED = f"the function failed on the batch ({DEBUG_HINT})"


def _shortened(text: str, limit: int = 160) -> str:
    """An exception's one-line text, cut to fit a reason line."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# The detector's own log message for a record it cannot count (``pipeline._log_malformed``).
_MALFORMED_MESSAGE = "malformed stream record"


@dataclass
class Uncounted:
    """The records the replay could not count: how many, why, and how many entries hold them in the DLQ."""

    records: int = 0
    dlq_entries: int = 0
    reasons: dict[str, int] = field(default_factory=dict)  # reason -> records

    def to_json(self) -> dict[str, Any]:
        return {"records": self.records, "dlq_entries": self.dlq_entries, "reasons": dict(self.reasons)}


@dataclass
class ReplayReport:
    resources: LocalResources
    settings: Settings  # the function's settings the replay ran with
    records: int = 0
    shards: int = 0
    invocations: int = 0
    dead_letters: list[DeadLetter] = field(default_factory=list)
    # Records whose stream carries no item images (KEYS_ONLY, NEW_IMAGE, OLD_IMAGE): sized from what
    # they carry, so their write units are lower estimates.
    without_images: int = 0
    uncounted: Uncounted = field(default_factory=Uncounted)
    # Kinesis records whose change the function had counted already (DynamoDB sent it again): read, not counted.
    copies: int = 0
    # The folders of each replayed table's event files: recorded answers beside them (``tables/``,
    # ``insights/``) belong to that table.
    table_folders: dict[str, list[Path]] = field(default_factory=dict)
    missing_files: list[str] = field(default_factory=list)  # ``ReplayPlan.missing``

    @property
    def counted(self) -> int:
        return self.records - self.uncounted.records - self.copies

    def add(self, outcome: BatchOutcome) -> None:
        """A successful invocation's outcome (what its records were)."""
        self.copies += outcome.copies


class _MalformedReasons(logging.Handler):
    """Keeps the reason the function logged for each record it could not count, by sequence number.

    The DLQ holds batch coordinates only (as in AWS); the function's log is where the reason is, so
    the replay reads it there instead of asking the user to turn logs on. The last reason logged for
    a sequence number wins (a retried record fails the same way)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.by_sequence: dict[int, str] = {}
        self.without_sequence: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() != _MALFORMED_MESSAGE:
            return
        reason = str(getattr(record, "reason", "") or "malformed record")
        sequence = getattr(record, "sequence_number", None)
        if isinstance(sequence, str) and sequence.isdigit():
            self.by_sequence[int(sequence)] = reason
        else:
            self.without_sequence.append(reason)

    def explain(self, letters: list[DeadLetter], errors: dict[str, int] | None = None) -> Uncounted:
        """Why the dead-lettered records were not counted; ``errors``: what the function raised (the
        most frequent is named where the function failed on the batch instead of dead-lettering a record)."""
        uncounted = Uncounted(records=sum(letter.batch_size for letter in letters), dlq_entries=len(letters))
        reasons: dict[str, int] = {}
        unexplained = list(self.without_sequence)
        for letter in letters:
            found = self._in_range(letter)
            for reason in found:
                reasons[reason] = reasons.get(reason, 0) + 1
            rest = letter.batch_size - len(found)
            # A record without a usable SequenceNumber is dead-lettered without coordinates of its own.
            while rest and unexplained:
                reason = unexplained.pop(0)
                reasons[reason] = reasons.get(reason, 0) + 1
                rest -= 1
            if rest:
                failed = FUNCTION_FAILED
                if errors:
                    raised = max(errors, key=lambda text: errors[text])
                    failed = f"the function failed on the batch ({_shortened(raised)}; {DEBUG_HINT})"
                reasons[failed] = reasons.get(failed, 0) + rest
        uncounted.reasons = dict(sorted(reasons.items(), key=lambda item: -item[1]))
        return uncounted

    def _in_range(self, letter: DeadLetter) -> list[str]:
        if not (letter.start_sequence.isdigit() and letter.end_sequence.isdigit()):
            return []
        low, high = int(letter.start_sequence), int(letter.end_sequence)
        if low == high:
            found = self.by_sequence.get(low)
            return [found] if found is not None else []
        return [reason for sequence, reason in self.by_sequence.items() if low <= sequence <= high]


def lacks_images(record: Any) -> bool:
    """The record carries no item images, as the function judges it (``records.without_images``)."""
    stream = record.get("dynamodb") if isinstance(record, dict) else None
    return isinstance(stream, dict) and without_images(stream)


def create_source_tables(folders: dict[str, list[Path]], aws: AwsClients) -> list[str]:
    """Creates the source tables described beside the events (``tables/<name>.json``, CreateTable input).

    The detector calls DescribeTable to find the partition key of a table with a
    composite primary key; a captured event plus its table description replays faithfully.
    ``folders`` maps each table to the folders of the event files that hold its records.
    """
    created: list[str] = []
    dynamodb = aws.client("dynamodb")
    for name in sorted(folders):
        description = next((d for d in (f / "tables" / f"{name}.json" for f in folders[name]) if d.is_file()), None)
        if description is not None:
            with contextlib.suppress(dynamodb.exceptions.ResourceInUseException):
                dynamodb.create_table(**json.loads(description.read_text()))
            created.append(name)
    return created


@dataclass
class ShardSource:
    """One shard's records in the input: where they are, how many, and whether they come in order."""

    arn: str
    shard_id: str
    files: list[tuple[Path, str]] = field(default_factory=list)  # (file, its default shard id)
    records: int = 0
    ordered: bool = True
    stream_arn: str | None = None
    first_sequence: int | None = None
    last_sequence: int = -1
    # The event seconds its records span (the judge looks from the first to a while after the last).
    first_event: int | None = None
    last_event: int | None = None

    def read(self) -> Iterator[Any]:
        """The records in sequence order, streamed when the input has them in order (as a stream and
        ``hotkeys generate`` do); otherwise this shard's records (only) are read and sorted."""
        records = (
            record
            for file, default_shard in self.files
            for record in _read(file, default_shard)
            if _shard_of(record, default_shard) == (self.arn, self.shard_id)
        )
        if self.ordered:
            yield from records
        else:
            yield from sorted(records, key=_sequence_order)


@dataclass
class ReplayPlan:
    shards: list[ShardSource]
    table_folders: dict[str, list[Path]]
    # Shard files of a capture some of whose files were given and these were not (``missing_shard_files``).
    missing: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(source.records for source in self.shards)

    def span(self) -> tuple[int, int] | None:
        """The first and last event second of the input (None: no record has one)."""
        firsts = [source.first_event for source in self.shards if source.first_event is not None]
        lasts = [source.last_event for source in self.shards if source.last_event is not None]
        return (min(firsts), max(lasts)) if firsts and lasts else None


def plan_replay(paths: list[str]) -> ReplayPlan:
    """A first pass over the event files (streamed: memory does not grow with them): the shards,
    their record counts and order, and the folders of each table's records (for ``tables/``)."""
    sources: dict[tuple[str, str], ShardSource] = {}
    table_folders: dict[str, list[Path]] = {}
    given: dict[Path, int] = {}
    for position, path in enumerate(paths):
        file = Path(path)
        if file.is_dir():
            raise ReplayError(f"{path} is a folder: name the event files in it (e.g. {Path(path) / '*.json'})")
        if not file.is_file():
            if file.exists():
                raise ReplayError(f"{path} is not a regular file (a device or a pipe): name an event file")
            raise ReplayError(f"event file not found: {path}")
        # The same file twice would be replayed twice: its records counted double, every rate doubled.
        earlier = paths[given.setdefault(file.resolve(), position)]
        if given[file.resolve()] != position:
            twice = f"{path!r} twice" if earlier == path else f"{earlier!r} and {path!r} (the same file)"
            raise ReplayError(f"an event file is given more than once: {twice}; name each file once")
        found: dict[tuple[str, Any], ShardSource] = {}  # the file's default shard id is known at its end
        reader = EventReader(file, lists=True)
        kinds: set[str | None] = set()
        for record in _records_of(reader, position):
            arn, own_shard = _shard_of(record, None)
            group = found.get((arn, own_shard))
            if group is None:
                group = found[(arn, own_shard)] = ShardSource(arn, own_shard or "")
                _note_table(table_folders, arn, file)
            kinds.add(kinesis.source_of(record))
            if kinds >= {"dynamodb", "kinesis"}:
                raise ReplayError(
                    f"{path} mixes DynamoDB Streams records and Kinesis records: give each source's records "
                    "in files of their own"
                )
            if "kinesis" in kinds:
                _note_kinesis_table(table_folders, record, file)
            _note(group, record)
        default_shard = str(reader.fields.get("shardId") or f"{DEFAULT_SHARD}-{file.stem}")
        default_shard = _list_shard(position) if reader.is_list else default_shard
        for (arn, own_shard), group in found.items():
            shard = own_shard if own_shard is not None else default_shard
            source = sources.setdefault((arn, shard), ShardSource(arn, shard))
            _merge(source, group, file, default_shard)
    return ReplayPlan(list(sources.values()), table_folders, missing_shard_files(paths))


# ``hotkeys generate --shards N`` names its files NAME-shard-K.json[.gz], K from 0.
_SHARD_FILE = re.compile(r"^(?P<base>.+)-shard-(?P<index>\d+)(?P<suffix>\.json(?:\.gz)?)$")


def missing_shard_files(paths: list[str]) -> list[str]:
    """The files of a capture split by shard (``NAME-shard-K.json[.gz]``) that sit beside the given ones
    and were not given: a replay of part of a capture judges shares of that part only."""
    given = {Path(path).resolve() for path in paths}
    missing: set[Path] = set()
    for path in paths:
        found = _SHARD_FILE.match(Path(path).name)
        if found is None:
            continue
        pattern = f"{glob.escape(found['base'])}-shard-*{found['suffix']}"
        for sibling in Path(path).parent.glob(pattern):
            if _SHARD_FILE.match(sibling.name) and sibling.resolve() not in given:
                missing.add(sibling)
    return sorted(str(file) for file in missing)


def _records_of(reader: EventReader, position: int) -> Iterator[Any]:
    """The file's records; a JSON list's decoded Kinesis changes delivered as one Kinesis shard, a stream of
    its own (``kinesis.DecodedList``; ``position``: the file's place in the input)."""
    try:
        listed = kinesis.DecodedList(_list_shard(position), kinesis.stream_arn(f"hotkeys-decoded-{position}"))
        known = False
        for record in reader.records():
            if not reader.is_list:
                yield record
                continue
            source = kinesis.source_of(record)
            known = known or source is not None
            yield listed.record(record) if source in ("decoded", None) else record
        if reader.is_list and reader.saw_records and not known and listed.position:
            raise ReplayError(f"{reader.path} is a JSON list, but not of decoded DynamoDB changes (with tableName)")
    except NotAnEvent:
        raise ReplayError(f"{reader.path} is not a DynamoDB stream event (no 'Records' list){_OR_KINESIS}") from None
    except (BadEventFile, UnicodeDecodeError, OSError, EOFError) as error:
        raise ReplayError(f"{reader.path} is not a readable JSON event file: {error}") from None
    if not reader.saw_records:
        raise ReplayError(f"{reader.path} is not a DynamoDB stream event (no 'Records' list){_OR_KINESIS}")


_OR_KINESIS = ", nor a Kinesis one (a Lambda Kinesis event, or a JSON list of decoded changes)"


def _read(file: Path, default_shard: str) -> Iterator[Any]:
    return _records_of(EventReader(file, lists=True), _list_position(default_shard))


def _list_shard(position: int) -> str:
    """The shard a JSON list of decoded changes is delivered as: the file's place in the input."""
    return kinesis.shard_id(position)


def _list_position(shard: str) -> int:
    """The place a list's shard (``_list_shard``) was numbered from (any other default shard: 0, unused)."""
    digits = shard.removeprefix("shardId-")
    return int(digits) if shard.startswith("shardId-") and digits.isdigit() else 0


def _shard_of(record: Any, default_shard: str | None) -> tuple[str, Any]:
    """(stream ARN, shard id) as the record says, as text: a malformed record (an ARN that is a list
    or a map) still goes to the handler, which rejects it alone, instead of breaking the replay."""
    if not isinstance(record, dict):
        return "", default_shard
    # A Kinesis record names its shard in its eventID ("shardId-000000000006:SEQUENCE").
    own = kinesis.shard_of_record(record) or record.get("shardId", default_shard)
    return str(record.get("eventSourceARN", "")), (str(own) if own is not None else None)


def _note(group: ShardSource, record: Any) -> None:
    group.records += 1
    second = event_second(record)
    if second is not None:
        group.first_event = second if group.first_event is None else min(group.first_event, second)
        group.last_event = second if group.last_event is None else max(group.last_event, second)
    if group.stream_arn is None and isinstance(record, dict) and isinstance(record.get("eventSourceARN"), str):
        group.stream_arn = record["eventSourceARN"]
    sequence = _sequence_number(record)
    if group.records == 1:
        group.first_sequence = sequence
    if sequence is None or sequence < group.last_sequence:
        group.ordered = False
    else:
        group.last_sequence = sequence


def _merge(source: ShardSource, group: ShardSource, file: Path, default_shard: str) -> None:
    first_in_file = not source.files
    source.ordered = source.ordered and group.ordered and (first_in_file or _follows(source, group))
    source.files.append((file, default_shard))
    source.records += group.records
    source.last_sequence = max(source.last_sequence, group.last_sequence)
    for name, pick in (("first_event", min), ("last_event", max)):
        found = [value for value in (getattr(source, name), getattr(group, name)) if value is not None]
        setattr(source, name, pick(found) if found else None)
    source.stream_arn = source.stream_arn or group.stream_arn


def _follows(source: ShardSource, group: ShardSource) -> bool:
    """Conservative: a shard split over files streams only if each later file starts after the last."""
    return group.first_sequence is not None and group.first_sequence >= source.last_sequence


def _note_table(table_folders: dict[str, list[Path]], arn: str, file: Path) -> None:
    from hotkeys.detector.domain.records import MalformedRecord, table_from_arn

    if arn.startswith("arn:aws:kinesis:"):
        return  # a Kinesis stream may carry several tables: each record names its own (_note_kinesis_table)
    with contextlib.suppress(MalformedRecord):
        _note_folder(table_folders, table_from_arn(arn), file)


def _note_kinesis_table(table_folders: dict[str, list[Path]], record: Any, file: Path) -> None:
    change = kinesis.decoded_of(record)
    table = change.get("tableName") if change is not None else None
    if isinstance(table, str) and table:
        _note_folder(table_folders, table, file)


def _note_folder(table_folders: dict[str, list[Path]], table: str, file: Path) -> None:
    folders = table_folders.setdefault(table, [])
    if file.parent not in folders:
        folders.append(file.parent)


def create_resources(aws: AwsClients | None = None, prefix: str = "hotkeys-replay") -> LocalResources:
    aws = aws or AwsClients()
    suffix = uuid.uuid4().hex[:6]
    stats = f"{prefix}-stats-{suffix}"
    create_stats_table(aws.client("dynamodb"), stats)
    sns = aws.client("sns")
    sqs = aws.client("sqs")
    topic_arn = sns.create_topic(Name=f"{prefix}-alerts-{suffix}")["TopicArn"]
    alert_queue = sqs.create_queue(QueueName=f"{prefix}-alert-copies-{suffix}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=alert_queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
    dlq_url = sqs.create_queue(QueueName=f"{prefix}-dlq-{suffix}")["QueueUrl"]
    bucket = f"{prefix}-archive-{suffix}"
    s3 = aws.client("s3")
    region = aws.region or "us-east-1"
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        # The region the user chose, whichever: the stubs list only the regions known when they were made.
        location = {"LocationConstraint": region}
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration=location)  # type: ignore[arg-type]
    return LocalResources(stats, topic_arn, bucket, dlq_url, alert_queue)


def replay_settings(resources: LocalResources, chosen: Settings | None = None) -> Settings:
    """The function's settings for a replay: the chosen ones (or the defaults) on these resources.

    The TTL attribute defaults to the demo table's, as the demo stack deploys it.
    """
    base = chosen or Settings(stats_table_name=resources.stats_table)
    return dataclasses.replace(
        base,
        stats_table_name=resources.stats_table,
        alert_topic_arn=resources.topic_arn,
        archive_bucket_name=resources.bucket,
        ttl_attribute=base.ttl_attribute or DEMO_TABLE_TTL_ATTRIBUTE,
    )


def run_replay(
    paths: list[str] | ReplayPlan,
    resources: LocalResources,
    aws: AwsClients | None = None,
    settings: Settings | None = None,
    observe: Callable[[Any], None] | None = None,
) -> ReplayReport:
    """Replays the events through the real handler, with ``settings``, on ``aws`` (the caller's backend;
    boto3's default session if None). Settings default to ``replay_settings(resources)``.

    The deployment is emulated (``emulation.emulate``): the event source mapping as deployed
    (``hotkeys.deployment.EVENT_SOURCE``) with the settings' window as its tumbling window, every shard
    side by side in emulated time, and the judge on its schedule. Records stream; ``observe`` sees each
    one once, as it is read (the report's heat map, the progress bar).
    """
    aws = aws or AwsClients()
    settings = settings or replay_settings(resources)
    plan = paths if isinstance(paths, ReplayPlan) else plan_replay(paths)
    create_source_tables(plan.table_folders, aws)
    report = ReplayReport(
        resources=resources,
        settings=settings,
        shards=len(plan.shards),
        table_folders=plan.table_folders,
        missing_files=plan.missing,
    )
    mapping = dataclasses.replace(EVENT_SOURCE, tumbling_window_seconds=settings.window_seconds)

    def seen(record: Any) -> None:
        if lacks_images(record):
            report.without_images += 1
        if observe is not None:
            observe(record)

    reasons = _MalformedReasons()
    errors: dict[str, int] = {}
    span = plan.span()
    with function_logs(reasons):
        # Every shard side by side in emulated time, each in a container of its own, and the judge on
        # its schedule (the records' own time: a replay of an old capture alerts as it would have live).
        emulated = emulate(
            Deployment(settings, aws),
            [[(source.shard_id, _observed(source.read(), seen))] for source in plan.shards],
            mapping=EventSourceMapping(mapping, stream_arns=[source.stream_arn for source in plan.shards]),
            containers=Containers(handler=lambda ports: deployed_handler(settings, ports, report.add)),
            judge=Judging(start=span[0] if span else None, tables=tuple(plan.table_folders)),
        )
        for source, (run,) in zip(plan.shards, emulated.runs, strict=True):
            report.records += source.records
            report.invocations += run.invocations
            report.dead_letters.extend(run.dead_letters)
            for text, times in run.errors.items():
                errors[text] = errors.get(text, 0) + times
        _send_dead_letters(resources, report.dead_letters, aws)
    report.uncounted = reasons.explain(report.dead_letters, errors)
    return report


def deployed_handler(settings: Settings, ports: Any, outcomes: Callable[[BatchOutcome], None] | None = None) -> Invoke:
    """A container running the deployed Lambda handler (its Powertools decorators included) on ``ports``;
    ``outcomes`` sees each successful invocation's outcome, as the container's metrics do."""
    from hotkeys.detector.handlers.app import Container, MetricsBuffer, build_handler
    from hotkeys.detector.observability import metrics

    class Observed(MetricsBuffer):
        def add(self, outcome: BatchOutcome) -> None:
            if outcomes is not None:
                outcomes(outcome)
            super().add(outcome)

    container = Container(settings, ports, Observed())
    handler = build_handler(lambda: container)

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                # An invocation that fails before counting has no metrics; Powertools warns about that on
                # stderr, which is noise for a person reading the replay (Lambda logs it, harmlessly).
                # The metrics it does publish are EMF lines on stdout (CloudWatch reads them in Lambda):
                # kept out of the replay's own output.
                warnings.filterwarnings("ignore", message="No application metrics to publish")
                return handler(event, FakeLambdaContext())  # type: ignore[arg-type]
        finally:
            metrics.clear_metrics()

    return invoke


def _observed(records: Iterator[Any], observe: Callable[[Any], None]) -> Iterator[Any]:
    for record in records:
        observe(record)
        yield record


def _sequence_number(record: Any) -> int | None:
    try:
        return int(sequence_of(record))
    except (TypeError, ValueError):
        return None


def _sequence_order(record: Any) -> int:
    return _sequence_number(record) or 0


def _send_dead_letters(resources: LocalResources, letters: list[DeadLetter], aws: AwsClients) -> None:
    if not resources.dlq_url:
        return
    sqs = aws.client("sqs")
    for letter in letters:
        sqs.send_message(QueueUrl=resources.dlq_url, MessageBody=json.dumps(letter.to_message()))
