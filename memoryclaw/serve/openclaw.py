"""Install memoryclaw into an existing OpenClaw as its memory plugin, and take it out again.

Everything goes through the ``openclaw`` command found on PATH, so it acts on the OpenClaw of
the current ``HOME`` exactly as the user's own commands would:

1. ``openclaw plugins install --link --force --accept-capabilities <plugin folder>``
2. one ``openclaw config patch``: select the memory slot, allow conversation access (which the
   ``agent_end`` logging hook needs), and set the vault path and the exact Python interpreter
   running this memoryclaw.

Before changing anything, :func:`install` starts memoryclaw's server exactly as the plugin
will (:func:`server_command`) and asks it for its status (:func:`check_server`); ``doctor``
runs the same check with the Python and vault OpenClaw's config names (:func:`doctor_checks`).

:func:`uninstall` removes the plugin and gives the memory slot back to OpenClaw's default.
Both return the list of changes they made, for the CLI to print.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ExternalToolError, MemoryclawError
from ..importers.openclaw_store import existing_memory, load_config, state_dir

PLUGIN_ID = "memoryclaw"
DEFAULT_MEMORY_SLOT = "memory-core"
COMMAND_TIMEOUT = 300.0
CHECK_TIMEOUT = 60.0
# How the plugin runs memoryclaw: ``python -c LAUNCHER ...`` (index.js holds the same string,
# and says why: ``-m`` lets a ``memoryclaw/`` folder in the working directory hide the
# installed package; ``-P`` needs Python 3.11; ``-I`` also drops user site-packages).
LAUNCHER = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "from memoryclaw.cli import main; main()"
)

Runner = Callable[[Sequence[str], str | None], str]


@dataclass(frozen=True)
class Change:
    """One setting or artefact the installer changed: ``what`` went from ``before`` to ``after``."""

    what: str
    before: Any
    after: Any

    def __str__(self) -> str:
        def show(value: Any) -> str:
            return "(unset)" if value is None else json.dumps(value, ensure_ascii=False)

        return f"{self.what}: {show(self.before)} -> {show(self.after)}"

    def as_dict(self) -> dict[str, Any]:
        """The change as a JSON-ready dict."""
        return {"what": self.what, "before": self.before, "after": self.after}


def plugin_dir() -> Path:
    """The folder holding the OpenClaw plugin (``openclaw.plugin.json``, ``index.js`` ...)."""
    checkout = Path(__file__).resolve().parents[2] / "plugins" / "openclaw"
    if (checkout / "openclaw.plugin.json").is_file():
        return checkout
    packaged = Path(str(resources.files("memoryclaw") / "openclaw_plugin"))
    if (packaged / "openclaw.plugin.json").is_file():
        return packaged
    raise ExternalToolError("openclaw", "the plugin files are missing from this installation")


def openclaw_runner(executable: str = "openclaw") -> Runner:
    """Run ``openclaw ARGS`` (stdin optional) and return its stdout; failures raise."""
    found = shutil.which(executable)
    if found is None:
        raise ExternalToolError(
            executable, "not found on PATH; install OpenClaw first (npm install -g openclaw)"
        )

    def run(args: Sequence[str], stdin: str | None) -> str:
        command = [found, *args]
        shown = " ".join([executable, *args])
        try:
            done = subprocess.run(
                command,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ExternalToolError(shown, f"no answer after {COMMAND_TIMEOUT:g}s") from None
        if done.returncode != 0:
            lines = (done.stderr.strip() or done.stdout.strip()).splitlines()
            reason = lines[-1] if lines else "no output"
            raise ExternalToolError(
                shown, f"exit code {done.returncode}: {reason}", returncode=done.returncode
            )
        return done.stdout

    return run


def _plugins_config(run: Runner) -> dict[str, Any]:
    """OpenClaw's ``plugins`` config section (empty when it has none)."""
    try:
        out = run(["config", "get", "plugins", "--json"], None)
    except ExternalToolError:
        return {}  # `config get` exits non-zero for a section that is not set
    try:
        value = json.loads(out)
    except ValueError as exc:
        raise ExternalToolError("openclaw config get plugins", f"not JSON: {exc}") from None
    return value if isinstance(value, dict) else {}


