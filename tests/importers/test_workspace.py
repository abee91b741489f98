"""Importing into the vault: ``Vault.import_openclaw`` over an OpenClaw state folder laid out
as OpenClaw 2026.9.6 lays it out (workspace files, the per-agent SQLite session store, legacy
JSONL transcripts), ``Vault.import_notes`` over a folder of notes, ``ingest`` of OpenAI-style
chats, and the CLI commands over them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryclaw import InvalidInputError, RecallContext, Vault
from memoryclaw.serve.openclaw import existing_memory_hint
from memoryclaw.vault.facts import parse_facts
from memoryclaw.vault.rawlogs import unprocessed_logs
from tests.cli.test_cli import clean_env, snapshot

from ..openclaw_state import MEMORY, make_state


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """An OpenClaw state folder with two agents (main, ops) and their memory."""
    return make_state(tmp_path / "openclaw")


def test_import_brings_in_files_notes_and_transcripts(vault: Vault, state: Path) -> None:
    report = vault.import_openclaw(state)
    assert (report.facts, report.notes, report.conflicts) == (4, 9, 1)
    assert (report.episodes, report.sessions, report.turns) == (6, 3, 5)
    assert report.consolidation is not None
    logs = report.consolidation["logs_processed"]
    assert sum("_openclaw_raw.md" in p or "_telegram_raw.md" in p for p in logs) >= 3
    main = (vault.root / "semantic" / "openclaw-main.md").read_text()
    assert main.startswith("---\nagent: main\nscope: owner\n---\n# OpenClaw memory of agent main")
    assert "- Locksmith: Keyworth Locks, 020 7946 0555 <!-- source: openclaw:MEMORY.md:4;" in main
    assert (
        "- Timezone: Europe/Lisbon <!-- source: openclaw:USER.md:11; updated: 2026-11-02;" in main
    )
    assert "- Falcon launch: 2026-12-01 <!-- source: openclaw:memory/projects.md:3;" in main
    assert "window seats" not in main  # a note, not an entity: value fact
    ops = (vault.root / "semantic" / "openclaw-ops.md").read_text()
    assert "agent: ops" in ops and "On-call pager: 07700 900123" in ops
    # the sample vault's dentist differs: the owner decides which is current
    pending = (vault.root / "semantic" / "_pending.md").read_text()
    assert "- CONFLICT Dentist: Harbourside Dental (was Dr. Lena Hoffman" in pending
    assert "source: openclaw:MEMORY.md:5" in pending
    [memory] = (vault.root / "episodes").glob("*_imported-memory-md-of-openclaw-agent-main.md")
    text = memory.read_text()
    assert "source: openclaw:MEMORY.md\n" in text and "source_lines: [4, 5, 8]" in text
    assert text.endswith("- Prefers window seats on long flights\n")
    [daily] = (vault.root / "episodes").glob("2026-11-20_12-00-00_imported-*.md")
    text = daily.read_text()
    assert "source: openclaw:memory/2026-11-20.md" in text and "agent: main" in text
    assert "- Hearthwarm Heating engineer comes Thursday at 8am" in text


def test_a_second_import_adds_nothing(vault: Vault, state: Path) -> None:
    first = vault.import_openclaw(state)
    before = snapshot(vault.root)
    again = vault.import_openclaw(state)
    assert again.added == 0 and again.files == []
    assert again.known_items == first.facts + first.notes + first.conflicts
    assert (again.known_episodes, again.known_turns) == (first.episodes, first.turns)
    assert snapshot(vault.root) == before


def test_lines_added_to_a_note_later_are_added_to_its_episode(vault: Vault, state: Path) -> None:
    vault.import_openclaw(state)
    memory = state / "workspace" / "MEMORY.md"
    memory.write_text(MEMORY + "- Boiler: Hearthwarm Heating\n")
    later = vault.import_openclaw(state)
    assert (later.facts, later.notes, later.episodes) == (1, 1, 0)
    [episode] = (vault.root / "episodes").glob("*_imported-memory-md-of-openclaw-agent-main.md")
    text = episode.read_text()
    assert "source_lines: [4, 5, 8, 9]" in text and text.endswith("- Boiler: Hearthwarm Heating\n")


def test_recall_honours_agents_and_conversations(vault: Vault, state: Path) -> None:
    vault.import_openclaw(state)
    direct = RecallContext(agent="main", session="agent:main:explicit:later")
    group = RecallContext(agent="main", session="agent:main:telegram:group:-100123")
    ops = RecallContext(agent="ops", session="agent:ops:main")
    for query in ("locksmith phone", "window seats on flights"):
        assert vault.retrieve(query, context=direct).context.count("MEMORY.md of OpenClaw") == 1
        assert (
            "MEMORY.md of OpenClaw agent main" not in vault.retrieve(query, context=group).context
        )
        assert "MEMORY.md of OpenClaw agent main" not in vault.retrieve(query, context=ops).context
    assert "Keyworth Locks" in vault.retrieve("locksmith phone", context=direct).context
    assert "07700 900123" in vault.retrieve("on-call pager", context=ops).context
    assert "Nandos" in vault.retrieve("team lunch Friday Nandos", context=group).context
    assert "Nandos" not in vault.retrieve("team lunch Friday Nandos", context=direct).context


@pytest.mark.parametrize(
    ("agent", "since", "expected"),
    [
        ("ops", None, (2, 0, 1, 1, 1)),
        (None, date(2026, 11, 1), (12, 1, 5, 2, 4)),
    ],
    ids=["one-agent", "since"],
)
def test_agent_and_since_narrow_the_import(
    vault: Vault, state: Path, agent: str | None, since: date | None, expected: tuple[int, ...]
) -> None:
    report = vault.import_openclaw(state, agent=agent, since=since)
    facts_and_notes = report.facts + report.notes
    got = (facts_and_notes, report.conflicts, report.episodes, report.sessions, report.turns)
    assert got == expected


def test_dry_run_counts_and_writes_nothing(vault: Vault, state: Path) -> None:
    before = snapshot(vault.root)
    dry = vault.import_openclaw(state, dry_run=True)
    assert dry.dry_run and dry.added == 25 and dry.files == []
    assert snapshot(vault.root) == before
    assert vault.import_openclaw(state).added == dry.added


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda s: None, "no OpenClaw state folder here"),
        (
            lambda s: (s / "agents/main/agent/openclaw-agent.sqlite").write_bytes(b"x" * 200),
            "cannot",
        ),
    ],
    ids=["no-state", "not-sqlite"],
)
def test_bad_sources_are_named(
    vault: Vault, state: Path, tmp_path: Path, setup: Any, message: str
) -> None:
    target = tmp_path / "nowhere" if message.startswith("no ") else state
    setup(target)
    before = snapshot(vault.root)
    with pytest.raises(InvalidInputError) as caught:
        vault.import_openclaw(target)
    assert message in str(caught.value) or "not an OpenClaw session store" in str(caught.value)
    assert str(target) in str(caught.value)
    assert snapshot(vault.root) == before


@pytest.mark.parametrize("agent", ["../etc", "nobody"], ids=["not-an-id", "unknown"])
def test_an_agent_openclaw_does_not_have_is_refused(vault: Vault, state: Path, agent: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        vault.import_openclaw(state, agent=agent)
    assert caught.value.field == "agent" and "(it has main, ops)" in str(caught.value)


def test_install_hint_names_what_openclaw_holds(state: Path, tmp_path: Path) -> None:
    found = existing_memory_hint({"OPENCLAW_STATE_DIR": str(state)})
    assert any(line.startswith("agent main: MEMORY.md, USER.md") for line in found)
    assert any("2 daily notes" in line and "session transcripts" in line for line in found)
    empty = tmp_path / "fresh"
    (empty / "workspace").mkdir(parents=True)
    (empty / "workspace" / "USER.md").write_text("# USER.md\n\n## Directives\n\n- Prefer ...\n")
    assert existing_memory_hint({"OPENCLAW_STATE_DIR": str(empty)}) == []


# ----------------------------------------------------------------------- notes folder


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder of notes: an Obsidian vault with a Claude Code memory file in it."""
    root = tmp_path / "Second Brain"
    (root / "daily").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "workspace.md").write_text("- not a note\n")
    (root / "CLAUDE.md").write_text("# Project rules\n\n- Use uv for Python\n- Editor: Helix\n")
    (root / "daily" / "2026-03-02.md").write_text("# Climbing\n\nBouldering at The Arch.\n")
    (root / "Reading list.md").write_text("- Piranesi\n- The Dispossessed\n")
    prose = root / "Trip to Porto.md"
    prose.write_text("Porto trip\n\nStayed near Ribeira; the tram to Foz was worth it.\n")
    os.utime(prose, (1790000000, 1790000000))  # 2026-09-21
    return root


