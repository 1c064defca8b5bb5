"""Every setting of the schema reaches every surface: the function's environment, `cdk -c`, the CLI, docs/deploy.md.

The expected values below are written out by hand (not computed by the code under test), and a
new option fails `test_every_option_has_a_sample` until it is added here and proven on each surface.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.common import settings_from_args
from hotkeys.cli.main import REDRIVE_SETTINGS, REPLAY_SETTINGS, TOP_SETTINGS, WATCH_SETTINGS, build_parser
from hotkeys.detector.config import OPTIONS, ConfigError, Option, Settings, load_settings, settings_fields
from infra.option_schema import CONTEXT_KEYS, ContextError, options_table
from infra.options import CDK_CLI_KEYS, options_from_context, refuse_unknown, source_from_context

# A valid value other than the default, as text, and what the function must make of it.
SAMPLES: dict[str, tuple[str, Any]] = {
    "stats_table_name": ("my-stats", "my-stats"),
    "window_seconds": ("30", 30),
    "partition_wcu_limit": ("500", 500),
    "alert_threshold": ("0.5", 0.5),
    "alert_hysteresis": ("0.1", 0.1),
    "alert_min_span_seconds": ("5", 5),
    "alert_reminder_seconds": ("120", 120),
    "share_threshold": ("0.25", 0.25),
    "share_min_wcu": ("100", 100),
    "alert_topic_arn": ("arn:aws:sns:eu-west-1:111122223333:t", "arn:aws:sns:eu-west-1:111122223333:t"),
    "what_if_topic_arn": ("arn:aws:sns:eu-west-1:111122223333:w", "arn:aws:sns:eu-west-1:111122223333:w"),
    "what_if_indexes": ("by-status=status", "by-status=status"),
    "what_if_keys": ("orders:customer+region", "orders:customer+region"),
    "webhook_secret_arn": (
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hook",
        "arn:aws:secretsmanager:eu-west-1:111122223333:secret:hook",
    ),
    "watched_tables": ("orders, users", "orders, users"),
    "judge_queue_url": (
        "https://sqs.eu-west-1.amazonaws.com/111122223333/looks",
        "https://sqs.eu-west-1.amazonaws.com/111122223333/looks",
    ),
    "partition_key_attribute": ("tenant", "tenant"),
    "count_indexes": ("false", False),
    "summary_capacity": ("50", 50),
    "flush_seconds": ("5", 5),
    "stats_retention_days": ("3", 3),
    "archive_bucket_name": ("my-bucket", "my-bucket"),
    "archive_prefix": ("expired", "expired/"),
    "archive_replicated_ttl": ("true", True),
    "ttl_attribute": ("expiresAt", "expiresAt"),
    "key_display": ("HASH", "hash"),
    "key_hash_salt": ("pepper", "pepper"),
}
# Out of range or of the wrong type, for every setting that has a range or a type.
INVALID: dict[str, str] = {
    "window_seconds": "901",
    "partition_wcu_limit": "0",
    "alert_threshold": "1.5",
    "alert_hysteresis": "-0.1",
    "alert_min_span_seconds": "0",
    "alert_reminder_seconds": "59",
    "share_threshold": "0.0001",
    "share_min_wcu": "many",
    "summary_capacity": "9",
    "flush_seconds": "soon",
    "stats_retention_days": "0",
    "archive_replicated_ttl": "maybe",
    "count_indexes": "sometimes",
    "key_display": "base64",
    "what_if_indexes": "by-status",
    "what_if_keys": "a b",
}
# What some samples need beside them (a hashed key needs its salt).
COMPANIONS: dict[str, dict[str, str]] = {"key_display": {"key_hash_salt": "pepper"}}
ROOT = Path(__file__).resolve().parents[2]


def by_name(name: str) -> Any:
    return next(option for option in OPTIONS if option.name == name)


def test_every_option_has_a_sample_and_is_a_setting() -> None:
    assert set(SAMPLES) == {option.name for option in OPTIONS} == set(settings_fields())
    assert {o.name for o in OPTIONS if o.kind != "text" or o.check} == set(INVALID)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_function_reads_each_setting_from_its_variable(name: str) -> None:
    option = by_name(name)
    text, expected = SAMPLES[name]
    companions = {by_name(other).variable: SAMPLES[other][0] for other in COMPANIONS.get(name, {})}
    environment = {"STATS_TABLE_NAME": "s", **companions, option.variable: text}
    assert getattr(load_settings(environment), name) == expected


@pytest.mark.parametrize("name", list(INVALID))
def test_the_function_refuses_each_bad_value_naming_the_variable(name: str) -> None:
    option = by_name(name)
    with pytest.raises(ConfigError, match=f"^{option.variable} "):
        load_settings({"STATS_TABLE_NAME": "s", option.variable: INVALID[name]})


@pytest.mark.parametrize("name", [o.name for o in OPTIONS if o.context_key])
def test_each_context_option_reaches_the_functions_environment(name: str) -> None:
    option = by_name(name)
    text, expected = SAMPLES[name]
    companions = {by_name(other).context_key: SAMPLES[other][0] for other in COMPANIONS.get(name, {})}
    options = options_from_context({**companions, str(option.context_key): text})
    environment = options.function_environment()
    assert getattr(load_settings({**environment, "STATS_TABLE_NAME": "s"}), name) == expected


@pytest.mark.parametrize("name", [name for name in INVALID if by_name(name).context_key])
def test_a_value_the_function_refuses_fails_the_synth_naming_the_option(name: str) -> None:
    option = by_name(name)
    with pytest.raises(ContextError, match=f"-c {option.context_key}: {option.variable} "):
        options_from_context({str(option.context_key): INVALID[name]})


def test_only_what_the_stack_sets_itself_has_no_context_option() -> None:
    assert {o.variable for o in OPTIONS if not o.context_key} == {
        "STATS_TABLE_NAME",
        "ALERT_TOPIC_ARN",
        "WHAT_IF_TOPIC_ARN",
        "WEBHOOK_SECRET_ARN",
        "ARCHIVE_BUCKET_NAME",
        "WATCHED_TABLES",
        "JUDGE_QUEUE_URL",
    }


@pytest.mark.parametrize("name", [o.name for o in OPTIONS if o.cli_flag])
def test_replay_takes_each_flagged_setting_as_the_function_would(name: str) -> None:
    option = by_name(name)
    text, expected = SAMPLES[name]
    companions = [arg for other in COMPANIONS.get(name, {}) for arg in (by_name(other).cli_flag, SAMPLES[other][0])]
    args = build_parser().parse_args(["replay", "x.json", *companions, str(option.cli_flag), text])
    settings = settings_from_args(args, REPLAY_SETTINGS, stats_table_name="s")
    assert isinstance(settings, Settings) and getattr(settings, name) == expected


def test_every_flagged_setting_is_a_replay_flag_and_the_other_commands_use_the_schemas_flags(
    capsys: pytest.CaptureFixture,
) -> None:
    assert set(REPLAY_SETTINGS) == {o.name for o in OPTIONS if o.cli_flag}
    for names in (WATCH_SETTINGS, TOP_SETTINGS, REDRIVE_SETTINGS):
        assert set(names) <= set(REPLAY_SETTINGS)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "--help"])
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps help text
    for option in OPTIONS:
        if option.cli_flag:
            assert option.cli_flag in shown and option.variable in shown, option.name


def test_the_deploy_pages_options_table_is_the_schemas() -> None:
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert options_table() in deploy


@pytest.mark.parametrize("name", [o.name for o in OPTIONS if o.cli_flag])
def test_each_flag_is_parsed_once_by_its_options_parser(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a spy on the schema's parser
    parsed: list[str] = []
    original = Option.parse

    def spy(option: Option, raw: str | None) -> object:
        parsed.append(option.name)
        return original(option, raw)

    monkeypatch.setattr(Option, "parse", spy)
    option = by_name(name)
    text, expected = SAMPLES[name]
    companions = [arg for other in COMPANIONS.get(name, {}) for arg in (by_name(other).cli_flag, SAMPLES[other][0])]
    # When the command line is read and the settings built from it
    args = build_parser().parse_args(["replay", "x.json", *companions, str(option.cli_flag), text])
    settings = settings_from_args(args, REPLAY_SETTINGS, stats_table_name="s")
    # Then each flag given was parsed once, as argparse's type, and nothing else was parsed
    assert sorted(parsed) == sorted([name, *COMPANIONS.get(name, {})])
    assert getattr(settings, name) == expected


@pytest.mark.parametrize("name", [o.name for o in OPTIONS if o.cli_flag and o.name in INVALID])
def test_a_bad_flag_value_is_one_line_naming_the_flag(name: str, capsys: pytest.CaptureFixture) -> None:
    from hotkeys.cli.main import main

    option = by_name(name)
    assert main(["replay", "x.json", str(option.cli_flag), INVALID[name]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hotkeys: argument {option.cli_flag}: "), err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("given", "refused"),
    [
        ({"tablename": "orders"}, "-c tablename: not an option of this stack; did you mean -c tableName?"),
        ({"alertEmail": "a@example.com"}, "-c alertEmail: not an option of this stack; did you mean -c alertEmails?"),
        ({"shardCount": "4"}, "-c shardCount: not an option of this stack"),
    ],
)
def test_an_unknown_context_key_is_refused_with_the_closest_option(given: dict[str, str], refused: str) -> None:
    with pytest.raises(ContextError) as raised:
        refuse_unknown(given)
    assert str(raised.value).startswith(refused)


def test_cdks_own_context_keys_and_every_option_pass() -> None:
    refuse_unknown(["@aws-cdk/core:newStyleStackSynthesis", "aws:cdk:enable-path-metadata", *CONTEXT_KEYS])
    refuse_unknown(["availability-zones:account=111122223333:region=eu-west-1"])
    # what the pinned CLI saves in cdk.context.json after `cdk acknowledge N` and `cdk cli-telemetry --disable`
    refuse_unknown(["acknowledged-issue-numbers", "cli-telemetry"])
    cli = (Path(__file__).resolve().parents[2] / "node_modules" / "aws-cdk" / "lib" / "index.js").read_text()
    saved = set(re.findall(r'context\.set\("([^"]+)"', cli))
    assert saved and all(":" in key or key.startswith("@") or key in CDK_CLI_KEYS for key in saved), saved


@pytest.mark.parametrize(
    ("context", "refused"),
    [
        ({"tableNames": "orders,users,orders", "enableStream": "true"}, "-c tableNames lists orders more than once"),
        ({"alertEmails": "oncall@example.com,not-an-email"}, "-c alertEmails: 'not-an-email' is not an e-mail address"),
        ({"alertEmails": "a@example.com, a@example.com"}, "-c alertEmails lists an address more than once"),
    ],
)
def test_repeated_tables_and_malformed_or_repeated_addresses_are_refused(context: dict[str, str], refused: str) -> None:
    with pytest.raises(ContextError, match=re.escape(refused)):
        source_from_context(context)
        options_from_context(context)
