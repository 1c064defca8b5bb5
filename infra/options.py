"""What a user can choose about the detector: construct props and `cdk -c` context.

The function's settings are ``hotkeys.detector.config.OPTIONS`` (validated here by the
function's own ``load_settings``, so a value the function would reject fails the synth with
the function's message); the options only the stack reads are ``STACK_OPTIONS`` below, parsed
by the same ``Option`` code. ``CONTEXT_KEYS`` and docs/deploy.md's options table derive from both.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hotkeys.deployment import JUDGE_MEMORY_MB, STARTING_POSITIONS
from hotkeys.detector.config import (
    OPTION_BY_VARIABLE,
    OPTIONS,
    ConfigError,
    Option,
    Settings,
    load_settings,
    setting_text,
)

# ``-c compliance=controltower``: AWS Control Tower's proactive controls (docs/security.md, docs/decisions.md §70).
CONTROL_TOWER = "controltower"
# CT.CLOUDWATCH.PR.2: a log group is kept at least a year.
COMPLIANT_LOG_RETENTION_DAYS = 365
# Lambda's limits on a function's VpcConfig.
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5


class ContextError(ValueError):
    """A `-c key=value` option is invalid; the message names it."""


# Which tables to watch: read by source_from_context (rules between them, not one value each).
SOURCE_OPTIONS: tuple[tuple[str, str], ...] = (
    ("tableName, tableNames", "the table(s) to watch (default: a demo table the stack creates)"),
    ("tableStreamArn, tableStreamArns", "their streams, already on with NEW_AND_OLD_IMAGES (one per table)"),
    ("enableStream", "true: the stack turns NEW_AND_OLD_IMAGES streams on where they are off (never off again)"),
)
SOURCE_KEYS = ("tableName", "tableNames", "tableStreamArn", "tableStreamArns", "enableStream", "stackName")

STACK_OPTIONS: tuple[Option, ...] = (
    Option(
        "starting_position",
        "startingPosition",
        "choice",
        None,
        "where a new mapping starts reading: LATEST or TRIM_HORIZON",
        choices=STARTING_POSITIONS,
        context_key="startingPosition",
        default_text="LATEST (demo table: TRIM_HORIZON)",
    ),
    Option(
        "max_record_age_hours",
        "maxRecordAgeHours",
        "int",
        None,
        "a record not processed after this many hours goes to the DLQ (Lambda's limit is 7 days)",
        low=1,
        high=168,
        context_key="maxRecordAgeHours",
        default_text="6 (TRIM_HORIZON on an existing table: 24)",
    ),
    Option(
        "parallelization_factor",
        "parallelizationFactor",
        "int",
        1,
        "must be 1: per-shard state needs the shard's records in order, one invocation at a time",
        low=1,
        high=10,
        context_key="parallelizationFactor",
    ),
    Option(
        "archive_transition_days",
        "archiveTransitionDays",
        "int",
        30,
        "archive objects of 128 KB or more move to Glacier Instant Retrieval after this many days (smaller "
        "ones stay in S3 Standard: Glacier IR bills at least 128 KB an object)",
        low=1,
        high=3650,
        context_key="archiveTransitionDays",
    ),
    Option(
        "archive_expiration_days",
        "archiveExpirationDays",
        "int",
        None,
        "archived items are deleted after this many days (default: kept); more than archiveTransitionDays",
        low=1,
        high=36_500,
        context_key="archiveExpirationDays",
    ),
    Option(
        "alert_emails",
        "alertEmails",
        "text",
        None,
        "comma-separated e-mail addresses subscribed to the alert topic",
        context_key="alertEmails",
    ),
    Option(
        "what_if_emails",
        "whatIfEmails",
        "text",
        None,
        "comma-separated e-mail addresses subscribed to the what-if topic (with whatIfIndexes or whatIfKeys)",
        context_key="whatIfEmails",
    ),
    Option(
        "slack_workspace_id",
        "slackWorkspaceId",
        "text",
        None,
        "AWS Chatbot: the Slack workspace (with slackChannelId)",
        context_key="slackWorkspaceId",
    ),
    Option(
        "slack_channel_id",
        "slackChannelId",
        "text",
        None,
        "AWS Chatbot: the Slack channel (with slackWorkspaceId)",
        context_key="slackChannelId",
    ),
    Option(
        "slack_webhook_secret_arn",
        "slackWebhookSecretArn",
        "text",
        None,
        "a Secrets Manager secret holding a Slack incoming-webhook URL (no Chatbot needed)",
        context_key="slackWebhookSecretArn",
    ),
    Option(
        "slack_webhook_key_arn",
        "slackWebhookKeyArn",
        "text",
        None,
        "the customer-managed KMS key that encrypts that secret, if it is not aws/secretsmanager "
        "(the subscriber may decrypt through Secrets Manager only)",
        context_key="slackWebhookKeyArn",
    ),
    Option(
        "table_kms_key_arns",
        "tableKmsKeyArns",
        "text",
        None,
        "comma-separated ARNs of the customer-managed KMS keys the watched tables are encrypted with "
        "(the consumer may decrypt through DynamoDB only)",
        context_key="tableKmsKeyArns",
    ),
    Option(
        "throttled_key_insights",
        "throttledKeyInsights",
        "flag",
        True,
        "Contributor Insights in THROTTLED_KEYS mode on every watched table and GSI where it is off (a table or "
        "index already in ACCESSED_AND_THROTTLED_KEYS mode is left so); false: leave Contributor Insights alone. "
        "Its reports show keys in plaintext: off by default with tableKmsKeyArns or keyDisplay=hash, and a synth "
        "warning if set true there (docs/decisions.md §67)",
        context_key="throttledKeyInsights",
        default_text="true (false with lean, tableKmsKeyArns or keyDisplay=hash)",
    ),
    Option(
        "lean",
        "lean",
        "flag",
        False,
        "true: the lean deployment (docs/cost.md, `hotkeys cost --lean`): no dashboard, no DynamoDB throttle alarms "
        "nor their explainer, Contributor Insights off unless throttledKeyInsights=true, and of the consumer's "
        "alarms only iterator age, dead letters and errors (the judge's and the alert subscribers' stay)",
        context_key="lean",
    ),
    Option(
        "judge_memory_mb",
        "judgeMemoryMb",
        "int",
        JUDGE_MEMORY_MB,
        "the judge function's memory (its CPU share): it parses every shard's heads each look; raise it for "
        "thousands of shards (docs/cost.md, 'The judge')",
        low=128,
        high=10_240,
        context_key="judgeMemoryMb",
    ),
    Option(
        "consumer_system_log_level",
        "consumerSystemLogLevel",
        "choice",
        "WARN",
        "the consumer's system log level: WARN keeps Lambda's start and report records (two per invocation, "
        "nearly all of its log bytes) out of CloudWatch Logs; INFO is Lambda's default (docs/cost.md)",
        choices=("WARN", "INFO", "DEBUG"),
        context_key="consumerSystemLogLevel",
    ),
    Option(
        "powertools_layer_arn",
        "powertoolsLayerArn",
        "text",
        None,
        "override the Powertools layer (default: AWS's public SSM parameter for the tested release)",
        context_key="powertoolsLayerArn",
    ),
    Option(
        "log_retention_days",
        "logRetentionDays",
        "int",
        30,
        "days the functions' logs are kept (compliance=controltower: at least 365)",
        low=1,
        high=3653,
        context_key="logRetentionDays",
        default_text="30 (compliance=controltower: 365)",
    ),
    Option(
        "compliance",
        "compliance",
        "choice",
        None,
        "controltower: the stack passes every AWS Control Tower proactive control that cdk-validator-cfnguard "
        "bundles (a KMS key of the stack's for logs and the archive, logs kept a year, versioned and locked "
        "buckets, functions in your subnets; docs/security.md); needs vpcSubnetIds and vpcSecurityGroupIds",
        choices=(CONTROL_TOWER,),
        context_key="compliance",
    ),
    Option(
        "vpc_subnet_ids",
        "vpcSubnetIds",
        "text",
        None,
        "with compliance=controltower: comma-separated subnets every function of the stack runs in (at most 16, "
        "private, with a route to the AWS APIs the functions call: docs/security.md)",
        context_key="vpcSubnetIds",
    ),
    Option(
        "vpc_security_group_ids",
        "vpcSecurityGroupIds",
        "text",
        None,
        "with compliance=controltower: comma-separated security groups of those functions (at most 5)",
        context_key="vpcSecurityGroupIds",
    ),
)
STACK_OPTION_BY_KEY = {option.variable: option for option in STACK_OPTIONS}
FUNCTION_OPTIONS = tuple(option for option in OPTIONS if option.context_key)
CONTEXT_KEYS = SOURCE_KEYS + tuple(str(o.context_key) for o in FUNCTION_OPTIONS) + tuple(STACK_OPTION_BY_KEY)


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


@dataclass(frozen=True)
class Arn:
    partition: str
    service: str
    region: str
    account: str
    resource: str
    text: str


def parse_arn(text: str) -> Arn | None:
    parts = text.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn":
        return None
    _, partition, service, region, account, resource = parts
    return Arn(partition, service, region, account, resource, text)


_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")
_SUBNET = re.compile(r"subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?")
_SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{8}(?:[0-9a-f]{9})?")
_ACCOUNT = re.compile(r"\d{12}")


def _located(option: str, text: str, service: str, resource: re.Pattern[str], example: str) -> Arn:
    arn = parse_arn(text)
    if (
        arn is None
        or arn.service != service
        or not _REGION.fullmatch(arn.region)
        or not _ACCOUNT.fullmatch(arn.account)
        or not resource.fullmatch(arn.resource)
    ):
        raise ContextError(f"{option}: {text!r} is not a {service} ARN of the form {example}")
    return arn


def secret_arn(text: str) -> Arn:
    """A Secrets Manager secret ARN, complete (name-AbCdEf) or partial (the name alone)."""
    return _located(
        "slackWebhookSecretArn",
        text,
        "secretsmanager",
        re.compile(r"secret:[A-Za-z0-9/_+=.@-]+"),
        "arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf",
    )


# Secrets Manager appends a hyphen and six random characters to a secret's name in its ARN.
COMPLETE_SECRET_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")


def secret_resource(text: str) -> str:
    """What IAM must allow for a secret ARN as given: a complete ARN is exact; a partial ARN (the name
    alone) matches the secret's complete ARN only with the six-character wildcard AWS documents."""
    return text if COMPLETE_SECRET_SUFFIX.search(text) else f"{text}-??????"


