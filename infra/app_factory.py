"""Builds the CDK app (used by app.py and by the infra tests, which synthesize it once)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, ServerlessChecks

from hotkeys.detector.names import DEFAULT_STACK_NAME, metrics_namespace
from hotkeys.throttle_hook import NAMESPACE as THROTTLES_NAMESPACE
from infra.option_schema import CONTEXT_KEYS, ContextError
from infra.options import options_from_context, refuse_unknown, source_from_context
from infra.stack import HotKeyDetectorStack

# (the name whose stack keeps the metric namespace of every earlier release: names.metrics_namespace)
STACK_NAME = DEFAULT_STACK_NAME
CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags and defaults): what `cdk synth` passes to the app.

    `python app.py` without the CDK CLI gets no context at all, so `make synth` and the infra
    tests would build another template than `cdk deploy` does; both read it from here instead.
    """
    return dict(json.loads(CDK_JSON.read_text()).get("context", {}))


def _stack_name(given: Any) -> str:
    name = str(given or STACK_NAME)
    if metrics_namespace(name) == THROTTLES_NAMESPACE:
        # (the throttle hook's metrics, which applications write: the stack's would mix with them)
        raise ContextError(f"-c stackName={name}: its metrics' namespace would be the throttle hook's, choose another")
    return name


def build_app(
    context: Mapping[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, HotKeyDetectorStack]:
    app = cdk.App(context={**cdk_json_context(), **(context or {})}, outdir=outdir)
    refuse_unknown(app.node.get_all_context())
    values = {key: app.node.try_get_context(key) for key in CONTEXT_KEYS}
    stack = HotKeyDetectorStack(
        app,
        _stack_name(app.node.try_get_context("stackName")),
        source=source_from_context(values),
        options=options_from_context(values),
        env=cdk.Environment(account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")),
        description="DynamoDB hot-key detector: stream consumer, stats, alerts and TTL archive",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(), ServerlessChecks())
    return app, stack
