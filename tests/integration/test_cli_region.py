"""docs/cli.md's local recipe (`AWS_REGION=us-east-1` and dummy credentials) works for every AWS command.

boto3 reads only AWS_DEFAULT_REGION; the AWS CLI v2, the other SDKs and the CDK CLI read
AWS_REGION. A shell set up for them must not get "You must specify a region" from `hotkeys`.
"""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from hotkeys.cli.main import main
from hotkeys.emulator.local import create_stats_table


@pytest.fixture
def only_aws_region(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The recipe's environment: AWS_REGION only, no AWS_DEFAULT_REGION, no profile with a region
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))


@pytest.fixture(scope="module")
def resources(moto_endpoint: str) -> dict[str, str]:
    def client(service: str) -> object:
        return boto3.client(
            service,
            endpoint_url=moto_endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    create_stats_table(client("dynamodb"), "region-stats")
    client("dynamodb").create_table(  # type: ignore[attr-defined]
        TableName="region-orders",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    queue = client("sqs").create_queue(QueueName="region-dlq")["QueueUrl"]  # type: ignore[attr-defined]
    return {"endpoint": moto_endpoint, "queue": queue}


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["top", "--stats-table", "region-stats"], 0),
        (["watch", "--table", "region-orders", "--once", "--json"], 0),
        (["redrive", "--no-stack", "--dlq-url", "{queue}", "--stats-table", "region-stats"], 0),
        # no such stack: the one-line error of a request that reached CloudFormation in that region
        (["doctor", "--stack", "NoSuchStack"], 2),
    ],
)
def test_aws_commands_take_the_region_from_aws_region(
    only_aws_region: None,
    resources: dict[str, str],
    capsys: pytest.CaptureFixture,
    command: list[str],
    status: int,
) -> None:
    argv = [part.format(**resources) for part in command] + ["--endpoint-url", resources["endpoint"]]
    code = main(argv)
    err = capsys.readouterr().err
    assert "region" not in err.lower() or "NoSuchStack" in err, err
    assert code == status, err


def test_the_region_flag_then_aws_region_then_boto3s_own_choice() -> None:
    from hotkeys.cli.common import cli_region

    assert cli_region("eu-west-1", environ={"AWS_REGION": "us-east-1"}) == "eu-west-1"
    assert cli_region(None, environ={"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "eu-west-2"}) == "us-east-1"
    # nothing chosen: boto3 decides (AWS_DEFAULT_REGION, the profile), unless the command has its own default
    assert cli_region(None, environ={"AWS_DEFAULT_REGION": "eu-west-2"}) is None
    assert cli_region(None, "us-east-1", environ={}) == "us-east-1"
