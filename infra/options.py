"""What a user can choose about the detector: construct props and `cdk -c` context, read and validated.

The function's settings are ``hotkeys.detector.config.OPTIONS`` (validated here by the function's own
``load_settings``, so a value the function would reject fails the synth with the function's message); the
options only the stack reads are ``option_schema.STACK_OPTIONS``, parsed by the same ``Option`` code.
``python -m infra.options`` prints docs/deploy.md's table of both (``option_schema.options_table``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hotkeys.deployment import JUDGE_MEMORY_MB, STARTING_POSITIONS
from hotkeys.detector.config import OPTION_BY_VARIABLE, ConfigError, Settings, load_settings, setting_text
from infra.arns import key_arn, kinesis_stream_arn, same_environment, secret_arn, stream_arn
from infra.option_schema import (
    COMPLIANT_LOG_RETENTION_DAYS,
    CONTEXT_KEYS,
    CONTROL_TOWER,
    FUNCTION_OPTIONS,
    STACK_OPTION_BY_KEY,
    ContextError,
    options_table,
)

# Lambda's limits on a function's VpcConfig.
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5
_SUBNET = re.compile(r"subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?")
_SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{8}(?:[0-9a-f]{9})?")


@dataclass(frozen=True)
class DetectorOptions:
    """The detector construct's props. ``function`` holds the function's settings by context key."""

    function: Mapping[str, Any] = field(default_factory=dict)
    starting_position: str | None = None  # None: by source, see hotkeys.deployment.reading_plan
    max_record_age_hours: int | None = None
    parallelization_factor: int = 1
    archive_transition_days: int = 30
    archive_expiration_days: int | None = None
    alert_emails: tuple[str, ...] = ()
    # Subscribed to the what-if topic (made only when something is proposed): nobody else is told.
    what_if_emails: tuple[str, ...] = ()
    slack_workspace_id: str | None = None
    slack_channel_id: str | None = None
    slack_webhook_secret_arn: str | None = None
    slack_webhook_key_arn: str | None = None
    table_kms_key_arns: tuple[str, ...] = ()
    # Contributor Insights (throttled-keys mode) on the watched tables and their GSIs where it is off.
    throttled_key_insights: bool = True
    # Why Contributor Insights' reports would expose protected keys (``keys_in_plaintext_concern``), if so.
    plaintext_concern: str | None = None
    # No dashboard, throttle alarms or data-health alarms (docs/cost.md, "The lean deployment").
    lean: bool = False
    judge_memory_mb: int = JUDGE_MEMORY_MB
    # Lambda's own records of each consumer invocation (docs/decisions.md §65).
    consumer_system_log_level: str = "WARN"
    powertools_layer_arn: str | None = None
    log_retention_days: int = 30
    # "controltower": every Control Tower proactive control passes (infra/compliance.py); None: the default.
    compliance: str | None = None
    # Every function's subnets and security groups (None: Lambda's own network).
    vpc_subnet_ids: tuple[str, ...] = ()
    vpc_security_group_ids: tuple[str, ...] = ()
    extra_environment: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def settings(self) -> Settings:
        """The function's settings exactly as it will load them, or ContextError naming the option."""
        unknown = sorted(set(self.function) - {str(option.context_key) for option in FUNCTION_OPTIONS})
        if unknown:
            raise ContextError(f"unknown function option(s): {', '.join(unknown)}")
        environment = {
            option.variable: setting_text(self.function[str(option.context_key)])
            for option in FUNCTION_OPTIONS
            if self.function.get(str(option.context_key)) not in (None, "")
        }
        try:
            return load_settings({**environment, "STATS_TABLE_NAME": "validated-at-synth"})
        except ConfigError as error:
            key = OPTION_BY_VARIABLE[error.variable].context_key
            raise ContextError(f"-c {key}: {error}" if key else str(error)) from None

    @property
    def window_seconds(self) -> int:
        return self.settings.window_seconds

    @property
    def archive_prefix(self) -> str:
        return self.settings.archive_prefix

    def function_environment(self) -> dict[str, str]:
        """Every function setting in effect (not only those chosen), as the function reads it."""
        env = {
            option.variable: setting_text(getattr(self.settings, option.name))
            for option in FUNCTION_OPTIONS
            if getattr(self.settings, option.name) not in (None, "")
        }
        return {**env, **self.extra_environment}

    def validate(self) -> None:
        _ = self.settings
        if self.parallelization_factor != 1:
            raise ContextError(
                "parallelizationFactor must be 1: the detector keeps each shard's figures in Lambda's "
                "tumbling-window state, which needs the shard's records in order in one invocation at a time "
                f"(got {self.parallelization_factor})"
            )
        if self.starting_position is not None and self.starting_position not in STARTING_POSITIONS:
            raise ContextError(f"startingPosition must be TRIM_HORIZON or LATEST, got {self.starting_position!r}")
        if bool(self.slack_workspace_id) != bool(self.slack_channel_id):
            raise ContextError("slackWorkspaceId and slackChannelId go together")
        if self.what_if_emails and not self.settings.proposals:
            raise ContextError("whatIfEmails goes with whatIfIndexes or whatIfKeys (nothing is proposed)")
        if self.archive_expiration_days is not None and self.archive_expiration_days <= self.archive_transition_days:
            # S3 refuses a rule whose expiration does not come after its transition (the deploy fails).
            raise ContextError(
                f"archiveExpirationDays ({self.archive_expiration_days}) must be greater than archiveTransitionDays "
                f"({self.archive_transition_days}): S3 refuses a lifecycle rule that expires objects before it "
                "transitions them; raise archiveExpirationDays or lower archiveTransitionDays"
            )
        if self.slack_webhook_secret_arn:
            secret_arn(self.slack_webhook_secret_arn)
        if self.slack_webhook_key_arn:
            if not self.slack_webhook_secret_arn:
                raise ContextError("slackWebhookKeyArn goes with slackWebhookSecretArn (the key of that secret)")
            key_arn(self.slack_webhook_key_arn, "slackWebhookKeyArn")
        for key in self.table_kms_key_arns:
            key_arn(key)
        self._validate_network()
        if self.compliance is not None:
            self._validate_compliance()

    def _validate_network(self) -> None:
        if (self.vpc_subnet_ids or self.vpc_security_group_ids) and self.compliance is None:
            raise ContextError(f"vpcSubnetIds and vpcSecurityGroupIds go with -c compliance={CONTROL_TOWER}")
        if bool(self.vpc_subnet_ids) != bool(self.vpc_security_group_ids):
            raise ContextError("vpcSubnetIds and vpcSecurityGroupIds go together (a function in a VPC needs both)")
        for option, ids, pattern, most in (
            ("vpcSubnetIds", self.vpc_subnet_ids, _SUBNET, MAX_SUBNETS),
            ("vpcSecurityGroupIds", self.vpc_security_group_ids, _SECURITY_GROUP, MAX_SECURITY_GROUPS),
        ):
            wrong = [text for text in ids if not pattern.fullmatch(text)]
            if wrong:
                raise ContextError(f"-c {option}: {', '.join(map(repr, wrong))} is not an id of that kind")
            if len(set(ids)) != len(ids):
                raise ContextError(f"-c {option} lists an id more than once")
            if len(ids) > most:
                raise ContextError(f"-c {option}: Lambda takes at most {most}, got {len(ids)}")

    def _validate_compliance(self) -> None:
        if self.compliance != CONTROL_TOWER:
            raise ContextError(f"-c compliance must be {CONTROL_TOWER}, got {self.compliance!r}")
        if self.log_retention_days < COMPLIANT_LOG_RETENTION_DAYS:
            raise ContextError(
                f"-c compliance={CONTROL_TOWER} keeps logs at least {COMPLIANT_LOG_RETENTION_DAYS} days "
                f"(CT.CLOUDWATCH.PR.2), but logRetentionDays is {self.log_retention_days}: raise it or leave it out"
            )
        if not self.vpc_subnet_ids:
            raise ContextError(
                f"-c compliance={CONTROL_TOWER} runs every function in your VPC (CT.LAMBDA.PR.3): give "
                "-c vpcSubnetIds=subnet-...,subnet-... and -c vpcSecurityGroupIds=sg-... (private subnets with a "
                "route to the AWS APIs; docs/security.md)"
            )

    def validate_environment(self, region: str | None, account: str | None) -> None:
        """The ARNs given must be where the stack's functions can use them (None: not known at synth): the
        stack grants them in its own account, and sets no resource policy another account's would need."""
        if self.slack_webhook_secret_arn:
            same_environment("slackWebhookSecretArn", secret_arn(self.slack_webhook_secret_arn), region, account)
        if self.slack_webhook_key_arn:
            key = key_arn(self.slack_webhook_key_arn, "slackWebhookKeyArn")
            same_environment("slackWebhookKeyArn", key, region, account)
        for text in self.table_kms_key_arns:
            same_environment("tableKmsKeyArns", key_arn(text), region, account)


