"""The detector's settings: one typed schema for the function, the CDK app and the CLI.

Each ``Option`` says once what a setting is called on every surface (the function's
environment variable, the ``cdk -c`` context key, the CLI flag), its default, its
valid range and its help text. ``load_settings`` (the function, once per container),
``infra.options`` (the synth), the CLI's flags and docs/deploy.md's options table all
derive from ``OPTIONS``, and a value is validated by the same code wherever it is
given, so what ``cdk synth`` accepts the function accepts too. No dependencies, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from hotkeys.detector.proposals import Proposal, ProposalError
from hotkeys.detector.proposals import parse as parse_proposals

MAX_TUMBLING_WINDOW_SECONDS = 900  # Lambda's limit for a stream mapping's tumbling window
DEFAULT_SPAN_SECONDS = 10  # the alert span, unless the window is shorter
DEFAULT_FLUSH_SECONDS = 12  # the flush interval (and the judge's look interval), unless the window is shorter
# The settings whose default follows the window: their default, or the window if it is shorter.
FOLLOW_THE_WINDOW = {"alert_min_span_seconds": DEFAULT_SPAN_SECONDS, "flush_seconds": DEFAULT_FLUSH_SECONDS}
# What those fields hold until ``Settings.__post_init__`` resolves them (never a valid value: their low is 1).
WINDOW_DEFAULT = 0

OptionKind = Literal["int", "number", "text", "flag", "choice"]  # how an option's text is read
Value = int | float | str | bool | None
TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")


class ConfigError(ValueError):
    """A setting is missing or invalid. ``str()`` names the environment variable;
    ``problem`` is the same sentence without it, for surfaces that name the setting their own way."""

    def __init__(self, variable: str, problem: str) -> None:
        super().__init__(f"{variable} {problem}")
        self.variable = variable
        self.problem = problem


@dataclass(frozen=True)
class Option:
    name: str  # the Settings attribute
    variable: str  # the function's environment variable
    kind: OptionKind
    default: Value
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    context_key: str | None = None  # `cdk deploy -c key=value`; None: the stack sets it itself
    cli_flag: str | None = None  # the flag of the CLI commands that emulate the function
    default_text: str | None = None  # how the default reads where it depends on another setting
    check: Callable[[str], object] | None = None  # a text's grammar: raises ValueError saying what is wrong

    def parse(self, raw: str | None) -> Value:
        """The typed value of ``raw`` (the default when empty), or ConfigError naming the variable."""
        text = (raw or "").strip()
        if not text:
            return self.default
        if self.kind == "int":
            return self.check_range(self._number(text, int, "a whole number"))
        if self.kind == "number":
            return self.check_range(self._number(text, float, "a number"))
        if self.kind == "flag":
            word = text.lower()
            if word not in TRUE_WORDS + FALSE_WORDS:
                raise ConfigError(self.variable, f"must be true or false, got {text!r}")
            return word in TRUE_WORDS
        if self.kind == "choice":  # any case; the value is the choice as the schema spells it
            chosen = [choice for choice in self.choices if choice.lower() == text.lower()]
            if not chosen:
                raise ConfigError(self.variable, f"must be one of {', '.join(self.choices)}, got {text!r}")
            return chosen[0]
        if self.check is not None:
            try:
                self.check(text)
            except ValueError as error:
                raise ConfigError(self.variable, f"is invalid: {error}") from None
        return text

    def _number(self, text: str, kind: type[int] | type[float], noun: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise ConfigError(self.variable, f"must be {noun}, got {text!r}") from None
        if not math.isfinite(value):
            raise ConfigError(self.variable, f"must be {noun}, got {text!r}")
        return value

    def check_range(self, value: float) -> float:
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            got = value if isinstance(value, int) else f"{value:g}"
            raise ConfigError(self.variable, f"must be between {self.documented_range}, got {got}")
        return value

    @property
    def documented_range(self) -> str:
        if self.low is None or self.high is None:
            return ""
        return f"{_number_text(self.low)} and {_number_text(self.high)}"

    @property
    def documented_default(self) -> str:
        if self.default_text is not None:
            return self.default_text
        if self.default in (None, ""):
            return "—"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return _number_text(self.default) if isinstance(self.default, int | float) else str(self.default)


def _number_text(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


OPTIONS: tuple[Option, ...] = (
    Option("stats_table_name", "STATS_TABLE_NAME", "text", None, "the detector's stats table (set by the stack)"),
    Option(
        "window_seconds",
        "WINDOW_SECONDS",
        "int",
        60,
        "length of a counting window, in seconds (the mapping's tumbling window)",
        low=1,
        high=MAX_TUMBLING_WINDOW_SECONDS,
        context_key="windowSeconds",
        cli_flag="--window-seconds",
    ),
    Option(
        "partition_wcu_limit",
        "PARTITION_WCU_LIMIT",
        "int",
        1000,
        "write units per second one partition serves",
        low=1,
        high=1_000_000,
        context_key="partitionWcuLimit",
        cli_flag="--partition-limit",
    ),
    Option(
        "alert_threshold",
        "ALERT_THRESHOLD",
        "number",
        0.8,
        "alert when a key's rate reaches this fraction of the partition limit",
        low=0.01,
        high=1.0,
        context_key="alertThreshold",
        cli_flag="--alert-threshold",
    ),
    Option(
        "alert_hysteresis",
        "ALERT_HYSTERESIS",
        "number",
        0.2,
        "an alert resolves below (threshold - hysteresis) of the limit; smaller than the threshold",
        low=0.0,
        high=1.0,
        context_key="alertHysteresis",
        cli_flag="--alert-hysteresis",
    ),
    Option(
        "alert_min_span_seconds",
        "ALERT_MIN_SPAN_SECONDS",
        "int",
        DEFAULT_SPAN_SECONDS,
        "a rate counts only over at least this many seconds of writes (at most the window)",
        low=1,
        high=MAX_TUMBLING_WINDOW_SECONDS,
        context_key="alertMinSpanSeconds",
        cli_flag="--alert-min-span-seconds",
        default_text=f"{DEFAULT_SPAN_SECONDS} (the window, if shorter)",
    ),
    Option(
        "alert_reminder_seconds",
        "ALERT_REMINDER_SECONDS",
        "int",
        900,
        "an open incident is re-announced after this many seconds",
        low=60,
        high=86_400,
        context_key="alertReminderSeconds",
        cli_flag="--alert-reminder-seconds",
    ),
    Option(
        "share_threshold",
        "SHARE_THRESHOLD",
        "number",
        0.10,
        "alert when one key takes this fraction of a busy table's write units",
        low=0.001,
        high=1.0,
        context_key="shareThreshold",
        cli_flag="--share-threshold",
    ),
    Option(
        "share_min_wcu",
        "SHARE_MIN_WCU",
        "int",
        6000,
        "write units per window below which a table is too quiet for share alerts",
        low=0,
        high=10**12,
        context_key="shareMinWcu",
        cli_flag="--share-min-wcu",
    ),
    Option("alert_topic_arn", "ALERT_TOPIC_ARN", "text", None, "the alert topic (set by the stack)"),
    Option(
        "what_if_topic_arn",
        "WHAT_IF_TOPIC_ARN",
        "text",
        None,
        "the what-if topic: the judge's notices about proposals (set by the stack when there are proposals)",
    ),
    Option(
        "webhook_secret_arn",
        "WEBHOOK_SECRET_ARN",
        "text",
        None,
        "the secret holding the Slack webhook URL: the webhook notifier's (set by the stack)",
    ),
    Option(
        "watched_tables",
        "WATCHED_TABLES",
        "text",
        None,
        "the tables the judge looks at, comma-separated (set by the stack; the layout registry adds the rest)",
    ),
    Option(
        "judge_queue_url",
        "JUDGE_QUEUE_URL",
        "text",
        None,
        "the judge's queue: each look sends it the next look's message (set by the stack)",
    ),
    Option(
        "partition_key_attribute",
        "PARTITION_KEY_ATTRIBUTE",
        "text",
        None,
        "the partition key's attribute name, for every watched table (default: read with DescribeTable)",
        context_key="partitionKeyAttribute",
        cli_flag="--partition-key-attribute",
    ),
    Option(
        "what_if_indexes",
        "WHAT_IF_INDEXES",
        "text",
        None,
        "proposed GSIs counted as if they existed: '[TABLE:]NAME=ATTR[+ATTR][/SORT[+SORT]][:PROJECTION]' with "
        "PROJECTION KEYS_ONLY, INCLUDE(a,b) or ALL (when none is given), several separated by ';'",
        context_key="whatIfIndexes",
        cli_flag="--what-if-index",
        check=lambda text: parse_proposals(text, None),
    ),
    Option(
        "what_if_keys",
        "WHAT_IF_KEYS",
        "text",
        None,
        "proposed table partition keys counted as if the table were keyed by them: '[TABLE:]ATTR[+ATTR]', "
        "several separated by ';'",
        context_key="whatIfKeys",
        cli_flag="--what-if-key",
        check=lambda text: parse_proposals(None, text),
    ),
    Option(
        "count_indexes",
        "COUNT_INDEXES",
        "flag",
        True,
        "also count each global secondary index's partitions (their back-pressure throttles the table)",
        context_key="countIndexes",
        cli_flag="--count-indexes",
    ),
    Option(
        "summary_capacity",
        "SUMMARY_CAPACITY",
        "int",
        200,
        "keys kept per shard and window before the smallest are pruned",
        low=10,
        high=2000,
        context_key="summaryCapacity",
        cli_flag="--summary-capacity",
    ),
    Option(
        "flush_seconds",
        "FLUSH_SECONDS",
        "int",
        DEFAULT_FLUSH_SECONDS,
        "an open window's figures are written every this many seconds of event time, aligned to the epoch, "
        "and the judge looks as often (at most the window)",
        low=1,
        high=MAX_TUMBLING_WINDOW_SECONDS,
        context_key="flushSeconds",
        cli_flag="--flush-seconds",
        default_text=f"{DEFAULT_FLUSH_SECONDS} (the window, if shorter)",
    ),
    Option(
        "stats_retention_days",
        "STATS_RETENTION_DAYS",
        "int",
        14,
        "days the stats table keeps a window's figures",
        low=1,
        high=3650,
        context_key="statsRetentionDays",
    ),
    Option("archive_bucket_name", "ARCHIVE_BUCKET_NAME", "text", None, "the TTL archive bucket (set by the stack)"),
    Option(
        "archive_prefix",
        "ARCHIVE_PREFIX",
        "text",
        "ttl-archive/",
        "key prefix of archived TTL deletions (a trailing / is added)",
        context_key="archivePrefix",
        cli_flag="--archive-prefix",
    ),
    Option(
        "archive_replicated_ttl",
        "ARCHIVE_REPLICATED_TTL",
        "flag",
        False,
        "also archive TTL deletions replicated from another region of a global table",
        context_key="archiveReplicatedTtl",
        cli_flag="--archive-replicated-ttl",
    ),
    Option(
        "ttl_attribute",
        "TTL_ATTRIBUTE",
        "text",
        None,
        "the TTL attribute, for every watched table (default: read with DescribeTimeToLive)",
        context_key="ttlAttribute",
        cli_flag="--ttl-attribute",
    ),
    Option(
        "key_display",
        "KEY_DISPLAY",
        "choice",
        "raw",
        "how keys appear in alerts: raw, or hash (salted SHA-256; keys can be personal data)",
        choices=("raw", "hash"),
        context_key="keyDisplay",
        cli_flag="--key-display",
    ),
    Option(
        "key_hash_salt",
        "KEY_HASH_SALT",
        "text",
        "",
        "the salt of hashed keys (required when keys are shown hashed: keyDisplay=hash, --key-display hash; "
        "keep it secret)",
        context_key="keyHashSalt",
        cli_flag="--key-hash-salt",
    ),
)
OPTION_BY_NAME = {option.name: option for option in OPTIONS}
OPTION_BY_VARIABLE = {option.variable: option for option in OPTIONS}


def default_of(name: str) -> Any:
    return OPTION_BY_NAME[name].default


@dataclass(frozen=True)
class Settings:
    """The function's validated settings. Defaults are the schema's; constructing one checks it."""

    stats_table_name: str
    window_seconds: int = field(default=default_of("window_seconds"))
    partition_wcu_limit: int = field(default=default_of("partition_wcu_limit"))
    alert_threshold: float = field(default=default_of("alert_threshold"))
    alert_hysteresis: float = field(default=default_of("alert_hysteresis"))
    alert_min_span_seconds: int = WINDOW_DEFAULT  # resolved in __post_init__ (FOLLOW_THE_WINDOW)
    alert_reminder_seconds: int = field(default=default_of("alert_reminder_seconds"))
    share_threshold: float = field(default=default_of("share_threshold"))
    share_min_wcu: int = field(default=default_of("share_min_wcu"))
    alert_topic_arn: str | None = None
    what_if_topic_arn: str | None = None
    webhook_secret_arn: str | None = None
    watched_tables: str | None = None
    judge_queue_url: str | None = None
    partition_key_attribute: str | None = None
    what_if_indexes: str | None = None
    what_if_keys: str | None = None
    count_indexes: bool = field(default=default_of("count_indexes"))
    summary_capacity: int = field(default=default_of("summary_capacity"))
    flush_seconds: int = WINDOW_DEFAULT  # resolved in __post_init__ (FOLLOW_THE_WINDOW)
    stats_retention_days: int = field(default=default_of("stats_retention_days"))
    archive_bucket_name: str | None = None
    archive_prefix: str = field(default=default_of("archive_prefix"))
    archive_replicated_ttl: bool = field(default=default_of("archive_replicated_ttl"))
    ttl_attribute: str | None = None
    key_display: str = field(default=default_of("key_display"))
    key_hash_salt: str = field(default=default_of("key_hash_salt"))

    def __post_init__(self) -> None:
        if not self.stats_table_name:
            raise ConfigError("STATS_TABLE_NAME", "is required: the name of the detector's stats table")
        for name, default in FOLLOW_THE_WINDOW.items():  # the one place these defaults are filled in
            if getattr(self, name) == WINDOW_DEFAULT:
                object.__setattr__(self, name, min(default, self.window_seconds))
        for option in OPTIONS:
            value = getattr(self, option.name)
            if option.kind in ("int", "number") and value is not None:
                option.check_range(value)
            if option.kind == "choice" and value not in option.choices:
                raise ConfigError(option.variable, f"must be one of {', '.join(option.choices)}, got {value!r}")
        _check_together(self)
        _check_proposals(self)
        if not self.archive_prefix.endswith("/"):
            object.__setattr__(self, "archive_prefix", self.archive_prefix + "/")

    @property
    def proposals(self) -> tuple[Proposal, ...]:
        """The what-if proposals (``WHAT_IF_INDEXES``, then ``WHAT_IF_KEYS``), parsed once per value."""
        return parse_proposals(self.what_if_indexes, self.what_if_keys)

    @property
    def tables(self) -> tuple[str, ...]:
        """``watched_tables`` as names."""
        return tuple(name.strip() for name in (self.watched_tables or "").split(",") if name.strip())


def _check_together(settings: Settings) -> None:
    """The rules between settings."""
    if settings.alert_hysteresis >= settings.alert_threshold:
        raise ConfigError(
            "ALERT_HYSTERESIS",
            f"({settings.alert_hysteresis:g}) must be smaller than ALERT_THRESHOLD ({settings.alert_threshold:g})",
        )
    for name in ("alert_min_span_seconds", "flush_seconds"):
        if getattr(settings, name) > settings.window_seconds:
            raise ConfigError(
                OPTION_BY_NAME[name].variable,
                f"must be at most WINDOW_SECONDS ({settings.window_seconds}), got {getattr(settings, name)}",
            )
    if settings.key_display == "hash" and not settings.key_hash_salt:
        raise ConfigError("KEY_HASH_SALT", "is required when KEY_DISPLAY=hash (an unsalted hash of a key is guessable)")


def _check_proposals(settings: Settings) -> None:
    """Each proposal setting on its own (an error names it), then both together (counts, names)."""
    given = (("WHAT_IF_INDEXES", settings.what_if_indexes, None), ("WHAT_IF_KEYS", None, settings.what_if_keys))
    for variable, indexes, keys in (*given, ("WHAT_IF_INDEXES", settings.what_if_indexes, settings.what_if_keys)):
        try:
            parse_proposals(indexes, keys)
        except ProposalError as error:
            raise ConfigError(variable, f"is invalid: {error}") from None
    if settings.proposals and not settings.count_indexes:
        raise ConfigError("COUNT_INDEXES", "must be true to count what-if proposals (they are counted as indexes)")


def load_settings(env: Mapping[str, str]) -> Settings:
    """The function's settings from its environment (read once per container); errors name the variable.

    A variable that is unset or empty takes the setting's default (``Settings``'s own)."""
    given = {option.name: option.parse(env[option.variable]) for option in OPTIONS if _given(env, option)}
    return settings_from(given)


def required_setting(env: Mapping[str, str], name: str) -> str:
    """One text setting of a function that needs no other (the webhook notifier, which has no stats table
    to build ``Settings`` around), parsed by its option; unset is refused naming its variable."""
    option = OPTION_BY_NAME[name]
    value = option.parse(env.get(option.variable))
    if not isinstance(value, str) or not value:
        raise ConfigError(option.variable, f"is required: {option.help}")
    return value


def _given(env: Mapping[str, str], option: Option) -> bool:
    return bool((env.get(option.variable) or "").strip())


def settings_from(values: Mapping[str, Value]) -> Settings:
    """Settings from values already parsed by their options (``Option.parse``: the function's
    environment, or the CLI's flags through argparse); a setting missing or None takes its default.
    Nothing is parsed again: ``Settings`` checks the ranges and the rules between settings."""
    given = {name: value for name, value in values.items() if value is not None}
    given.setdefault("stats_table_name", "")  # refused by Settings, naming STATS_TABLE_NAME
    return Settings(**given)  # type: ignore[arg-type]  # each value typed by its option


def setting_text(value: Value) -> str:
    """A typed setting as the environment spells it (what ``Option.parse`` reads back)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def settings_fields() -> tuple[str, ...]:
    return tuple(item.name for item in fields(Settings))