def key_arn(text: str, option: str = "tableKmsKeyArns") -> Arn:
    """A KMS key ARN (IAM policies name keys by key ARN; an alias ARN would grant nothing)."""
    return _located(
        option,
        text,
        "kms",
        re.compile(r"key/[A-Za-z0-9-]+"),
        "arn:aws:kms:REGION:ACCOUNT:key/KEY-ID",
    )


def stream_arn(text: str) -> Arn:
    """A DynamoDB stream ARN (the table's ARN is the part before /stream/)."""
    return _located(
        "tableStreamArn",
        text,
        "dynamodb",
        re.compile(r"table/[A-Za-z0-9_.-]+/stream/.+"),
        "arn:aws:dynamodb:REGION:ACCOUNT:table/NAME/stream/LABEL",
    )


def concrete(value: str) -> str | None:
    """The stack's account or region if the synth knows it (the CDK CLI sets both from the profile), else None."""
    from aws_cdk import Token

    return None if Token.is_unresolved(value) else value


def same_environment(option: str, arn: Arn, region: str | None, account: str | None) -> None:
    """``arn`` in the stack's region and account (None: not known at synth)."""
    if region is not None and arn.region != region:
        raise ContextError(
            f"{option}: {arn.text!r} is in region {arn.region}, but the stack deploys to {region}; "
            f"deploy to {arn.region} (AWS_REGION={arn.region}) or name a resource of {region}"
        )
    if account is not None and arn.account != account:
        raise ContextError(
            f"{option}: {arn.text!r} is in account {arn.account}, but the stack deploys to account {account}; "
            f"deploy with credentials of {arn.account} or name a resource of {account}"
        )