# The source modes that read Kinesis Data Streams for DynamoDB instead of the tables' DynamoDB streams: a stream
# the tables already send to (-c kinesisStreamArn), or one the stack creates and turns on (-c enableKinesis).
KINESIS_MODES = ("kinesis", "enable-kinesis")


@dataclass(frozen=True)
class SourceSpec:
    """Which table(s) to watch, from the CDK context, and which change stream to read them from."""

    mode: str  # "demo" | "existing" | "enable" | "kinesis" | "enable-kinesis"
    table_names: tuple[str, ...] = ()
    stream_arns: tuple[str, ...] = ()
    # The Kinesis data stream the tables send to (mode "kinesis"); the stack's own in mode "enable-kinesis".
    kinesis_stream_arn: str | None = None
    # Read the Kinesis stream through an enhanced fan-out consumer (either Kinesis mode).
    enhanced_fan_out: bool = False

    @property
    def kinesis(self) -> bool:
        return self.mode in KINESIS_MODES

    def validate_environment(self, region: str | None, account: str | None) -> None:
        """A stream must be in the stack's region and account: Lambda maps a stream of its own region, and the
        function describes each table by name (its own account and region) for its indexes and TTL attribute."""
        for arn in self.stream_arns:
            same_environment("tableStreamArn", stream_arn(arn), region, account)
        if self.kinesis_stream_arn is not None:
            same_environment("kinesisStreamArn", kinesis_stream_arn(self.kinesis_stream_arn), region, account)


