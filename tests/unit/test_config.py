"""Settings and context validation: every error names what to fix."""

from __future__ import annotations

import pytest

from hotkeys.detector.alerts.messages import display_key
from hotkeys.detector.config import ConfigError, load_settings
from hotkeys.detector.domain.rate import alert_rate
from infra.option_schema import ContextError
from infra.options import options_from_context, source_from_context


def test_defaults() -> None:
    settings = load_settings({"STATS_TABLE_NAME": "s"})
    assert (settings.window_seconds, settings.partition_wcu_limit, settings.alert_threshold) == (60, 1000, 0.8)
    assert alert_rate(settings) == 800
    assert settings.alert_topic_arn is None and settings.archive_bucket_name is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({}, "STATS_TABLE_NAME"),
        ({"WINDOW_SECONDS": "901"}, "WINDOW_SECONDS"),
        ({"WINDOW_SECONDS": "abc"}, "WINDOW_SECONDS"),
        ({"PARTITION_WCU_LIMIT": "0"}, "PARTITION_WCU_LIMIT"),
        ({"ALERT_THRESHOLD": "1.5"}, "ALERT_THRESHOLD"),
        ({"ALERT_HYSTERESIS": "0.9"}, "ALERT_HYSTERESIS"),
        ({"ARCHIVE_REPLICATED_TTL": "maybe"}, "ARCHIVE_REPLICATED_TTL"),
        ({"KEY_DISPLAY": "hash"}, "KEY_HASH_SALT"),
        ({"KEY_DISPLAY": "base64"}, "KEY_DISPLAY"),
    ],
)
def test_invalid_settings_name_the_variable(env: dict, named: str) -> None:
    full = {"STATS_TABLE_NAME": "s", **env} if named != "STATS_TABLE_NAME" else env
    with pytest.raises(ConfigError, match=named):
        load_settings(full)


def test_archive_prefix_gets_a_trailing_slash() -> None:
    assert load_settings({"STATS_TABLE_NAME": "s", "ARCHIVE_PREFIX": "expired"}).archive_prefix == "expired/"


def test_hashed_keys_are_salted_and_stable() -> None:
    assert display_key("user#42", "raw", "") == "user#42"
    hashed = display_key("user#42", "hash", "pepper")
    assert hashed.startswith("sha256:") and "user#42" not in hashed
    assert hashed == display_key("user#42", "hash", "pepper") != display_key("user#42", "hash", "salt")


@pytest.mark.parametrize(
    ("context", "mode"),
    [
        ({}, "demo"),
        ({"tableName": "t", "tableStreamArn": "arn:aws:dynamodb:us-east-1:111122223333:table/t/stream/x"}, "existing"),
        ({"tableName": "t", "enableStream": "true"}, "enable"),
        ({"tableNames": "a,b", "enableStream": "true"}, "enable"),
    ],
)
def test_source_modes(context: dict, mode: str) -> None:
    assert source_from_context(context).mode == mode


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"tableName": "t"}, "tableStreamArn"),
        ({"tableStreamArn": "arn"}, "tableName"),
        (
            {"tableName": "t", "tableStreamArn": "arn:aws:dynamodb:us-east-1:111122223333:table/other/stream/x"},
            "does not belong",
        ),
        ({"tableNames": "a,b", "tableStreamArns": "x"}, "one stream ARN per table"),
        ({"tableNames": "a,b"}, "tableNames needs .*enableStream=true"),
    ],
)
def test_bad_source_context_is_explained(context: dict, message: str) -> None:
    with pytest.raises(ContextError, match=message):
        source_from_context(context)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"windowSeconds": "1000"}, "windowSeconds"),
        ({"windowSeconds": "soon"}, "windowSeconds"),
        ({"slackWorkspaceId": "T1"}, "slackChannelId"),
        ({"keyDisplay": "hash"}, "keyHashSalt"),
        ({"parallelizationFactor": "2"}, "parallelizationFactor must be 1: .*tumbling-window state"),
        ({"startingPosition": "AT_TIMESTAMP"}, "startingPosition must be one of TRIM_HORIZON, LATEST"),
        ({"maxRecordAgeHours": "200"}, "maxRecordAgeHours must be between 1 and 168"),
    ],
)
def test_bad_options_are_explained(context: dict, message: str) -> None:
    with pytest.raises(ContextError, match=message):
        options_from_context(context)


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"alertReminderSeconds": "30"}, r"-c alertReminderSeconds: ALERT_REMINDER_SECONDS must be between 60"),
        ({"alertThreshold": "0.005"}, r"-c alertThreshold: ALERT_THRESHOLD must be between 0.01"),
        ({"shareThreshold": "0.0001"}, r"-c shareThreshold: SHARE_THRESHOLD must be between 0.001"),
        ({"partitionWcuLimit": "0"}, r"-c partitionWcuLimit: PARTITION_WCU_LIMIT must be between 1"),
        ({"statsRetentionDays": "0"}, r"-c statsRetentionDays: STATS_RETENTION_DAYS must be between 1"),
    ],
)
def test_a_value_the_function_would_reject_fails_the_synth_with_its_message(context: dict, message: str) -> None:
    # Each of these used to synthesize, then fail every invocation with ConfigError
    with pytest.raises(ContextError, match=message):
        options_from_context(context)


def test_the_default_options_give_the_function_valid_settings() -> None:
    from hotkeys.detector.config import load_settings

    options = options_from_context({})
    settings = load_settings({**options.function_environment(), "STATS_TABLE_NAME": "s"})
    assert (settings.window_seconds, settings.alert_threshold, settings.share_min_wcu) == (60, 0.8, 6000)


@pytest.mark.parametrize(("window", "span", "flush"), [(5, 5, 5), (10, 10, 10), (11, 10, 11), (60, 10, 12)])
def test_the_span_and_flush_defaults_follow_a_short_window_wherever_settings_are_built(
    window: int, span: int, flush: int
) -> None:
    from hotkeys.detector.config import Settings

    # One default per setting: the function's environment and a Settings built in code agree
    built = Settings(stats_table_name="s", window_seconds=window)
    loaded = load_settings({"STATS_TABLE_NAME": "s", "WINDOW_SECONDS": str(window)})
    assert (built.alert_min_span_seconds, built.flush_seconds) == (span, flush)
    assert built == loaded
    # and a value given is kept, or refused when longer than the window
    assert Settings(stats_table_name="s", window_seconds=60, alert_min_span_seconds=20).alert_min_span_seconds == 20
    with pytest.raises(ConfigError, match="FLUSH_SECONDS"):
        Settings(stats_table_name="s", window_seconds=5, flush_seconds=6)


def test_a_rule_between_two_flags_is_one_line_naming_a_flag(capsys: pytest.CaptureFixture) -> None:
    from hotkeys.cli.main import main

    # Given a hysteresis as large as the threshold (each valid alone)
    argv = ["replay", "x.json", "--alert-threshold", "0.3", "--alert-hysteresis", "0.3"]
    # Then the replay refuses before reading any file, in one line naming the flag
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "hotkeys: --alert-hysteresis: (0.3) must be smaller than --alert-threshold (0.3)\n"
