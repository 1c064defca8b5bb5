"""Options a first deploy would only find wrong at deploy or run time are refused at synth, naming the option."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from infra.arns import secret_resource
from infra.option_schema import ContextError
from infra.options import DetectorOptions, options_from_context, source_from_context

pytestmark = pytest.mark.infra
STREAM = "arn:aws:dynamodb:eu-west-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"
SECRET = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hotkeys/slack-webhook-AbCdEf"
KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        # S3 refuses an expiration that does not come after the rule's transition
        (
            {"archiveExpirationDays": "10"},
            r"archiveExpirationDays \(10\) must be greater than archiveTransitionDays \(30\)",
        ),
        ({"archiveExpirationDays": "30"}, "archiveExpirationDays"),
        ({"archiveExpirationDays": "20", "archiveTransitionDays": "20"}, "archiveTransitionDays"),
        ({"slackWebhookSecretArn": "hotkeys/slack-webhook"}, "slackWebhookSecretArn: 'hotkeys/slack-webhook' is not"),
        ({"slackWebhookSecretArn": "arn:aws:sns:eu-west-1:111122223333:secret:x"}, "slackWebhookSecretArn"),
        ({"slackWebhookSecretArn": "arn:aws:secretsmanager:REGION:ACCOUNT:secret:x-AbCdEf"}, "slackWebhookSecretArn"),
        ({"tableKmsKeyArns": "arn:aws:kms:eu-west-1:111122223333:alias/orders"}, "tableKmsKeyArns"),
        ({"slackWebhookSecretArn": SECRET, "slackWebhookKeyArn": "alias/aws/secretsmanager"}, "slackWebhookKeyArn"),
        ({"slackWebhookKeyArn": KEY}, "slackWebhookKeyArn goes with slackWebhookSecretArn"),
    ],
)
def test_options_a_deploy_would_reject_are_refused_naming_the_option(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        options_from_context(context)


def test_an_expiration_after_the_transition_is_accepted() -> None:
    options = options_from_context({"archiveExpirationDays": "31"})
    assert (options.archive_transition_days, options.archive_expiration_days) == (30, 31)


@pytest.mark.parametrize(
    ("arn", "message"),
    [
        (
            STREAM.replace("eu-west-1", "us-east-1"),
            "tableStreamArn: .* is in region us-east-1, but the stack deploys to eu-west-1",
        ),
        (
            STREAM.replace("111122223333", "444455556666"),
            "tableStreamArn: .* is in account 444455556666, but the stack",
        ),
    ],
)
def test_a_stream_of_another_region_or_account_is_refused(arn: str, message: str) -> None:
    source = source_from_context({"tableName": "orders", "tableStreamArn": arn})
    with pytest.raises(ContextError, match=message):
        source.validate_environment("eu-west-1", "111122223333")
    # Without a concrete environment (python app.py) nothing is known to compare with
    source.validate_environment(None, None)


def test_a_stream_arn_that_is_not_one_is_refused() -> None:
    with pytest.raises(ContextError, match="tableStreamArn: 'orders' is not a dynamodb ARN"):
        source_from_context({"tableName": "orders", "tableStreamArn": "orders"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (DetectorOptions(slack_webhook_secret_arn=SECRET.replace("eu-west-1", "eu-west-2")), "slackWebhookSecretArn"),
        (DetectorOptions(table_kms_key_arns=(KEY.replace("eu-west-1", "us-west-2"),)), "tableKmsKeyArns"),
        (DetectorOptions(table_kms_key_arns=(KEY.replace("111122223333", "444455556666"),)), "tableKmsKeyArns"),
        (
            DetectorOptions(
                slack_webhook_secret_arn=SECRET, slack_webhook_key_arn=KEY.replace("eu-west-1", "eu-west-3")
            ),
            "slackWebhookKeyArn",
        ),
        (
            DetectorOptions(slack_webhook_secret_arn=SECRET.replace("111122223333", "444455556666")),
            "slackWebhookSecretArn: .* is in account 444455556666",
        ),
        (
            DetectorOptions(
                slack_webhook_secret_arn=SECRET, slack_webhook_key_arn=KEY.replace("111122223333", "444455556666")
            ),
            "slackWebhookKeyArn: .* is in account 444455556666",
        ),
    ],
)
def test_secrets_and_keys_must_be_where_the_functions_run(options: DetectorOptions, message: str) -> None:
    options.validate()
    with pytest.raises(ContextError, match=message):
        options.validate_environment("eu-west-1", "111122223333")


def test_the_stack_checks_stream_arns_against_the_environment_the_cli_gives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the environment the CDK CLI sets from a profile in us-east-1
    from infra.app_factory import build_app

    monkeypatch.setenv("CDK_DEFAULT_ACCOUNT", "111122223333")
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-east-1")
    # When the stack is built for docs/deploy.md's eu-west-1 stream, then it refuses, naming the option
    with pytest.raises(
        ContextError, match=r"tableStreamArn: .* is in region eu-west-1, but the stack deploys to us-east-1"
    ):
        build_app({"tableName": "orders", "tableStreamArn": STREAM}, outdir=tempfile.mkdtemp(prefix="cdk-region-"))


@pytest.mark.parametrize(
    ("given", "granted"),
    [
        (SECRET, SECRET),  # complete: exactly that secret
        # partial (the name alone): the secret's complete ARN is the name plus a hyphen and 6 characters
        (SECRET.removesuffix("-AbCdEf"), SECRET.removesuffix("-AbCdEf") + "-??????"),
        (
            "arn:aws:secretsmanager:eu-west-1:111122223333:secret:webhook",
            "arn:aws:secretsmanager:eu-west-1:111122223333:secret:webhook-??????",
        ),
    ],
)
def test_the_webhook_secret_grant_covers_complete_and_partial_arns(given: str, granted: str) -> None:
    assert secret_resource(given) == granted


COMPLIANCE = {
    "compliance": "controltower",
    "vpcSubnetIds": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
    "vpcSecurityGroupIds": "sg-0123456789abcdef0",
}


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"compliance": "nist"}, "compliance must be one of controltower, got .nist."),
        # CT.LAMBDA.PR.3 cannot pass without the user's network
        ({"compliance": "controltower"}, "runs every function in your VPC .* vpcSubnetIds"),
        # CT.CLOUDWATCH.PR.2: a year of logs at least
        ({**COMPLIANCE, "logRetentionDays": "30"}, r"at least 365 days \(CT.CLOUDWATCH.PR.2\), but logRetentionDays"),
        ({"vpcSubnetIds": "subnet-0123456789abcdef0", "vpcSecurityGroupIds": "sg-01234567"}, "go with -c compliance"),
        ({**COMPLIANCE, "vpcSecurityGroupIds": ""}, "vpcSubnetIds and vpcSecurityGroupIds go together"),
        ({**COMPLIANCE, "vpcSubnetIds": "subnet-xyz"}, "vpcSubnetIds: 'subnet-xyz' is not an id of that kind"),
        ({**COMPLIANCE, "vpcSecurityGroupIds": "subnet-0123456789abcdef0"}, "vpcSecurityGroupIds: .* not an id"),
        ({**COMPLIANCE, "vpcSecurityGroupIds": "sg-01234567,sg-01234567"}, "lists an id more than once"),
        (
            {**COMPLIANCE, "vpcSecurityGroupIds": ",".join(f"sg-0123456{n}" for n in range(6))},
            "Lambda takes at most 5, got 6",
        ),
    ],
)
def test_compliance_options_a_deploy_would_fail_on_are_refused(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ContextError, match=message):
        options_from_context(context)


def test_compliance_mode_keeps_logs_a_year_unless_told_longer() -> None:
    assert options_from_context(COMPLIANCE).log_retention_days == 365
    assert options_from_context({**COMPLIANCE, "logRetentionDays": "731"}).log_retention_days == 731
    assert options_from_context({}).log_retention_days == 30
    options = options_from_context(COMPLIANCE)
    assert options.vpc_subnet_ids == ("subnet-0123456789abcdef0", "subnet-0fedcba9876543210")
    assert options.vpc_security_group_ids == ("sg-0123456789abcdef0",)


@pytest.mark.parametrize(
    ("context", "lean", "insights"),
    [
        ({}, False, True),
        ({"lean": "true"}, True, False),  # Contributor Insights off in a lean deployment by default
        ({"lean": "true", "throttledKeyInsights": "true"}, True, True),  # unless asked for
        ({"lean": "false"}, False, True),
    ],
)
def test_the_lean_option_leaves_contributor_insights_off_unless_asked_for(
    context: dict[str, Any], lean: bool, insights: bool
) -> None:
    options = options_from_context(context)
    assert (options.lean, options.throttled_key_insights) == (lean, insights)


def test_a_lean_value_that_is_not_a_flag_is_refused_naming_the_option() -> None:
    with pytest.raises(ContextError, match="-c lean must be true or false, got 'maybe'"):
        options_from_context({"lean": "maybe"})


KINESIS = "arn:aws:kinesis:eu-west-1:111122223333:stream/table-changes"


@pytest.mark.parametrize(
    ("context", "message"),
    [
        # one source of changes per deployment: each change would otherwise be counted twice
        ({"tableName": "orders", "kinesisStreamArn": KINESIS, "tableStreamArn": STREAM}, "give one source"),
        ({"tableName": "orders", "kinesisStreamArn": KINESIS, "enableStream": "true"}, "give one source"),
        ({"tableName": "orders", "enableKinesis": "true", "enableStream": "true"}, "give one source"),
        (
            {"tableName": "orders", "kinesisStreamArn": KINESIS, "enableKinesis": "true"},
            r"kinesisStreamArn .* and -c enableKinesis=true .* are two sources",
        ),
        # the demo mode reads its own table's DynamoDB stream
        ({"kinesisStreamArn": KINESIS}, r"-c kinesisStreamArn needs -c tableName"),
        ({"enableKinesis": "true"}, r"-c enableKinesis=true needs -c tableName"),
        ({"tableName": "orders", "kinesisStreamArn": "table-changes"}, "kinesisStreamArn: 'table-changes' is not"),
        ({"tableName": "orders", "kinesisStreamArn": STREAM}, "kinesisStreamArn: .* is not a kinesis ARN"),
        (
            {"tableName": "orders", "kinesisStreamArn": KINESIS + "/consumer/c:1"},
            "arn:aws:kinesis:REGION:ACCOUNT:stream/NAME",
        ),
        ({"tableName": "orders", "tableStreamArn": STREAM, "kinesisEnhancedFanOut": "true"}, "kinesisEnhancedFanOut"),
    ],
)
def test_kinesis_options_that_make_no_sense_together_are_refused_with_one_message(
    context: dict[str, Any], message: str
) -> None:
    with pytest.raises(ContextError, match=message):
        source_from_context(context)


@pytest.mark.parametrize(
    ("arn", "message"),
    [
        (KINESIS.replace("eu-west-1", "us-east-1"), "kinesisStreamArn: .* is in region us-east-1, but the stack"),
        (KINESIS.replace("111122223333", "444455556666"), "kinesisStreamArn: .* is in account 444455556666"),
    ],
)
def test_a_kinesis_stream_of_another_region_or_account_is_refused(arn: str, message: str) -> None:
    source = source_from_context({"tableNames": "orders,users", "kinesisStreamArn": arn})
    assert (source.mode, source.table_names, source.enhanced_fan_out) == ("kinesis", ("orders", "users"), False)
    with pytest.raises(ContextError, match=message):
        source.validate_environment("eu-west-1", "111122223333")
    source.validate_environment(None, None)


def test_the_kinesis_modes_are_read_from_the_context() -> None:
    given = source_from_context({"tableName": "orders", "kinesisStreamArn": KINESIS, "kinesisEnhancedFanOut": "true"})
    assert (given.mode, given.kinesis_stream_arn, given.enhanced_fan_out, given.kinesis) == (
        "kinesis",
        KINESIS,
        True,
        True,
    )
    created = source_from_context({"tableNames": "orders,users", "enableKinesis": "true"})
    assert (created.mode, created.kinesis_stream_arn, created.enhanced_fan_out) == ("enable-kinesis", None, False)
    assert not source_from_context({"tableName": "orders", "enableStream": "true"}).kinesis
