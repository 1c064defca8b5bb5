"""The stack's `cdk -c` options: their schema and their documentation.

The function's settings are ``hotkeys.detector.config.OPTIONS``; the options only the stack reads are
``STACK_OPTIONS`` below, parsed by the same ``Option`` code (``infra.options`` reads a context with both).
``CONTEXT_KEYS`` and docs/deploy.md's options table (``options_table``, printed by ``python -m infra.options``)
derive from both.
"""

from __future__ import annotations

from hotkeys.deployment import JUDGE_MEMORY_MB, STARTING_POSITIONS
from hotkeys.detector.config import OPTIONS, Option

# ``-c compliance=controltower``: AWS Control Tower's proactive controls (docs/security.md, docs/decisions.md §70).
CONTROL_TOWER = "controltower"
# CT.CLOUDWATCH.PR.2: a log group is kept at least a year.
COMPLIANT_LOG_RETENTION_DAYS = 365


class ContextError(ValueError):
    """A `-c key=value` option is invalid; the message names it."""


# Which tables to watch: read by source_from_context (rules between them, not one value each).
SOURCE_OPTIONS: tuple[tuple[str, str], ...] = (
    ("tableName, tableNames", "the table(s) to watch (default: a demo table the stack creates)"),
    ("tableStreamArn, tableStreamArns", "their streams, already on with NEW_AND_OLD_IMAGES (one per table)"),
    ("enableStream", "true: the stack turns NEW_AND_OLD_IMAGES streams on where they are off (never off again)"),
    (
        "kinesisStreamArn",
        "read the tables' changes from this Kinesis data stream, which they already send to (Kinesis Data Streams "
        "for DynamoDB; several tables may share it) instead of their DynamoDB streams",
    ),
    (
        "enableKinesis",
        "true: the stack creates a Kinesis data stream (on demand, encrypted, 24 h) and turns Kinesis streaming to "
        "it on for each table (MICROSECOND precision); a deleted stack turns it off again",
    ),
    (
        "kinesisEnhancedFanOut",
        "true (with kinesisStreamArn or enableKinesis): read through an enhanced fan-out consumer of the stream "
        "(dedicated throughput per shard, billed per consumer-shard hour)",
    ),
)
SOURCE_KEYS = (
    "tableName",
    "tableNames",
    "tableStreamArn",
    "tableStreamArns",
    "enableStream",
    "kinesisStreamArn",
    "enableKinesis",
    "kinesisEnhancedFanOut",
    "stackName",
)

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
