"""The OpenClaw installer module; the real OpenClaw run is in test_openclaw_plugin.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from memoryclaw import ExternalToolError
from memoryclaw.serve import openclaw
from tests.cli.test_cli import on_a_terminal

from ..openclaw_state import make_state


def test_plugin_manifest_matches_what_install_configures() -> None:
    folder = openclaw.plugin_dir()
    manifest = json.loads((folder / "openclaw.plugin.json").read_text())
    package = json.loads((folder / "package.json").read_text())
    assert manifest["id"] == openclaw.PLUGIN_ID and manifest["kind"] == "memory"
    assert set(manifest["contracts"]["tools"]) == {"memory_search", "memory_get"}
    properties = manifest["configSchema"]["properties"]
    wanted = {"vaultPath", "pythonCommand", "autoRecall", "autoCapture", "dreaming"}
    assert wanted <= set(properties)
    assert manifest["configSchema"]["additionalProperties"] is False
    assert package["type"] == "module"
    for entry in package["openclaw"]["extensions"]:
        assert (folder / entry).is_file()
    for name in package["files"]:
        assert (folder / name).is_file(), name


def test_missing_openclaw_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExternalToolError, match="not found on PATH"):
        openclaw.openclaw_runner(str(tmp_path / "openclaw"))


def test_failing_openclaw_reports_its_last_line(tmp_path: Path) -> None:
    fake = tmp_path / "openclaw"
    fake.write_text("#!/bin/sh\necho 'first line' >&2\necho 'config is invalid' >&2\nexit 3\n")
    fake.chmod(0o755)
    run = openclaw.openclaw_runner(str(fake))
    with pytest.raises(ExternalToolError) as caught:
        run(["plugins", "install", "x"], None)
    assert caught.value.returncode == 3
    assert str(caught.value).endswith("exit code 3: config is invalid")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["openclaw", "install"], "not found on PATH"),
        (["openclaw", "uninstall"], "not found on PATH"),
    ],
    ids=["install", "uninstall"],
)
def test_cli_without_openclaw_exits_1_with_one_line(
    vault_dir: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), *args],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and message in done.stderr


def test_cli_install_needs_a_vault(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memoryclaw",
            "--vault",
            str(tmp_path / "nope"),
            "openclaw",
            "install",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "nope" in done.stderr


def _fake_openclaw(folder: Path) -> Path:
    """An ``openclaw`` that accepts the installer's commands and has no plugins config."""
    fake = folder / "openclaw"
    fake.write_text('#!/bin/sh\n[ "$1 $2" = "config get" ] && echo "{}"\nexit 0\n')
    fake.chmod(0o755)
    return folder


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_install_points_at_the_import_when_openclaw_holds_memory(
    vault_dir: Path, tmp_path: Path, as_json: bool
) -> None:
    state = make_state(tmp_path / "state")
    bin_dir = _fake_openclaw(tmp_path)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "openclaw"]
    for holds, env in [
        (True, {"OPENCLAW_STATE_DIR": str(state)}),
        (False, {"OPENCLAW_STATE_DIR": str(tmp_path / "none")}),
    ]:
        done = subprocess.run(
            [*command, "install", *(["--json"] if as_json else [])],
            env={**os.environ, "PATH": path, **env},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        if as_json:
            found = json.loads(done.stdout)["existing_memory"]
            assert bool(found) == holds
            assert not holds or found[0].startswith("agent main: MEMORY.md, USER.md")
        else:
            hint = "bring it in with `memoryclaw openclaw import`"
            assert (hint in done.stdout) == holds


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_install_and_uninstall_show_each_stepon_a_terminal(
    vault_dir: Path, tmp_path: Path, as_json: bool
) -> None:
    fake = tmp_path / "openclaw"  # holds the plugin once installed, as OpenClaw would
    fake.write_text(
        '#!/bin/sh\n[ "$1 $2" = "config get" ] && echo \'{"slots": {"memory": "memoryclaw"}}\'\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
        "OPENCLAW_STATE_DIR": str(tmp_path / "none"),
    }
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault_dir), "openclaw"]
    flags = ["--json"] if as_json else []
    code, out, shown = on_a_terminal([*command, "install", *flags], env)
    assert code == 0, shown
    if as_json:  # a program reads the JSON: nothing else is said
        assert json.loads(out)["changes"] and shown == ""
    else:
        lines = shown.splitlines()
        assert lines[0] == "checking that memoryclaw starts as the plugin will start it…"
        steps = [line for line in lines if "plugins install" in line]
        assert len(steps) == 1, shown
        assert steps[0].startswith("installing the plugin into OpenClaw (`openclaw plugins")
        assert " done (" in steps[0] and steps[0].endswith(" s)")
        assert any(line.startswith("selecting the memory slot") for line in lines)
    code, out, shown = on_a_terminal([*command, "uninstall", *flags], env)
    assert code == 0, shown
    if as_json:
        assert json.loads(out)["changes"] and shown == ""
    else:
        assert "removing the plugin from OpenClaw (`openclaw plugins uninstall`" in shown
        assert all(" done (" in line for line in shown.splitlines())
    # off a terminal stderr stays for errors alone
    quiet = subprocess.run([*command, "uninstall"], env=env, capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize("chosen", ["default", "env"], ids=["default-vault", "MEMORYCLAW_VAULT"])
def test_install_records_the_vault_the_cli_uses_without_vault(tmp_path: Path, chosen: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    patches = tmp_path / "patches.jsonl"
    fake = tmp_path / "openclaw"  # records each config patch it is given
    fake.write_text(
        '#!/bin/sh\n[ "$1 $2" = "config get" ] && echo "{}"\n'
        f'[ "$1 $2" = "config patch" ] && cat >> {patches} && echo >> {patches}\nexit 0\n'
    )
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYCLAW_")}
    env.update(HOME=str(home), PATH=f"{tmp_path}{os.pathsep}{env['PATH']}")
    env.pop("OPENCLAW_STATE_DIR", None)
    if chosen == "env":
        env["MEMORYCLAW_VAULT"] = "~/memoryclaw-vault"
    expected = home / ("memoryclaw-vault" if chosen == "env" else ".openclaw/workspace/memoryclaw")
    memoryclaw = [sys.executable, "-m", "memoryclaw"]
    for args in (["init", "--git"], ["openclaw", "install", "--json"]):
        done = subprocess.run([*memoryclaw, *args], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    changes = {c["what"]: c["after"] for c in json.loads(done.stdout)["changes"]}
    assert changes["plugins.entries.memoryclaw.config.vaultPath"] == str(expected)
    [patch] = [json.loads(line) for line in patches.read_text().splitlines() if line.strip()]
    config = patch["plugins"]["entries"]["memoryclaw"]["config"]
    assert config["vaultPath"] == str(expected)
    # what the plugin is told is where the CLI, with no --vault, reads and writes
    logged = subprocess.run(
        [*memoryclaw, "log", "--session", "s", "--role", "user", "hi", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert logged.returncode == 0, logged.stderr
    assert (expected / json.loads(logged.stdout)["path"]).is_file()


def _shadowing_folder(tmp_path: Path, kind: str) -> Path:
    """A working directory holding a ``memoryclaw/`` folder: empty (as a vault of that name,
    a namespace package to Python) or a package that is not memoryclaw."""
    cwd = tmp_path / f"cwd-{kind}"
    (cwd / "memoryclaw").mkdir(parents=True)
    if kind == "package":
        (cwd / "memoryclaw" / "__init__.py").write_text("raise ImportError('not memoryclaw')\n")
    return cwd


def _python_without_memoryclaw(tmp_path: Path) -> Path:
    """A Python that cannot import memoryclaw (site-packages off)."""
    script = tmp_path / "python-without-memoryclaw"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("kind", ["empty", "package"], ids=["empty-folder", "other-package"])
def test_a_memoryclaw_folder_in_the_working_directory_does_not_hide_the_server(
    vault_dir: Path, tmp_path: Path, kind: str
) -> None:
    cwd = _shadowing_folder(tmp_path, kind)
    # the command the plugin used to run fails there, which is what the launcher avoids
    shadowed = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--version"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert shadowed.returncode != 0
    from memoryclaw import __version__

    assert openclaw.check_server(sys.executable, str(vault_dir), cwd=cwd) == __version__


def test_the_plugin_and_the_installer_start_memoryclaw_the_same_way() -> None:
    index = (openclaw.plugin_dir() / "index.js").read_text(encoding="utf-8")
    assert f"export const LAUNCHER = {json.dumps(openclaw.LAUNCHER)};" in index
    assert 'const args = ["-c", LAUNCHER];' in index


def test_install_refuses_a_python_that_cannot_run_memoryclaw_and_changes_nothing(
    vault_dir: Path, tmp_path: Path
) -> None:
    calls: list[list[str]] = []

    def run(args: Sequence[str], stdin: str | None) -> str:
        calls.append(list(args))
        return "{}"

    broken = _python_without_memoryclaw(tmp_path)
    with pytest.raises(ExternalToolError) as caught:
        openclaw.install(vault_dir, run=run, python=str(broken))
    message = str(caught.value)
    assert "nothing was changed" in message and str(broken) in message
    assert "No module named 'memoryclaw'" in message
    assert calls == []
    with pytest.raises(ExternalToolError, match="no such Python"):
        openclaw.check_server(str(tmp_path / "no-python"), str(vault_dir))


def _doctor(vault_dir: Path, state: Path, cwd: Path) -> tuple[int, dict[str, str]]:
    """``memoryclaw doctor --json`` from ``cwd`` (the console script, which no working
    directory shadows); its exit code and its ``openclaw plugin`` check."""
    script = Path(sys.executable).parent / "memoryclaw"
    done = subprocess.run(
        [str(script), "--vault", str(vault_dir), "doctor", "--json"],
        env={**os.environ, "OPENCLAW_STATE_DIR": str(state)},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    checks = json.loads(done.stdout)["checks"]
    [check] = [c for c in checks if c["check"] == "openclaw plugin"]
    return done.returncode, check


def test_doctor_checks_that_the_plugins_python_answers(vault_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    cwd = _shadowing_folder(tmp_path, "empty")
    broken = _python_without_memoryclaw(tmp_path)
    for python, code, status, said in [
        (sys.executable, 0, "ok", "answers through"),
        (str(broken), 1, "error", "No module named 'memoryclaw'"),
    ]:
        config = {"pythonCommand": python, "vaultPath": str(vault_dir)}
        plugins = {"plugins": {"entries": {"memoryclaw": {"enabled": True, "config": config}}}}
        (state / "openclaw.json").write_text(json.dumps(plugins))
        returncode, check = _doctor(vault_dir, state, cwd)
        assert (returncode, check["status"]) == (code, status), check
        assert said in check["detail"]


def test_doctor_warns_when_the_plugin_uses_another_vault(vault_dir: Path, tmp_path: Path) -> None:
    """MEMORYCLAW_VAULT set after `openclaw install`: the command line and the daemon work on
    one vault, the plugin logs and recalls in another; doctor names both."""
    state = tmp_path / "state"
    state.mkdir()
    other = tmp_path / "other-vault"
    done = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(other), "init"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    cwd = _shadowing_folder(tmp_path, "empty")
    for vault, status in [(vault_dir, "ok"), (other, "warn")]:
        config = {"pythonCommand": sys.executable, "vaultPath": str(vault)}
        plugins = {"plugins": {"entries": {"memoryclaw": {"enabled": True, "config": config}}}}
        (state / "openclaw.json").write_text(json.dumps(plugins))
        returncode, check = _doctor(vault_dir, state, cwd)
        assert (returncode, check["status"]) == (0, status), check
    assert f"uses vault {other}, not this one ({vault_dir})" in check["detail"], check
    assert "memoryclaw openclaw install" in check["detail"]