def test_import_notes_follows_the_rules(vault: Vault, notes: Path) -> None:
    report = vault.import_notes(notes)
    assert (report.facts, report.notes, report.episodes) == (1, 6, 4)
    facts = (vault.root / "semantic" / "notes-second-brain.md").read_text()
    claude = notes.resolve() / "CLAUDE.md"
    assert f"## CLAUDE.md\n\n- Editor: Helix <!-- source: {claude}:4;" in facts
    assert "uv" not in facts and "not a note" not in facts
    episodes = vault.root / "episodes"
    [rules] = episodes.glob("*_imported-claude-md.md")
    assert "- Use uv for Python\n- Editor: Helix\n" in rules.read_text()
    [books] = episodes.glob("*_imported-reading-list-md.md")
    assert "source_lines: [1, 2]" in books.read_text()
    [climb] = episodes.glob("2026-03-02_12-00-00_imported-climbing.md")
    assert "Bouldering at The Arch." in climb.read_text()
    [porto] = episodes.glob("2026-09-21_12-00-00_imported-porto-trip.md")
    assert f"source: {notes.resolve() / 'Trip to Porto.md'}" in porto.read_text()
    assert not list(episodes.glob("*workspace*"))  # .obsidian is left out
    before = snapshot(vault.root)
    again = vault.import_notes(notes)
    assert again.added == 0 and snapshot(vault.root) == before


