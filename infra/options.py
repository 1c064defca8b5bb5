"""What a user can choose about the detector: construct props and `cdk -c` context, in one typed place."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from infra.settings import (
    DEFAULT_ARCHIVE_PREFIX,
    DEFAULT_ARCHIVE_TRANSITION_DAYS,
    DEFAULT_STATS_RETENTION_DAYS,
    DEFAULT_WINDOW_SECONDS,
    STARTING_POSITIONS,
)


class ContextError(ValueError):
    """A `-c key=value` option is invalid; the message names it."""


# The function's environment variable for each option it receives, and the option's context key.
FUNCTION_VARIABLES = {
    "WINDOW_SECONDS": ("window_seconds", "windowSeconds"),
    "PARTITION_WCU_LIMIT": ("partition_wcu_limit", "partitionWcuLimit"),
    "ALERT_THRESHOLD": ("alert_threshold", "alertThreshold"),
    "ALERT_REMINDER_SECONDS": ("alert_reminder_seconds", "alertReminderSeconds"),
    "SHARE_THRESHOLD": ("share_threshold", "shareThreshold"),
    "SHARE_MIN_WCU": ("share_min_wcu", "shareMinWcu"),
    "STATS_RETENTION_DAYS": ("stats_retention_days", "statsRetentionDays"),
    "ARCHIVE_PREFIX": ("archive_prefix", "archivePrefix"),
    "KEY_DISPLAY": ("key_display", "keyDisplay"),
    "KEY_HASH_SALT": ("key_hash_salt", "keyHashSalt"),
}


@dataclass(frozen=True)
class DetectorOptions:
    window_seconds: int = DEFAULT_WINDOW_SECONDS
    partition_wcu_limit: int = 1000
    alert_threshold: float = 0.8
    share_threshold: float = 0.10
    share_min_wcu: int = 6000
    alert_reminder_seconds: int = 900
    stats_retention_days: int = DEFAULT_STATS_RETENTION_DAYS
    archive_prefix: str = DEFAULT_ARCHIVE_PREFIX
    archive_transition_days: int = DEFAULT_ARCHIVE_TRANSITION_DAYS
    archive_expiration_days: int | None = None
    alert_emails: tuple[str, ...] = ()
    slack_workspace_id: str | None = None
    slack_channel_id: str | None = None
    slack_webhook_secret_arn: str | None = None
    key_display: str = "raw"
    key_hash_salt: str | None = None
    powertools_layer_arn: str | None = None
    log_retention_days: int = 30
    parallelization_factor: int = 1
    starting_position: str | None = None  # None: by source, see infra.settings.reading_plan
    max_record_age_hours: int | None = None
    extra_environment: Mapping[str, str] = field(default_factory=dict)

    def function_environment(self) -> dict[str, str]:
        """The detector function's settings, as the Lambda reads them (``hotkeys.detector.config.load_settings``)."""
        env = {
            name: str(getattr(self, attribute))
            for name, (attribute, _key) in FUNCTION_VARIABLES.items()
            if getattr(self, attribute) is not None
        }
        return {**env, **self.extra_environment}

    def validate(self) -> None:
        if not 1 <= self.window_seconds <= 900:
            raise ContextError("windowSeconds must be between 1 and 900 (Lambda's tumbling window limit)")
        if self.parallelization_factor != 1:
            raise ContextError(
                "parallelizationFactor must be 1: the detector keeps each shard's figures in Lambda's "
                "tumbling-window state, which needs the shard's records in order in one invocation at a time "
                f"(got {self.parallelization_factor})"
            )
        if self.starting_position is not None and self.starting_position not in STARTING_POSITIONS:
            raise ContextError(f"startingPosition must be TRIM_HORIZON or LATEST, got {self.starting_position!r}")
        if self.max_record_age_hours is not None and not 1 <= self.max_record_age_hours <= 168:
            raise ContextError("maxRecordAgeHours must be between 1 and 168 (Lambda's limit is 7 days)")
        if not 0 < self.alert_threshold <= 1:
            raise ContextError("alertThreshold must be in (0, 1]")
        if bool(self.slack_workspace_id) != bool(self.slack_channel_id):
            raise ContextError("slackWorkspaceId and slackChannelId go together")
        if self.slack_webhook_secret_arn and not self.slack_webhook_secret_arn.startswith("arn:"):
            raise ContextError("slackWebhookSecretArn must be a Secrets Manager secret ARN")
        if self.key_display not in ("raw", "hash"):
            raise ContextError("keyDisplay must be raw or hash")
        if self.key_display == "hash" and not self.key_hash_salt:
            raise ContextError("keyDisplay=hash needs -c keyHashSalt=<a long random string> (kept out of alerts)")
        self._validate_as_the_function_will()

    def _validate_as_the_function_will(self) -> None:
        """A value the function would reject at every invocation fails the synth, with its message."""
        from hotkeys.detector.config import ConfigError, load_settings

        try:
            load_settings({**self.function_environment(), "STATS_TABLE_NAME": "validated-at-synth"})
        except ConfigError as error:
            message = str(error)
            keys = [key for name, (_attr, key) in FUNCTION_VARIABLES.items() if message.startswith(name)]
            raise ContextError(f"-c {keys[0] if keys else '?'}: {message}" if keys else message) from None


