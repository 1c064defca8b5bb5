"""Where the CDK app finds the function code. Everything else it shares with the CLI is in ``hotkeys.deployment``."""

from __future__ import annotations

FUNCTION_ASSET_DIR = "functions"
# The functions need `hotkeys/` without the CLI and the emulator: those and build leftovers stay out.
FUNCTION_ASSET_EXCLUDE = ("hotkeys/cli", "hotkeys/emulator", "**/__pycache__", "**/*.pyc", "*.egg-info")
