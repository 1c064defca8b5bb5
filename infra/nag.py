"""cdk-nag acknowledgments, each with the reason it is acceptable.

cdk-nag 3 matches ids exactly, pack prefix included ("AwsSolutions::AwsSolutions-SQS3");
an id in any other form would silently acknowledge nothing, so it is refused here.

A finding id that names a resource ("...-IAM5[Resource::arn:...]") spells it as cdk-nag reads the
synthesized policy: a literal ARN when the stack has a concrete account and region (what the CDK
CLI gives it from the user's profile), ``<AWS::Region>``-style placeholders when it has none.
``finding_text`` renders a value the same way from the stack's own resolution, so an
acknowledgment matches in both environments instead of in the one it was written for.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, finding_id: str, reason: str) -> None:
    if "::" not in finding_id:
        raise ValueError(f"cdk-nag 3 finding ids look like 'Pack::Rule', got {finding_id!r}")
    Validations.of(scope).acknowledge(Acknowledgment(id=finding_id, reason=reason))


def finding_text(scope: IConstruct, value: str) -> str:
    """``value`` (a string that may hold tokens) as cdk-nag prints it in a finding id."""
    return _flatten(Stack.of(scope).resolve(value))


def _flatten(resolved: Any) -> str:
    if isinstance(resolved, str):
        return resolved
    if isinstance(resolved, dict) and len(resolved) == 1:
        ((function, argument),) = resolved.items()
        if function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(_flatten(part) for part in parts)
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{'.'.join(argument)}>"
    raise ValueError(f"cannot spell {resolved!r} as cdk-nag does")
