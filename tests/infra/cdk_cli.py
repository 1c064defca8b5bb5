"""The pinned CDK CLI, run the way a user runs it: the documented commands, an account and region from "the profile".

The CLI sets ``CDK_DEFAULT_REGION`` from the region configuration (``AWS_REGION`` here) and
``CDK_DEFAULT_ACCOUNT`` from STS ``GetCallerIdentity`` with the user's credentials. Here the
credentials are dummies and STS is a moto server on loopback (``AWS_ENDPOINT_URL_STS``) that
answers with ``ACCOUNT``: the app then sees a concrete environment exactly as after
``aws configure``, and ARNs are literal strings instead of ``${AWS::Region}`` tokens.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGE_JSON = ROOT / "package.json"
PACKAGE_LOCK = ROOT / "package-lock.json"
# The documented examples use AWS's documentation account and this region: the stream and secret
# ARNs they show must belong to the environment the stack is deployed to.
ACCOUNT = "111122223333"
REGION = "eu-west-1"
CLI_COMMAND = re.compile(r"^npx aws-cdk@(?P<version>\S+) (?P<verb>\w+)(?P<args>.*)$")


def pinned_version() -> str:
    """The one place the CDK CLI version is written: package.json (npm ci installs exactly it)."""
    return str(json.loads(PACKAGE_JSON.read_text())["devDependencies"]["aws-cdk"])


def documentation() -> list[Path]:
    """The README and every page of docs/: a deploy command a user may copy is on one of them."""
    return [README, *sorted(DOCS.glob("*.md"))]


def documented_cli_commands(text: str | None = None) -> list[tuple[str, str, str]]:
    """Every ``npx aws-cdk@VERSION VERB ARGS`` command of the documentation's shell blocks (or of ``text``'s),
    continuations joined."""
    texts = [page.read_text() for page in documentation()] if text is None else [text]
    commands = []
    blocks = [block for page in texts for block in re.findall(r"```sh\n(.*?)```", page, flags=re.DOTALL)]
    for block in blocks:
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            match = CLI_COMMAND.match(command)
            if match:
                commands.append((match["version"], match["verb"], match["args"].strip()))
    return commands


def deploy_commands() -> list[str]:
    """The arguments of every documented ``deploy`` command, each once (what ``synth`` is run with here)."""
    return list(dict.fromkeys(args for _version, verb, args in documented_cli_commands() if verb == "deploy"))


def cdk_executable() -> Path:
    """The pinned CLI: the project's ``node_modules`` (make install), else one ``npm ci`` into a cache.

    The cache is keyed on package-lock.json, so the suite installs it once per lock on a machine,
    never once per test.
    """
    local = ROOT / "node_modules" / ".bin" / "cdk"
    if local.exists() and _version_of(local) == pinned_version():
        return local
    digest = sha256(PACKAGE_LOCK.read_bytes()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"hotkeys-cdk-cli-{digest}"
    cached = cache / "node_modules" / ".bin" / "cdk"
    if not cached.exists():
        staging = Path(tempfile.mkdtemp(prefix="hotkeys-cdk-cli-"))
        shutil.copy(PACKAGE_JSON, staging)
        shutil.copy(PACKAGE_LOCK, staging)
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=staging, check=True, capture_output=True
        )
        try:
            staging.rename(cache)
        except OSError:  # another process installed it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return cached


def _version_of(executable: Path) -> str:
    result = subprocess.run([str(executable), "--version"], capture_output=True, text=True, check=False)
    return result.stdout.split(" ")[0].strip()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def sts_answering_as(account: str) -> Iterator[str]:
    """A moto server on loopback whose STS says the caller is in ``account``."""
    port = _free_port()
    environment = {**os.environ, "MOTO_ACCOUNT_ID": account}
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the moto server for STS did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


@dataclass
class CliSynth:
    args: str
    returncode: int
    output: str
    outdir: Path

    @property
    def template(self) -> dict[str, Any]:
        return dict(json.loads((self.outdir / "HotKeyDetector.template.json").read_text()))

    @property
    def environment(self) -> str:
        manifest = json.loads((self.outdir / "manifest.json").read_text())
        return str(manifest["artifacts"]["HotKeyDetector"]["environment"])

    @property
    def report(self) -> dict[str, Any]:
        return dict(json.loads((self.outdir / "validation-report.json").read_text()))


def cli_environment(sts_endpoint: str) -> dict[str, str]:
    """What a user with a configured profile has: credentials, a region; nothing pre-set for the CDK."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "CDK_")) and key not in ("CDK_OUTDIR",)
    }
    environment.update(
        {
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL_STS": sts_endpoint,
            "AWS_EC2_METADATA_DISABLED": "true",
            # Offline: no telemetry, and the Node end-of-life banner silenced as in the Makefile.
            "CDK_DISABLE_CLI_TELEMETRY": "true",
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
            "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
        }
    )
    return environment


def synth_all(commands: list[str]) -> dict[str, CliSynth]:
    """``cdk synth`` once per distinct command, concurrently (each is a Node and a jsii start-up)."""
    executable = cdk_executable()
    # cdk.json's app is `.venv/bin/python app.py`; the same interpreter is named directly so a
    # worktree without its own .venv synthesizes too.
    app = f"{shlex.quote(sys.executable)} app.py"
    with sts_answering_as(ACCOUNT) as sts:
        environment = cli_environment(sts)

        def run(args: str) -> CliSynth:
            outdir = Path(tempfile.mkdtemp(prefix="cdk-cli-"))
            argv = [str(executable), "synth", "--app", app, "--output", str(outdir), "--no-notices", "--quiet"]
            result = subprocess.run(
                argv + shlex.split(args), cwd=ROOT, env=environment, capture_output=True, text=True, check=False
            )
            return CliSynth(args, result.returncode, result.stdout + result.stderr, outdir)

        distinct = list(dict.fromkeys(commands))
        with ThreadPoolExecutor(max_workers=3) as pool:
            return dict(zip(distinct, pool.map(run, distinct), strict=True))