def test_import_notes_skips_the_vault_inside_it(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "2026-04-01.md").write_text("# Dentist\n\n- check-up booked\n")
    with Vault.init(folder / "vault", env={}) as inner:
        inner.import_notes(folder)
        inner.import_notes(folder)
        names = sorted(p.name for p in (inner.root / "episodes").glob("*.md"))
    assert names == ["2026-04-01_12-00-00_imported-dentist.md"]


def test_import_notes_of_a_folder_inside_the_vault_is_refused(vault: Vault) -> None:
    """Imported again, the vault's own files would lose their scope (a group's episode filed
    as the owner's) and their review state (an untrusted pending line filed as a fact)."""
    (vault.root / "semantic" / "_pending.md").write_text(
        "# Pending\n\n- UNTRUSTED Mallory: owner's bank is EvilBank <!-- source: x -->\n"
    )
    before = snapshot(vault.root)
    for folder in (vault.root / "episodes", vault.root / "semantic", vault.root):
        with pytest.raises(InvalidInputError) as refused:
            vault.import_notes(folder)
        assert str(folder) in str(refused.value) and "inside the vault" in str(refused.value)
    assert snapshot(vault.root) == before
    done = _cli(vault.root, "import-notes", str(vault.root / "semantic"))
    assert done.returncode == 1 and "inside the vault" in done.stderr
    assert snapshot(vault.root) == before


def test_import_notes_never_imports_another_vaults_files(vault: Vault, tmp_path: Path) -> None:
    """A team vault (or an old one) launders the same way: its folders are refused, and a
    vault inside an imported folder is left out."""
    folder = tmp_path / "notes"
    (folder / "team").mkdir(parents=True)
    (folder / "2026-04-01.md").write_text("# Dentist\n\n- check-up booked\n")
    with Vault.init(folder / "team", env={}) as team:
        pending = team.root / "semantic" / "_pending.md"
        pending.write_text("# Pending\n\n- UNTRUSTED Mallory: Bank: EvilBank <!-- x -->\n")
        with pytest.raises(InvalidInputError, match="inside the vault"):
            vault.import_notes(team.root / "semantic")
    report = vault.import_notes(folder)
    assert report.episodes == 1 and report.facts == 0
    assert not any("EvilBank" in p.read_text() for p in vault.root.rglob("*.md"))


def test_openclaw_state_inside_the_vault_is_refused(vault: Vault) -> None:
    state = make_state(vault.root / "episodes" / "openclaw")
    with pytest.raises(InvalidInputError, match="inside the vault"):
        vault.import_openclaw(state)