def _lookup(section: dict[str, Any], dotted: str) -> Any:
    """The value at ``dotted`` (a ``plugins.``-prefixed key) inside the plugins section."""
    value: Any = section
    for part in dotted.split(".")[1:]:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _patch(run: Runner, patch: dict[str, Any]) -> None:
    run(["config", "patch", "--stdin"], json.dumps(patch))


def server_command(python: str, vault: str | None) -> list[str]:
    """The command the plugin runs for its server (see :data:`LAUNCHER`)."""
    return [python, "-c", LAUNCHER, *(["--vault", vault] if vault else []), "serve", "--stdio"]


def check_server(
    python: str, vault: str | None, *, cwd: Path | None = None, timeout: float = CHECK_TIMEOUT
) -> str:
    """Start memoryclaw's server as the plugin does and ask its status; the version that
    answered.  Raises :class:`ExternalToolError` saying what went wrong."""
    command = server_command(python, vault)
    shown = f"{python} (memoryclaw serve --stdio)"
    request = json.dumps({"id": 1, "method": "status", "params": {}}) + "\n"
    try:
        done = subprocess.run(
            command,
            input=request,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
    except FileNotFoundError:
        raise ExternalToolError(shown, "no such Python") from None
    except OSError as exc:
        raise ExternalToolError(shown, f"cannot start: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise ExternalToolError(shown, f"no answer after {timeout:g}s") from None
    return _status_version(shown, done)


def _status_version(shown: str, done: subprocess.CompletedProcess[str]) -> str:
    """The version in the server's answer to the status request, or why there is none."""
    for line in done.stdout.splitlines():
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and answer.get("id") == 1:
            result, error = answer.get("result"), answer.get("error")
            if isinstance(result, dict):
                return str(result.get("version", "?"))
            message = error.get("message") if isinstance(error, dict) else error
            raise ExternalToolError(shown, f"answers with an error: {message}")
    lines = done.stderr.strip().splitlines()
    reason = lines[-1] if lines else "no output"
    raise ExternalToolError(
        shown, f"did not answer (exit code {done.returncode}): {reason}", returncode=done.returncode
    )


def doctor_checks(
    env: Mapping[str, str] | None = None, vault_root: Path | None = None
) -> list[dict[str, str]]:
    """``doctor``'s check of the OpenClaw plugin (none when this HOME's OpenClaw does not
    have it): the server the plugin would start answers, from the current directory, and
    serves ``vault_root`` (the vault doctor checks): the turns OpenClaw logs go to the plugin's
    vault, which the daemon and the command line of another vault never see."""
    state = state_dir(env)
    plugins = load_config(state, env).get("plugins")
    entry = plugins.get("entries", {}).get(PLUGIN_ID) if isinstance(plugins, dict) else None
    if not isinstance(entry, dict):
        return []
    config = entry.get("config")
    config = config if isinstance(config, dict) else {}
    python, vault = config.get("pythonCommand"), config.get("vaultPath")
    python = python if isinstance(python, str) and python else "python3"  # the plugin's default
    vault = vault if isinstance(vault, str) else None
    try:
        version = check_server(python, vault or None)
    except ExternalToolError as exc:
        fix = "run `memoryclaw openclaw install` with a Python that has memoryclaw"
        return [{"check": "openclaw plugin", "status": "error", "detail": f"{exc} ({fix})"}]
    where = f"vault {vault}" if vault else "the default vault"
    detail = f"memoryclaw {version} answers through {python}, {where}"
    if vault and vault_root is not None and not _same_folder(Path(vault), vault_root):
        detail = (
            f"OpenClaw's memoryclaw plugin uses vault {vault}, not this one ({vault_root}):"
            " its turns are logged and recalled there, and this vault's daemon and commands"
            " never see them; run `memoryclaw openclaw install` with this vault to point it"
            " here, or use --vault / MEMORYCLAW_VAULT to work on that one"
        )
        return [{"check": "openclaw plugin", "status": "warn", "detail": detail}]
    return [{"check": "openclaw plugin", "status": "ok", "detail": detail}]


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.expanduser().resolve()
    except OSError:
        return False


def install(vault_root: Path, *, run: Runner, python: str = sys.executable) -> list[Change]:
    """Install and select the plugin for the vault at ``vault_root``; the changes made.
    Nothing changes when memoryclaw does not answer as the plugin will start it."""
    try:
        check_server(python, str(vault_root))
    except ExternalToolError as exc:
        raise ExternalToolError(
            "memoryclaw openclaw install",
            f"the plugin could not start memoryclaw, so nothing was changed: {exc}",
        ) from None
    folder = plugin_dir()
    entry = f"plugins.entries.{PLUGIN_ID}"
    config: dict[str, Any] = {"vaultPath": str(vault_root), "pythonCommand": python}
    wanted: dict[str, Any] = {
        "plugins.slots.memory": PLUGIN_ID,
        f"{entry}.enabled": True,
        f"{entry}.hooks.allowConversationAccess": True,
        f"{entry}.config.vaultPath": str(vault_root),
        f"{entry}.config.pythonCommand": python,
    }
    section = _plugins_config(run)
    if _lookup(section, f"{entry}.config.dreaming.enabled") is None:
        # OpenClaw reads dreaming from the slot's plugin; on, it loads memory-core beside
        # memoryclaw, and memory-core's memory_search / memory_get collide with memoryclaw's
        config["dreaming"] = {"enabled": False}
        wanted[f"{entry}.config.dreaming.enabled"] = False
    before = {key: _lookup(section, key) for key in wanted}
    before["plugins.slots.memory"] = before["plugins.slots.memory"] or DEFAULT_MEMORY_SLOT
    linked = str(folder) in (_lookup(section, "plugins.load.paths") or [])
    run(["plugins", "install", "--link", "--force", "--accept-capabilities", str(folder)], None)
    _patch(
        run,
        {
            "plugins": {
                "slots": {"memory": PLUGIN_ID},
                "entries": {
                    PLUGIN_ID: {
                        "enabled": True,
                        "hooks": {"allowConversationAccess": True},
                        "config": config,
                    }
                },
            }
        },
    )
    changes = [Change("plugins.load.paths[]", str(folder) if linked else None, str(folder))]
    changes += [Change(key, before[key], value) for key, value in wanted.items()]
    return [c for c in changes if c.before != c.after]


def uninstall(*, run: Runner) -> list[Change]:
    """Remove the plugin and hand the memory slot back to OpenClaw's default; the changes."""
    section = _plugins_config(run)
    slot = _lookup(section, "plugins.slots.memory")
    entry = _lookup(section, f"plugins.entries.{PLUGIN_ID}")
    folder = str(plugin_dir())
    linked = folder in (_lookup(section, "plugins.load.paths") or [])
    if entry is None and slot != PLUGIN_ID and not linked:
        raise ExternalToolError("openclaw", "memoryclaw is not installed in this OpenClaw")
    run(["plugins", "uninstall", PLUGIN_ID, "--force"], None)
    after = _plugins_config(run)
    leftovers: dict[str, Any] = {}
    if _lookup(after, "plugins.slots.memory") == PLUGIN_ID:
        leftovers["slots"] = {"memory": None}
    if _lookup(after, f"plugins.entries.{PLUGIN_ID}") is not None:
        leftovers["entries"] = {PLUGIN_ID: None}
    if leftovers:
        _patch(run, {"plugins": leftovers})
    changes = [
        Change("plugins.load.paths[]", folder if linked else None, None),
        Change(f"plugins.entries.{PLUGIN_ID}", entry, None),
    ]
    if slot == PLUGIN_ID:
        changes.append(Change("plugins.slots.memory", PLUGIN_ID, DEFAULT_MEMORY_SLOT))
    return [c for c in changes if c.before != c.after]


def existing_memory_hint(env: Mapping[str, str] | None = None) -> list[str]:
    """What memory the OpenClaw of this ``HOME`` already holds, in words (empty: none), so
    ``install`` can point at ``memoryclaw openclaw import``."""
    state = state_dir(env)
    try:
        return existing_memory(state, load_config(state, env)) if state.is_dir() else []
    except (OSError, MemoryclawError):
        return []  # only a hint: what cannot be read now, the import will name
