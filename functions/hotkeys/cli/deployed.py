"""What a deployed stack says about its detector function: the settings it runs with, and its DLQ.

The function is the one the stack's event source mappings feed (as ``hotkeys doctor`` finds it);
its settings are its environment, read with the function's own ``load_settings``, so a command
that emulates the function (``hotkeys redrive``) runs with exactly what is deployed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotkeys.cli.doctor import StackNotFound, read_mapping, read_stack
from hotkeys.deployment import NOT_CREATED_PREFIX
from hotkeys.detector.config import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_lambda import LambdaClient

__all__ = ["Deployment", "DeploymentError", "StackNotFound", "read_deployment"]

DLQ_OUTPUT = "DeadLetterQueueUrl"


class DeploymentError(LookupError):
    """The stack is there but is not a detector this command can read; ``str()`` is one line."""


@dataclass(frozen=True)
class Deployment:
    stack: str
    function: str  # the consumer's name
    environment: dict[str, str]
    settings: Settings
    dlq_url: str | None  # the stack's DeadLetterQueueUrl output


def read_deployment(cloudformation: CloudFormationClient, lambda_: LambdaClient, stack_name: str) -> Deployment:
    """The detector function of ``stack_name`` and its settings; StackNotFound or DeploymentError."""
    stack = read_stack(cloudformation, stack_name)
    # (a mapping the stack could not create yet, ``not-created:<stream>``, has no UUID to read: doctor names it)
    uuids = [uuid for uuid in stack.mapping_ids() if not uuid.startswith(NOT_CREATED_PREFIX)]
    mappings = [m for m in (read_mapping(lambda_, uuid) for uuid in uuids) if m is not None]
    if not mappings:
        raise DeploymentError(
            f"stack {stack_name!r} has no event source mapping, so no detector function (check --stack; "
            "hotkeys doctor tells a mapping deleted outside the stack)"
        )
    functions = sorted({str(m.get("FunctionArn", "")) for m in mappings} - {""})
    if len(functions) != 1:
        raise DeploymentError(
            f"stack {stack_name!r} maps its streams to {len(functions)} functions, not one detector (check --stack)"
        )
    name = functions[0].split(":")[-1]
    configuration = lambda_.get_function_configuration(FunctionName=name)
    environment = {str(k): str(v) for k, v in (configuration.get("Environment") or {}).get("Variables", {}).items()}
    try:
        settings = load_settings(environment)
    except ConfigError as error:
        raise DeploymentError(f"the environment of {name} (stack {stack_name!r}) is not valid: {error}") from None
    return Deployment(
        stack=stack_name,
        function=name,
        environment=environment,
        settings=settings,
        dlq_url=stack.outputs.get(DLQ_OUTPUT),
    )