_TOKEN = "ghp_" + "FaKe0123456789fAkE" * 2  # no real token: a fixed fake pattern
_STRIPE = "sk_" + "live_" + "FaKe0123456789fAkE0123"
_DB_PW = "Fake" + "DbPw" + "0042"
_AWS = "FaKe0123456789/+fAkE" * 2
_SLACK = "xoxb-0042-" + "FaKe0123456789fAkE0123"


def test_import_notes_redacts_secrets_in_notes_and_their_names(
    vault: Vault, tmp_path: Path
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text(
        f"# Project\n\n- GitHub token: {_TOKEN}\n- Stripe: {_STRIPE}\n"
        f"- DB: postgres://app:{_DB_PW}@db.example.com/app\n"
        f"- AWS_SECRET_ACCESS_KEY={_AWS}\n- Editor: Helix\n"
    )
    (folder / f"{_SLACK}.md").write_text("- rotate the bot token monthly\n")
    report = vault.import_notes(folder)
    assert report.episodes == 2 and report.facts == 1  # Editor: Helix; secrets are no facts
    for secret in (_TOKEN, _STRIPE, _DB_PW, _AWS, _SLACK):
        for path in vault.root.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), (secret, path)
    [claude] = (vault.root / "episodes").glob("*_imported-claude-md.md")
    text = claude.read_text()
    assert "- GitHub token: [REDACTED:github-token]\n" in text
    assert "source_lines: [3, 4, 5, 6, 7]" in text  # line numbers of the note as it is
    [named] = (vault.root / "episodes").glob("*redacted-slack-token*.md")
    assert f"source: {folder.resolve()}/[REDACTED:slack-token].md" in named.read_text()
    assert vault.import_notes(folder).added == 0  # a second import finds them again


def test_openclaw_import_redacts_memory_files_and_daily_notes(vault: Vault, tmp_path: Path) -> None:
    state = make_state(tmp_path / "openclaw")
    workspace = state / "workspace"
    masked = "sk-pro\u2026" + "q7Zx"  # how OpenClaw's config view shows a key
    with (workspace / "MEMORY.md").open("a") as memory:
        memory.write(f"- OpenAI key: {masked}\n- Deploy: PGPASSWORD={_DB_PW} psql -h db\n")
    (workspace / "memory" / "2026-11-21.md").write_text(f"# Keys\n\n- ci uses {_TOKEN}\n")
    vault.import_openclaw(state)
    for path in vault.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in (_DB_PW, _TOKEN, "q7Zx", "q7zx"):
                assert secret.encode() not in data, (secret, path)
    assert not vault.search("q7Zx").results


# ------------------------------------------------------------------------ ingest chats

CHAT = {
    "id": "chat-7",
    "created": 1795476000,
    "messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Book the Porto hotel, Casa Ribeira."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "book_hotel", "arguments": '{"n": 2}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "booked, ref CR-88"},
        {"role": "assistant", "content": "Booked: reference CR-88."},
    ],
}


def test_ingest_takes_messages_arrays(vault: Vault) -> None:
    report = vault.ingest([CHAT, {**CHAT, "id": "chat-8"}], source="chats.jsonl")
    assert (report.turns, report.sessions) == (8, ("chat-7", "chat-8"))
    [log] = [g for g in unprocessed_logs(vault.root) if g.session == "chat-7"]
    roles = [(t.role, t.tool) for t in log.turns]
    assert roles == [
        ("user", None),
        ("tool_call", "book_hotel"),
        ("tool_result", "book_hotel"),
        ("assistant", None),
    ]
    assert log.turns[0].timestamp.isoformat() == "2026-11-23T23:20:00+00:00"


def _cli(vault: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args],
        capture_output=True,
        text=True,
        env=env or clean_env(),
        timeout=120,
        check=False,
    )
    return done


