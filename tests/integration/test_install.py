"""What `make demo` and `make test` install, and how (issue #47): the demo's venv holds what the demo
imports (the CLI and moto's in-process mocks), not moto's server or plotly; each install says how far it
has got in a few lines, not silence nor pip's hundreds; a failed install shows pip's error and fails; a
command that needs an extra the install left out says which, in one line."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hotkeys.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def test_the_demo_extra_is_moto_without_its_server_and_dev_keeps_everything() -> None:
    extras = _extras()
    # Given the demo's extra: moto's mocks of the services a replay creates, no server (flask, cfn-lint...)
    assert len(extras["local"]) == 1 and extras["local"][0].startswith("moto[")
    assert "server" not in extras["local"][0]
    assert extras["server"] == [extras["local"][0].split("[")[0] + "[server]" + extras["local"][0].split("]")[1]]
    # Then `make test`'s extra still brings moto's server, plotly and the rest
    composed = next(entry for entry in extras["dev"] if entry.startswith("dynamodb-hotkeys["))
    assert {"local", "server", "report", "cdk", "bench"} <= set(composed[len("dynamodb-hotkeys[") : -1].split(","))


def _fake_venv(tmp_path: Path, pip_stdout: list[str], status: int) -> Path:
    # A venv whose python stands in for `python -m pip install ...`: pip's lines, then its exit status
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (tmp_path / "pip-stdout.txt").write_text("".join(line + "\n" for line in pip_stdout))
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >>"{tmp_path}/pip-args.txt"\n'
        'case "$*" in *--upgrade*) exit 0;; esac\n'
        f'cat "{tmp_path}/pip-stdout.txt"\n'
        + (f'echo "ERROR: No matching distribution found for moto==99.0" >&2\nexit {status}\n' if status else "")
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return venv


def _pip_lines(packages: int) -> list[str]:
    names = [f"pkg{i}" for i in range(packages)]
    found = [line for name in names for line in (f"Collecting {name}", f"  Downloading {name}-1.0-py3-none-any.whl")]
    return [
        "Obtaining file:///p",
        *found,
        "Installing collected packages: " + ", ".join([*names, "dynamodb-hotkeys"]),
        "Successfully installed " + " ".join(f"{name}-1.0" for name in [*names, "dynamodb-hotkeys"]),
    ]


def _make_stamp(venv: Path, prefix: str) -> subprocess.CompletedProcess[str]:
    crc = subprocess.run(
        "cat pyproject.toml | cksum | cut -d' ' -f1", shell=True, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {key: value for key, value in os.environ.items() if key not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    env["HOTKEYS_NO_BROWSER"] = "1"  # the test install's Chromium step stays out of it
    return subprocess.run(
        ["make", f"VENV={venv}", f"{venv}/{prefix}{crc}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(("prefix", "extra"), [(".demo-", ".[local]"), (".installed-", ".[dev]")])
def test_an_install_shows_its_progress_in_a_few_lines(tmp_path: Path, prefix: str, extra: str) -> None:
    # Given pip finding 25 packages and the project, downloading them and installing them
    venv = _fake_venv(tmp_path, _pip_lines(25), status=0)
    done = _make_stamp(venv, prefix)
    assert done.returncode == 0, done.stderr
    # Then a line per phase and every 10 packages, each with the seconds since pip started
    progress = [line for line in done.stdout.splitlines() if line.startswith("  pip: ")]
    assert [re.sub(r" \(\d+ s\)$", "", line) for line in progress] == [
        "  pip: finding the packages",
        "  pip: 10 packages found",
        "  pip: 20 packages found",
        "  pip: 26 packages found, 25 downloaded",
        "  pip: installing 26 of them",
        "  pip: installed 26 packages",
    ]
    assert all(re.search(r" \(\d+ s\)$", line) for line in progress)
    assert len(done.stdout.splitlines()) <= len(progress) + 1  # and the line saying what it installs
    assert (tmp_path / "pip-args.txt").read_text().splitlines()[-1].endswith(f" -e {extra}")
    # pip's own lines are kept whole beside the venv, and the install is marked done
    assert (venv / "pip-install.log").read_text().splitlines() == _pip_lines(25)
    assert list(venv.glob(prefix + "*")) and not list(venv.glob(".pip-*"))


@pytest.mark.parametrize(("prefix", "extra"), [(".demo-", ".[local]"), (".installed-", ".[dev]")])
def test_a_failed_install_shows_pips_error_and_fails(tmp_path: Path, prefix: str, extra: str) -> None:
    venv = _fake_venv(tmp_path, _pip_lines(3)[:3], status=3)
    done = _make_stamp(venv, prefix)
    assert done.returncode != 0
    assert "ERROR: No matching distribution found for moto==99.0" in done.stderr
    assert f"make: pip install -e '{extra}' failed (exit 3)" in done.stderr
    # and nothing says it is installed: the next make tries again
    assert not list(venv.glob(prefix + "*"))


def test_replay_without_moto_names_the_extra_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an install without the `local` extra: no moto to import
    monkeypatch.setitem(sys.modules, "moto", None)
    assert main(["replay", str(ROOT / "events" / "poison-record.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'dynamodb-hotkeys[local]'" in err
