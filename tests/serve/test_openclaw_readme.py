"""The README's "Use with OpenClaw" example, run as written against a real OpenClaw.

The commands of the section's first ``bash`` block run in ``bash`` in a fresh ``HOME`` (the
``pip install`` line aside: this checkout is installed already, and ``memoryclaw`` is this
interpreter's).  The only stand-in is the model: a loopback server speaking the OpenAI API
(``tests/loopback_model.py``) that records the prompt OpenClaw sent, so the test sees what
recall put in front of the question.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.serve.test_openclaw_plugin import TURN_TIMEOUT, OpenClaw

from ..loopback_model import LoopbackModel, prompt_text
from ..openclaw_env import ensure_openclaw, openclaw_env

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_commands() -> list[str]:
    """The command lines of the first ``bash`` block of the README's OpenClaw quick start."""
    section = README.read_text().split("\n### Use with OpenClaw\n", 1)[1].split("\n#", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None, "no bash block in the README's OpenClaw section"
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("pip ")]


def test_the_readme_example_recalls_the_dentist(tmp_path: Path) -> None:
    commands = _readme_commands()
    assert any("020 7946 0321" in c for c in commands), commands  # the example is still this
    home, shims = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    shims.mkdir()
    shim = shims / "memoryclaw"  # `memoryclaw` on PATH is this checkout's
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memoryclaw "$@"\n')
    shim.chmod(0o755)
    env = openclaw_env(home, ensure_openclaw())
    env["PATH"] = f"{shims}:{env['PATH']}"
    env.update({k: "memoryclaw test" for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")})
    env.update({k: "test@example.com" for k in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL")})
    model = LoopbackModel(reply="Dr. Lena Hoffman is on 020 7946 0321.").start()
    try:
        OpenClaw(home, home / "memoryclaw-vault", env, model).use_model()
        done = subprocess.run(
            ["bash", "-e", "-c", "\n".join(commands)],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT * 2,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        asked = [prompt_text(r) for r in model.chat_requests()]
    finally:
        model.stop()
    assert asked, "OpenClaw never called the model"
    prompt = asked[0]
    asks = [m.group(1) for c in commands if (m := re.search(r'agent .*-m "([^"]+)"', c))]
    assert asks and asks[0] in prompt, (asks, prompt[-400:])
    assert "<memoryclaw>" in prompt, "nothing recalled: " + prompt[-400:]
    block = prompt[prompt.index("<memoryclaw>") : prompt.index("</memoryclaw>")]
    assert "Dentist: Dr. Lena Hoffman, 020 7946 0321" in block, block
