#!/usr/bin/env python3
"""CDK entry point: `cdk synth` / `cdk deploy`, or `CDK_OUTDIR=cdk.out python app.py` offline."""

from __future__ import annotations

import sys

from infra.app_factory import build_app
from infra.option_schema import ContextError

try:
    app, _stack = build_app()
except ContextError as error:
    sys.exit(f"hotkeys stack: {error}")
app.synth()