def test_cli_openclaw_import(vault_dir: Path, state: Path) -> None:
    env = clean_env(OPENCLAW_STATE_DIR=str(state))
    dry = _cli(vault_dir, "openclaw", "import", "--dry-run", "--agent", "main", env=env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("would add 3 facts, 8 notes, 1 conflict (to review), 5 episodes")
    first = _cli(vault_dir, "openclaw", "import", "--json", "--since", "2026-11-01", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["episodes"] == 5
    again = _cli(vault_dir, "openclaw", "import", env=env)
    assert again.returncode == 0 and "added 0 facts" in again.stdout
    bad = _cli(vault_dir, "openclaw", "import", "--since", "23/11/2026", env=env)
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_cli_import_notes(vault_dir: Path, notes: Path) -> None:
    done = _cli(vault_dir, "import-notes", str(notes), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["episodes"] == 4
    missing = _cli(vault_dir, "import-notes", str(notes / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_cli_ingest_reads_a_json_chat(vault_dir: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT, indent=2))
    done = _cli(vault_dir, "ingest", str(chat), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turns"] == 4
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"messages": [{"role": "narrator", "content": "x"}]}))
    failed = _cli(vault_dir, "ingest", str(broken))
    assert failed.returncode == 1
    assert f"{broken}:1: messages[0]: role 'narrator'" in failed.stderr


_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=10)
_ITEMS = st.dictionaries(
    _KEY.map(str.capitalize),
    st.lists(_KEY, min_size=1, max_size=4).map(" ".join),
    min_size=1,
    max_size=8,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ITEMS)
def test_memory_items_come_back_as_facts_and_one_episode(items: dict[str, str]) -> None:
    """Whatever entity: value items MEMORY.md holds, the fact file reads back exactly those
    facts, each pointing at its line, the episode holds every item, and importing again
    changes nothing."""
    items = {k: v for k, v in items.items() if k.casefold() not in {"memory", "note"}}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = root / "openclaw" / "workspace"
        workspace.mkdir(parents=True)
        lines = [f"- {entity}: {value}" for entity, value in items.items()]
        (workspace / "MEMORY.md").write_text("# Memory\n" + "\n".join(lines) + "\n")
        with Vault.init(root / "vault", env={}) as vault:
            first = vault.import_openclaw(root / "openclaw")
            text = (vault.root / "semantic" / "openclaw-main.md").read_text()
            facts = parse_facts(text, "semantic/openclaw-main.md", "2026-01-01")
            assert {(f.entity, f.value) for f in facts} == set(items.items())
            assert {f.source for f in facts} == {
                f"openclaw:MEMORY.md:{n}" for n in range(2, 2 + len(items))
            }
            [episode] = (vault.root / "episodes").glob("*.md")
            assert all(line in episode.read_text() for line in lines)
            assert (first.facts, first.notes, first.episodes) == (len(items), len(items), 1)
            before = snapshot(vault.root)
            assert vault.import_openclaw(root / "openclaw").added == 0
            assert snapshot(vault.root) == before


def test_import_notes_reads_claude_code_memory_and_obsidian_properties(
    vault: Vault, tmp_path: Path
) -> None:
    memory = tmp_path / "claude" / "projects" / "-home-sam-churn" / "memory"
    memory.mkdir(parents=True)
    (memory / "user_role.md").write_text(
        "---\nname: user-role\ndescription: Sam prefers polars over pandas\ntype: user\n---\n"
        "Works on churn models; wants plots in plotly.\n"
    )
    (memory / "MEMORY.md").write_text("- [user role](user_role.md) — polars, plotly\n")
    (tmp_path / "claude" / "Standup.md").write_text(
        "---\ndate: 2026-02-03\ntags: [work]\n---\n# Standup\n\nShipped the churn dashboard.\n"
    )
    report = vault.import_notes(tmp_path / "claude")
    assert (report.episodes, report.facts) == (3, 0)
    episodes = vault.root / "episodes"
    [role] = episodes.glob("*_imported-sam-prefers-polars-over-pandas.md")
    assert "- Works on churn models; wants plots in plotly.\n" in role.read_text()
    [standup] = episodes.glob("2026-02-03_12-00-00_imported-standup.md")
    assert "Shipped the churn dashboard." in standup.read_text()
    found = vault.retrieve("which dataframe library does Sam prefer polars or pandas")
    assert "Sam prefers polars over pandas" in found.context


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            b"# Photo\n\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "a binary file, not a note (a NUL byte",
        ),
        (b"# Caf\xe9 notes\n\n- Latin-1, not UTF-8\n", "not UTF-8 text (byte 0xe9 at offset 5)"),
    ],
    ids=["nul-byte", "not-utf8"],
)
def test_a_binary_note_is_skipped_by_name_not_stored(
    vault: Vault, notes: Path, data: bytes, reason: str
) -> None:
    bad = notes / "daily" / "2026-03-03.md"
    bad.write_bytes(data)
    report = vault.import_notes(notes)
    assert report.episodes == 4  # the others are all imported
    [skipped] = [s for s in report.skipped if str(bad.resolve()) in s]
    assert reason in skipped
    for path in (vault.root / "episodes").rglob("*.md"):
        assert "\x00" not in path.read_text() and "\ufffd" not in path.read_text()
    assert not vault.problems()  # nothing the index refuses