@dataclass(frozen=True)
class SourceSpec:
    """Which table(s) to watch, from the CDK context."""

    mode: str  # "demo" | "existing" | "enable"
    table_names: tuple[str, ...] = ()
    stream_arns: tuple[str, ...] = ()

    def validate_environment(self, region: str | None, account: str | None) -> None:
        """A stream must be in the stack's region and account: Lambda maps a stream of its own region, and the
        function describes each table by name (its own account and region) for its indexes and TTL attribute."""
        for arn in self.stream_arns:
            same_environment("tableStreamArn", stream_arn(arn), region, account)


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


def options_table() -> str:
    """docs/deploy.md's table of context options (a test keeps the page equal to it)."""
    rows = ["| option | default | meaning |", "|---|---|---|"]
    rows += [f"| {', '.join(f'`{k}`' for k in keys.split(', '))} | — | {text} |" for keys, text in SOURCE_OPTIONS]
    for option in STACK_OPTIONS:
        rows.append(f"| `{option.context_key}` | {option.documented_default} | {option.help} |")
    for option in FUNCTION_OPTIONS:
        bounds = f" (between {option.documented_range})" if option.documented_range else ""
        rows.append(
            f"| `{option.context_key}` | {option.documented_default} | {option.help}{bounds}; "
            f"the function's `{option.variable}` |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(options_table())