def _get(context: Mapping[str, Any], name: str) -> Any:
    value = context.get(name)
    return None if value in (None, "") else value


def _list(context: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = _get(context, name)
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(str(item).strip() for item in items if str(item).strip())


# An address SNS can deliver to: a local part, "@", a domain with a dot; no spaces or commas.
_EMAIL = re.compile(r"[^@\s,]+@[^@\s,]+\.[^@\s,]+")


def keys_in_plaintext_concern(context: Mapping[str, Any]) -> str | None:
    """Why Contributor Insights' reports would expose what the user protects, or None. DynamoDB's API
    reference (UpdateContributorInsights): its graphs "display the partition key and (if applicable) sort
    key ... in plaintext. If you require the use of ... KMS to encrypt this table's partition key and sort
    key data ..., you should not enable CloudWatch Contributor Insights for DynamoDB for this table"."""
    if _list(context, "tableKmsKeyArns"):
        return "the tables are encrypted with customer-managed KMS keys (-c tableKmsKeyArns)"
    if str(_get(context, "keyDisplay") or "").lower() == "hash":
        return "alerts hash the keys (-c keyDisplay=hash)"
    return None


def _throttled_key_insights(context: Mapping[str, Any]) -> bool:
    """On by default; off by default in a lean deployment, and where its reports would show keys in plaintext
    (``keys_in_plaintext_concern``), unless asked for (the stack then warns at synth, for the latter)."""
    if _get(context, "throttledKeyInsights") is None and (
        _stack_option(context, "lean") or keys_in_plaintext_concern(context)
    ):
        return False
    return bool(_stack_option(context, "throttledKeyInsights"))


def _emails(context: Mapping[str, Any], key: str = "alertEmails") -> tuple[str, ...]:
    found = _list(context, key)
    wrong = [address for address in found if not _EMAIL.fullmatch(address)]
    if wrong:
        raise ContextError(f"-c {key}: {', '.join(map(repr, wrong))} is not an e-mail address")
    if len(set(found)) != len(found):
        raise ContextError(f"-c {key} lists an address more than once")
    return found


def _flag(context: Mapping[str, Any], name: str) -> bool:
    value = _get(context, name)
    return str(value).lower() in ("true", "1", "yes") if value is not None else False


# What the pinned CDK CLI itself saves in cdk.context.json and passes to the app (`cdk acknowledge`,
# `cdk cli-telemetry`); its other keys hold a ``:`` or start with ``@`` (below).
CDK_CLI_KEYS = ("acknowledged-issue-numbers", "cli-telemetry")


def refuse_unknown(keys: Iterable[str]) -> None:
    """A ``-c`` key the stack does not read is refused with the closest one it does (``-c tablename=orders``
    would otherwise deploy the demo table). CDK's own keys pass: feature flags ``@aws-cdk/...``, the
    CLI's ``aws:cdk:...``, cached lookups ``...:account=...``, and ``CDK_CLI_KEYS``."""
    known = {key.lower(): key for key in CONTEXT_KEYS}
    for key in sorted(keys):
        if key in CONTEXT_KEYS or key in CDK_CLI_KEYS or ":" in key or key.startswith("@"):
            continue
        close = known.get(key.lower())
        if close is None:
            matches = difflib.get_close_matches(key.lower(), list(known), n=1)
            close = known[matches[0]] if matches else None
        hint = f"; did you mean -c {close}?" if close else ""
        raise ContextError(f"-c {key}: not an option of this stack{hint} (docs/deploy.md#context-options lists them)")


def source_from_context(context: Mapping[str, Any]) -> SourceSpec:
    names = _list(context, "tableNames") or _list(context, "tableName")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ContextError(f"-c tableNames lists {', '.join(repeated)} more than once")
    arns = _list(context, "tableStreamArns") or _list(context, "tableStreamArn")
    if _get(context, "kinesisStreamArn") is not None or _flag(context, "enableKinesis"):
        return _kinesis_source(context, names, arns)
    if _flag(context, "kinesisEnhancedFanOut"):
        raise ContextError(
            "-c kinesisEnhancedFanOut reads a Kinesis data stream: it goes with -c kinesisStreamArn=... or "
            "-c enableKinesis=true"
        )
    if not names:
        if arns or _flag(context, "enableStream"):
            raise ContextError("-c tableStreamArn / enableStream need -c tableName (or tableNames)")
        return SourceSpec(mode="demo")
    if arns:
        if len(arns) != len(names):
            raise ContextError("give one stream ARN per table name (-c tableStreamArns=arn1,arn2)")
        for name, arn in zip(names, arns, strict=True):
            stream_arn(arn)
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


def _kinesis_source(context: Mapping[str, Any], names: tuple[str, ...], arns: tuple[str, ...]) -> SourceSpec:
    """-c kinesisStreamArn or -c enableKinesis: one change stream for every table, and no other source with it."""
    given = _get(context, "kinesisStreamArn")
    chosen = "-c kinesisStreamArn" if given is not None else "-c enableKinesis=true"
    if given is not None and _flag(context, "enableKinesis"):
        raise ContextError(
            "-c kinesisStreamArn (a stream the tables already send to) and -c enableKinesis=true (a stream the "
            "stack creates) are two sources: give one"
        )
    if arns or _flag(context, "enableStream"):
        raise ContextError(
            f"{chosen} reads the tables' changes from Kinesis, -c tableStreamArn(s) / enableStream from their "
            "DynamoDB streams: give one source (each change would otherwise be counted twice)"
        )
    if not names:
        raise ContextError(
            f"{chosen} needs -c tableName (or tableNames): the tables whose changes go to the Kinesis stream "
            "(the demo table is read from its DynamoDB stream)"
        )
    enhanced_fan_out = _flag(context, "kinesisEnhancedFanOut")
    if given is not None:
        kinesis_stream_arn(str(given))
        return SourceSpec("kinesis", names, kinesis_stream_arn=str(given), enhanced_fan_out=enhanced_fan_out)
    return SourceSpec("enable-kinesis", names, enhanced_fan_out=enhanced_fan_out)


def _stack_option(context: Mapping[str, Any], key: str) -> Any:
    option = STACK_OPTION_BY_KEY[key]
    value = _get(context, key)
    try:
        return option.parse(None if value is None else setting_text(value))
    except ConfigError as error:
        raise ContextError(f"-c {error}") from None


def _log_retention_days(context: Mapping[str, Any]) -> int:
    """30 days by default; a year in compliance mode (an explicit shorter one is refused there, by ``validate``)."""
    if _get(context, "logRetentionDays") is None and _get(context, "compliance") is not None:
        return COMPLIANT_LOG_RETENTION_DAYS
    return int(_stack_option(context, "logRetentionDays"))


def options_from_context(context: Mapping[str, Any]) -> DetectorOptions:
    position = _stack_option(context, "startingPosition")
    options = DetectorOptions(
        function={key: context[key] for key in (str(o.context_key) for o in FUNCTION_OPTIONS) if key in context},
        starting_position=position,
        max_record_age_hours=_stack_option(context, "maxRecordAgeHours"),
        parallelization_factor=_stack_option(context, "parallelizationFactor"),
        archive_transition_days=_stack_option(context, "archiveTransitionDays"),
        archive_expiration_days=_stack_option(context, "archiveExpirationDays"),
        alert_emails=_emails(context),
        what_if_emails=_emails(context, "whatIfEmails"),
        slack_workspace_id=_stack_option(context, "slackWorkspaceId"),
        slack_channel_id=_stack_option(context, "slackChannelId"),
        slack_webhook_secret_arn=_stack_option(context, "slackWebhookSecretArn"),
        slack_webhook_key_arn=_stack_option(context, "slackWebhookKeyArn"),
        table_kms_key_arns=_list(context, "tableKmsKeyArns"),
        throttled_key_insights=_throttled_key_insights(context),
        plaintext_concern=keys_in_plaintext_concern(context),
        lean=_stack_option(context, "lean"),
        judge_memory_mb=_stack_option(context, "judgeMemoryMb"),
        consumer_system_log_level=_stack_option(context, "consumerSystemLogLevel"),
        powertools_layer_arn=_stack_option(context, "powertoolsLayerArn"),
        log_retention_days=_log_retention_days(context),
        compliance=_stack_option(context, "compliance"),
        vpc_subnet_ids=_list(context, "vpcSubnetIds"),
        vpc_security_group_ids=_list(context, "vpcSecurityGroupIds"),
    )
    options.validate()
    return options


if __name__ == "__main__":
    print(options_table())