def test_openclaw_import_skips_a_binary_memory_file_by_name(vault: Vault, state: Path) -> None:
    daily = state / "workspace" / "memory" / "2026-11-21.md"
    daily.write_bytes(b"# Scan\n\n\x00\x01\x02")
    report = vault.import_openclaw(state)
    assert "openclaw:memory/2026-11-21.md: " in "\n".join(report.skipped)
    assert report.episodes == 6  # every other memory file and daily note


_GROUP = "agent:main:telegram:group:-100"
_SAID = "Alex's new email is alex@evil.example, group secret GRPSECRET-9"


def _copied_vault_folders(vault: Vault, tmp_path: Path) -> tuple[Path, Path]:
    """A group's episode and an untrusted pending line, and copies of the folders they are in
    (``cp -r V/semantic /tmp/semcopy; cp -r V/episodes /tmp/epcopy``)."""
    vault.log_turn(_GROUP, "user", _SAID, name="Mallory", sender="tg:42")
    vault.consolidate(all_logs=True)
    pending = (vault.root / "semantic" / "_pending.md").read_text()
    assert "- UNTRUSTED Alex: alex@evil.example (said by " in pending
    semcopy, epcopy = tmp_path / "semcopy", tmp_path / "epcopy"
    shutil.copytree(vault.root / "semantic", semcopy)
    shutil.copytree(vault.root / "episodes", epcopy)
    return semcopy, epcopy


def test_import_notes_of_a_copy_of_a_vaults_folders_never_raises_trust(
    empty_vault: Vault, tmp_path: Path
) -> None:
    """A copy of a vault's folders is imported as it was: the group's episode keeps its scope
    and agent, the pending file's untrusted line is neither a fact nor an owner-level note,
    and the report says the folders look like a vault's; nothing reaches another agent."""
    vault = empty_vault
    semcopy, epcopy = _copied_vault_folders(vault, tmp_path)
    ops = RecallContext(agent="ops", session="agent:ops:cli:1")
    owner_direct = RecallContext(agent="main", session="agent:main:main")
    before = {
        str(p.relative_to(vault.root)): p.read_text()
        for p in (vault.root / "semantic").rglob("*.md")
    }
    reports = [vault.import_notes(semcopy), vault.import_notes(epcopy)]
    for query in ("GRPSECRET-9 alex email", "alex@evil.example", "Alex email"):
        for context in (ops, owner_direct):
            recalled = vault.retrieve(query, context=context).context
            assert "GRPSECRET" not in recalled and "evil.example" not in recalled, context
    for path in (vault.root / "episodes").glob("*.md"):
        episode = path.read_text()
        if "evil.example" in episode or "GRPSECRET" in episode:
            assert "\nscope: group:telegram:group:-100\n" in episode, path.name
            assert "\nagent: main\n" in episode, path.name
    semantic = {
        str(p.relative_to(vault.root)): p.read_text()
        for p in (vault.root / "semantic").rglob("*.md")
    }
    assert semantic == before  # no fact, no new pending line, no notes-semcopy.md
    assert reports[0].facts == reports[1].facts == 0
    [pending_skip] = [s for s in reports[0].skipped if "_pending.md" in s]
    assert str(semcopy.resolve() / "_pending.md") in pending_skip and "review" in pending_skip
    for report, folder in zip(reports, (semcopy, epcopy)):
        assert any(str(folder) in n and "memoryclaw vault" in n for n in report.notices)
    # the same at the command line: the notice and the skipped file are printed
    done = _cli(vault.root, "import-notes", str(semcopy))
    assert done.returncode == 0, done.stderr
    assert "_pending.md" in done.stdout and "memoryclaw vault" in done.stdout


