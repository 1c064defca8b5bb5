"""`hotkeys generate` without a skew option is ordinary traffic: replayed, it raises no alert of any
reason (issue #47: at the old default, Zipf 1.1, `user#0000000` drew ~15% of the writes, a heavy-share
alert in every workload busy enough for the share rule). Asked for, a hot key still alerts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hotkeys.cli.main import build_parser, main
from hotkeys.detector.config import default_of
from hotkeys.emulator.generate import DEFAULT_ZIPF


def _replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> list[dict[str, Any]]:
    """The alerts of a replay of ``hotkeys generate`` with these options."""
    events = tmp_path / "workload.json.gz"
    assert main(["generate", "--out", str(events), *options]) == 0
    capsys.readouterr()
    assert main(["replay", str(events), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # (each case is busy enough for the share rule: a window of at least SHARE_MIN_WCU write units)
    assert max(window["wcu"] for window in result["windows"]) >= default_of("share_min_wcu")
    alerts: list[dict[str, Any]] = result["alerts"]
    return alerts


def test_the_clis_default_skew_is_the_generators() -> None:
    assert build_parser().parse_args(["generate", "--out", "x.json"]).zipf == DEFAULT_ZIPF


@pytest.mark.parametrize(
    "options",
    [
        ["--duration", "60"],  # every other option its default
        ["--rate", "200", "--duration", "60", "--seed", "2"],
        ["--rate", "120", "--duration", "90", "--seed", "3", "--keys", "1000"],
    ],
)
def test_a_default_workload_raises_no_alert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    assert _replayed(tmp_path, capsys, *options) == []


def test_a_hot_key_asked_for_still_alerts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alerts = _replayed(tmp_path, capsys, "--duration", "60", "--hot", "event#42:900wcu@20s+20s")
    assert {(a["key"], a["reason"]) for a in alerts if a["status"] == "firing"} >= {("event#42", "partition_limit")}


def test_a_steeper_skew_asked_for_still_makes_a_heavy_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    alerts = _replayed(tmp_path, capsys, "--duration", "60", "--zipf", "1.1")
    assert [(a["key"], a["reason"]) for a in alerts if a["status"] == "firing"] == [("user#0000000", "share")]
