"""cdk-nag acknowledgments, each with the reason it is acceptable.

cdk-nag 3 matches ids exactly, pack prefix included ("AwsSolutions::AwsSolutions-SQS3");
an id in any other form would silently acknowledge nothing, so it is refused here.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, finding_id: str, reason: str) -> None:
    if "::" not in finding_id:
        raise ValueError(f"cdk-nag 3 finding ids look like 'Pack::Rule', got {finding_id!r}")
    Validations.of(scope).acknowledge(Acknowledgment(id=finding_id, reason=reason))
