"""Limits only the service enforces, checked at synth: a template CloudFormation would refuse fails here,
naming the quota and what to change."""

from __future__ import annotations

import jsii
from aws_cdk import CfnResource, Stack
from constructs import IValidation

# CloudFormation's "Resources" quota: the most resources one template declares (CloudFormation user
# guide, quotas: 500 per stack).
MAX_RESOURCES = 500


@jsii.implements(IValidation)
class StackResourceQuota:
    """The stack's resources within ``MAX_RESOURCES``."""

    def __init__(self, stack: Stack) -> None:
        self._stack = stack

    def validate(self) -> list[str]:
        count = sum(1 for found in self._stack.node.find_all() if isinstance(found, CfnResource))
        if count <= MAX_RESOURCES:
            return []
        return [
            f"this stack declares {count} resources, more than CloudFormation's {MAX_RESOURCES} per stack: "
            "watch fewer tables in it (-c tableNames) and deploy the others with another -c stackName"
        ]