@dataclass(frozen=True)
class SourceSpec:
    """Which table(s) to watch, from the CDK context."""

    mode: str  # "demo" | "existing" | "enable"
    table_names: tuple[str, ...] = ()
    stream_arns: tuple[str, ...] = ()


def _get(context: Mapping[str, Any], name: str) -> Any:
    value = context.get(name)
    return None if value in (None, "") else value


def _int(context: Mapping[str, Any], name: str, default: int) -> int:
    value = _get(context, name)
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ContextError(f"-c {name} must be a whole number, got {value!r}") from None


def _float(context: Mapping[str, Any], name: str, default: float) -> float:
    value = _get(context, name)
    if value is None:
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ContextError(f"-c {name} must be a number, got {value!r}") from None


def _list(context: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = _get(context, name)
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


def _flag(context: Mapping[str, Any], name: str) -> bool:
    value = _get(context, name)
    return str(value).lower() in ("true", "1", "yes") if value is not None else False


def source_from_context(context: Mapping[str, Any]) -> SourceSpec:
    names = _list(context, "tableNames") or _list(context, "tableName")
    arns = _list(context, "tableStreamArns") or _list(context, "tableStreamArn")
    if not names:
        if arns or _flag(context, "enableStream"):
            raise ContextError("-c tableStreamArn / enableStream need -c tableName (or tableNames)")
        return SourceSpec(mode="demo")
    if arns:
        if len(arns) != len(names):
            raise ContextError("give one stream ARN per table name (-c tableStreamArns=arn1,arn2)")
        for name, arn in zip(names, arns, strict=True):
            if f":table/{name}/stream/" not in arn:
                raise ContextError(f"stream ARN {arn!r} does not belong to table {name!r}")
        return SourceSpec(mode="existing", table_names=names, stream_arns=arns)
    # Changing a table (turning its stream on) is never implied: it takes an explicit request.
    if _flag(context, "enableStream"):
        return SourceSpec(mode="enable", table_names=names)
    if len(names) > 1:
        raise ContextError(
            "-c tableNames needs -c tableStreamArns=arn1,arn2 (streams already on) or -c enableStream=true "
            "(the stack turns NEW_AND_OLD_IMAGES streams on where they are off)"
        )
    raise ContextError("-c tableName needs -c tableStreamArn=... (stream already on) or -c enableStream=true")


def options_from_context(context: Mapping[str, Any]) -> DetectorOptions:
    expiration = _get(context, "archiveExpirationDays")
    options = DetectorOptions(
        window_seconds=_int(context, "windowSeconds", DEFAULT_WINDOW_SECONDS),
        partition_wcu_limit=_int(context, "partitionWcuLimit", 1000),
        alert_threshold=_float(context, "alertThreshold", 0.8),
        share_threshold=_float(context, "shareThreshold", 0.10),
        share_min_wcu=_int(context, "shareMinWcu", 6000),
        alert_reminder_seconds=_int(context, "alertReminderSeconds", 900),
        stats_retention_days=_int(context, "statsRetentionDays", DEFAULT_STATS_RETENTION_DAYS),
        archive_transition_days=_int(context, "archiveTransitionDays", DEFAULT_ARCHIVE_TRANSITION_DAYS),
        archive_expiration_days=_int(context, "archiveExpirationDays", 0) if expiration is not None else None,
        alert_emails=_list(context, "alertEmails"),
        slack_workspace_id=_get(context, "slackWorkspaceId"),
        slack_channel_id=_get(context, "slackChannelId"),
        slack_webhook_secret_arn=_get(context, "slackWebhookSecretArn"),
        key_display=str(_get(context, "keyDisplay") or "raw"),
        key_hash_salt=_get(context, "keyHashSalt"),
        powertools_layer_arn=_get(context, "powertoolsLayerArn"),
        parallelization_factor=_int(context, "parallelizationFactor", 1),
        starting_position=str(_get(context, "startingPosition")).upper() if _get(context, "startingPosition") else None,
        max_record_age_hours=_int(context, "maxRecordAgeHours", 0) or None,
    )
    options.validate()
    return options
