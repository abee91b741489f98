"""Every secret of the corpus, sent through every writer of a git vault, reaches no file, no
byte of the index and no commit.

One vault per writer, built once (module-scoped), then one assertion per secret:

* ``log``: the CLI, one turn at a time, the sample also as the speaker's name and the
  channel, and a secret whose format names it as the agent id;
* ``ingest``: a JSON-lines file of user turns, tool calls carrying the sample in their
  arguments (a shell command among them), tool results and an OpenAI-style chat;
* ``import-notes``: a memory file (the split secrets too: a heading naming each, the value
  under it), a daily note and a prose note holding every sample, notes
  named after samples (and after secrets whose format names them), a folder named after one
  and the imported folder named after another;
* ``openclaw-import``: ``MEMORY.md`` (with the split secrets) and a daily note holding every
  sample, and a session
  transcript in which the samples are said and passed to a tool.

Each vault is then consolidated (episodes, facts, skill drafts) with auto-commit on.  A secret
split over two turns (the first names it, the second is the value alone) goes through every
writer.  A sync's review lines are checked on their own, below.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memoryclaw.share.conflicts import _pend
from memoryclaw.vault.redact import redact
from tests.cli.test_cli import clean_env, run

from .openclaw_state import T0, make_state, make_store, message
from .secret_corpus import MASKED_TAIL, SAMPLES, SPLIT_SAMPLES

# Every secret, with what else of it must not survive: a masked key's visible tail is a
# fragment of the real key (and the index folds case).
SECRETS: list[tuple[str, tuple[str, ...]]] = [
    (ident, (secret, *((MASKED_TAIL, MASKED_TAIL.lower()) if "masked" in ident else ())))
    for ident, _, secret in SAMPLES
] + [(ident, (secret,)) for ident, _, _, secret in SPLIT_SAMPLES]
WRITERS = ("log", "ingest", "import-notes", "openclaw-import")


@dataclass(frozen=True)
class Written:
    """What a writer left in its vault: every file (``.git`` aside) and the whole history."""

    writer: str
    files: dict[str, bytes]
    history: bytes

    def holding(self, fragment: str) -> list[str]:
        """Where ``fragment`` is: vault paths, and ``git log -p --all``."""
        data = fragment.encode()
        found = [rel for rel, content in self.files.items() if data in content]
        return found + (["git log -p --all"] if data in self.history else [])


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def _git_vault(root: Path) -> Path:
    vault = root / "vault"
    _ok(run(None, "init", "--git", str(vault)))
    # a pattern seen in two logs is a skill draft: the drafts are written too
    (vault / "memoryclaw.yaml").write_text("consolidation:\n  skillThreshold: 2\n")
    for key, value in (("user.email", "t@example.com"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(vault), "config", key, value], check=True)
    return vault


def _by_log(vault: Path, root: Path) -> None:
    for number, (_, text, secret) in enumerate(SAMPLES):
        session = f"cli-{number % 3}"
        labels = []
        if "\n" not in text and len(text) <= 120:  # a speaker's name and a channel
            labels += ["--name", text, "--channel", text]
        if redact(secret) != secret and len(secret) <= 120 and not any(c.isspace() for c in secret):
            labels += ["--agent", secret]  # an agent id: the log's agent, in a log of its own
            session = f"cli-agent-{number}"
        _ok(run(vault, "log", "--session", session, "--role", "user", *labels, "-", stdin=text))
    for ident, first, second, _ in SPLIT_SAMPLES:
        for role, text in _split(first, second):
            _ok(run(vault, "log", "--session", ident, "--role", role, "-", stdin=text))


def _by_ingest(vault: Path, root: Path) -> None:
    records: list[dict[str, Any]] = []
    for number, (ident, text, _) in enumerate(SAMPLES):
        session = f"s{number % 3}"
        arguments = {"to": "ops@example.com", "body": text, "apiKey": text, "note": ident}
        records += [
            {"session": session, "role": "user", "content": f"{ident}: {text}"},
            {"session": session, "role": "tool_call", "tool": "shell", "content": text},
            {"session": session, "role": "tool_result", "tool": "shell", "content": text},
            {"session": session, "role": "tool_call", "tool": "send_mail",
             "content": json.dumps(arguments)},
        ]  # fmt: skip
    for ident, first, second, _ in SPLIT_SAMPLES:
        records += [
            {"session": ident, "role": role, "content": text}
            for role, text in _split(first, second)
        ]
    calls = [
        {"id": f"c{n}", "function": {"name": "run", "arguments": json.dumps({"cmd": text})}}
        for n, (_, text, _) in enumerate(SAMPLES)
    ]
    chat = [
        {"role": "user", "content": "deploy it"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls),
    ]
    records.append({"id": "chat-1", "created": 1795476000, "messages": chat})
    stdin = "".join(json.dumps(r) + "\n" for r in records)
    _ok(run(vault, "ingest", "-", stdin=stdin))


def _split(first: str, second: str) -> list[tuple[str, str]]:
    """A secret said in two turns, a reply between them."""
    return [("user", first), ("assistant", "Go ahead."), ("user", second)]


def _split_note() -> str:
    """The split secrets as a note writes them: a heading naming each, the value under it."""
    return "".join(f"\n## {first}\n\n- {second}\n" for _, first, second, _ in SPLIT_SAMPLES)


def _file_name(text: str) -> str | None:
    """``text`` as a file name, when it can be one."""
    name = f"{text}.md"
    return name if "/" not in text and "\n" not in text and len(name.encode()) < 250 else None


def _by_import_notes(vault: Path, root: Path) -> None:
    secret = dict((ident, s) for ident, _, s in SAMPLES)
    folder = root / f"notes {secret['slack-bot']}"  # the folder's name is the fact file's
    inner = folder / secret["github-classic"]  # a folder named after a secret
    inner.mkdir(parents=True)
    items = "".join(f"- {ident}: {text}\n" for ident, text, _ in SAMPLES)
    (folder / "CLAUDE.md").write_text(f"# Project\n\n{items}{_split_note()}")
    (folder / "2026-11-20.md").write_text(
        "# Daily\n\n" + "".join(f"{text}\n\n" for _, text, _ in SAMPLES)
    )
    (inner / "Ideas.md").write_text("Ideas\n\n" + "\n\n".join(t for _, t, _ in SAMPLES))
    for ident, text, value in SAMPLES:
        # a secret alone names a note when its format is its own (a bare password is a word)
        alone = _file_name(value) if redact(value) != value else None
        for name in {_file_name(text), alone} - {None}:
            assert name is not None
            (folder / name).write_text(f"- a note about {ident}\n")
    _ok(run(vault, "import-notes", str(folder)))
    _ok(run(vault, "import-notes", str(folder)))  # again: lines are looked up, not added


def _by_openclaw_import(vault: Path, root: Path) -> None:
    state = make_state(root / "openclaw")
    workspace = state / "workspace"
    items = "".join(f"- {ident}: {text}\n" for ident, text, _ in SAMPLES)
    (workspace / "MEMORY.md").write_text(f"# Memory\n\n## Keys\n{items}{_split_note()}")
    (workspace / "memory" / "2026-11-21.md").write_text(
        "# Keys\n\n" + "".join(f"{text}\n\n" for _, text, _ in SAMPLES)
    )
    events: list[dict[str, Any]] = [{"type": "session", "id": "k1"}]
    for n, (_, text, _) in enumerate(SAMPLES):
        call = {"type": "toolCall", "name": "exec", "arguments": {"command": text}}
        events += [
            message(f"u{n}", "user", text, T0 + 2000 * n),
            message(f"a{n}", "assistant", [call], T0 + 2000 * n + 1000),
        ]
    said = [turn for _, first, second, _ in SPLIT_SAMPLES for turn in _split(first, second)]
    for n, (role, text) in enumerate(said, start=len(events)):
        events.append(message(f"m{n}", role, text, T0 + 2000 * n))
    make_store(
        state / "agents" / "keys" / "agent" / "openclaw-agent.sqlite",
        {("k1", "agent:keys:explicit:k1"): events},
    )
    config = json.loads((state / "openclaw.json").read_text())
    config["agents"]["entries"]["keys"] = {}
    (state / "openclaw.json").write_text(json.dumps(config))
    _ok(run(vault, "openclaw", "import", env=clean_env(OPENCLAW_STATE_DIR=str(state))))


_BUILD: dict[str, Callable[[Path, Path], None]] = {
    "log": _by_log,
    "ingest": _by_ingest,
    "import-notes": _by_import_notes,
    "openclaw-import": _by_openclaw_import,
}


@pytest.fixture(scope="module", params=WRITERS)
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Written:
    """The vault one writer made from the whole corpus, consolidated and committed."""
    writer = str(request.param)
    root = tmp_path_factory.mktemp(writer)
    vault = _git_vault(root)
    _BUILD[writer](vault, root)
    _ok(run(vault, "consolidate", "--all"))
    _ok(run(vault, "reindex"))
    files = {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in sorted(vault.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(vault).parts
    }
    assert ".memoryclaw/index.db" in files
    log = subprocess.run(
        ["git", "-C", str(vault), "log", "-p", "--all"], capture_output=True, check=True
    ).stdout
    assert b"[REDACTED:" in log  # the samples were written (redacted) and committed
    return Written(writer, files, log)


def _ids() -> Iterator[Any]:
    for ident, fragments in SECRETS:
        yield pytest.param(fragments, id=ident)


@pytest.mark.parametrize("fragments", list(_ids()))
def test_no_secret_reaches_a_file_the_index_or_git(
    written: Written, fragments: tuple[str, ...]
) -> None:
    for fragment in fragments:
        assert written.holding(fragment) == [], fragment


def test_every_writer_wrote_memories(written: Written) -> None:
    """The vaults are not empty: the writers did write what the assertions search."""
    episodes = [rel for rel in written.files if rel.startswith("episodes/")]
    assert len(episodes) >= 2
    if written.writer == "ingest":  # its repeated tool calls made a skill draft
        assert any(rel.startswith("skills/") for rel in written.files)
    assert sum(content.count(b"[REDACTED:") for content in written.files.values()) >= len(SAMPLES)


def test_a_syncs_review_lines_are_redacted(tmp_path: Path) -> None:
    """Local lines that lost to a remote's go to review redacted, a key over several lines
    included (they may come from a raw log written with redaction off)."""
    (tmp_path / "semantic").mkdir()
    lines = [line for _, text, _ in SAMPLES for line in text.split("\n")]
    assert _pend(tmp_path, lines, "semantic/notes.md") > 0
    pending = (tmp_path / "semantic" / "_pending.md").read_bytes()
    for ident, fragments in SECRETS[: len(SAMPLES)]:
        for fragment in fragments:
            assert fragment.encode() not in pending, ident