def test_review_lines_and_scoped_fact_lines_are_never_filed_owner_level(
    vault: Vault, tmp_path: Path
) -> None:
    """Lines a vault wrote, found in any note (a pending file renamed, a fact file copied),
    are left out by name: an import would file them owner-level, which they were not."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "review.md").write_text(
        "# Pending\n\n- UNTRUSTED Alex: alex@evil.example (said by Mallory) <!-- source: x -->\n"
        "- CONFLICT (sync) Bank: EvilBank\n- LOW Alex: dislikes-cheese <!-- source: y -->\n"
        "- Editor: Helix\n"
    )
    (folder / "contacts.md").write_text(
        "# Contacts\n\n- Bob: bob@example.com <!-- source: l.md; agent: ops; scope: direct -->\n"
        "- Eve: eve@example.com <!-- source: l.md; scope: group:telegram:group:-1 -->\n"
        "- Carol: carol@example.com <!-- source: by hand; scope: owner -->\n"
    )
    report = vault.import_notes(folder)
    written = "".join(p.read_text() for p in vault.root.rglob("*.md"))
    for gone in ("evil.example", "EvilBank", "dislikes-cheese", "bob@example", "eve@example"):
        assert gone not in written, gone
    assert "Helix" in written and "carol@example.com" in written
    assert sorted(s.split(": ", 1)[1][:2] for s in report.skipped) == ["2 ", "3 "]
    assert [str(folder) in n for n in report.notices] == [True]


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("id: ep-1\ntimestamp: 2025-01-01T00:00:00Z\nscope: 'group:'", "scope 'group:'"),
        ("agent: [a, b]\nscope: direct", "agent ['a', 'b']"),
        ("session: agent:main:main\nagent: 'two words'", "agent 'two words'"),
    ],
    ids=["empty-conversation", "agent-not-text", "agent-with-space"],
)
def test_a_vault_note_whose_scope_cannot_be_kept_is_skipped_by_name(
    vault: Vault, tmp_path: Path, frontmatter: str, problem: str
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "episode.md").write_text(f"---\n{frontmatter}\n---\n- the launch code is blue\n")
    report = vault.import_notes(folder)
    assert report.added == 0
    [skipped] = report.skipped
    assert skipped.startswith(f"{(folder / 'episode.md').resolve()}: ") and problem in skipped
    assert not any("launch code" in p.read_text() for p in vault.root.rglob("*.md"))


def test_a_vault_episode_without_a_scope_keeps_its_conversations(
    vault: Vault, tmp_path: Path
) -> None:
    """An episode written before scopes existed: its session says where it was made."""
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "episode.md").write_text(
        "---\nid: ep-old\ntimestamp: 2025-01-01T10:00:00Z\nsummary: Team chat\n"
        "session: agent:main:telegram:group:-7\nagent: main\n---\n- the rota changes in May\n"
    )
    (folder / "plain.md").write_text("---\nscope: work\ntitle: Work\n---\n- rota notes\n")
    report = vault.import_notes(folder)
    assert report.episodes == 2 and report.skipped == []
    [kept] = [p.read_text() for p in vault.root.rglob("*.md") if "rota changes" in p.read_text()]
    assert "\nscope: group:telegram:group:-7\n" in kept and "\nagent: main\n" in kept
    assert "summary: Team chat\n" in kept
    [plain] = [p.read_text() for p in vault.root.rglob("*.md") if "- rota notes" in p.read_text()]
    assert "\nscope: owner\n" in plain  # an Obsidian "scope" property is no vault's scope
    assert [str(folder) in n for n in report.notices] == [True]


def test_a_copied_raw_log_of_a_group_keeps_its_group(vault: Vault, tmp_path: Path) -> None:
    """A raw log names its kind when its session key does not: a group stays a group."""
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "2026-01-02_10-00-00_cli_raw.md").write_text(
        "---\nsession: g1\nagent: main\nkind: group\n---\n"
        "### participant (Mallory) [tg:42] · 2026-01-02T10:00:00Z\nthe vault code is LOGX-3\n"
    )
    report = vault.import_notes(folder)
    assert report.episodes == 1
    [kept] = [p.read_text() for p in vault.root.rglob("*.md") if "LOGX-3" in p.read_text()]
    assert "\nscope: group:g1\n" in kept
    direct = RecallContext(agent="main", session="agent:main:main")
    assert "LOGX-3" not in vault.retrieve("vault code LOGX-3", context=direct).context
