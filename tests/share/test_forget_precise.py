"""Forgetting removes what matches, everywhere, and it stays forgotten (real CLI, real git)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.share.test_forget import git, ok
from tests.test_bad_input import clean_env
from tests.test_bad_input import run as mc

SESSION_TURNS = [
    "My dentist appointment is on Tuesday at 3pm",
    "I met Joanna Lindqvist at the conference, she works at Volvo",
    "The project deadline is March 14",
    "I prefer oat milk in my coffee",
    "Joanna Lindqvist's phone is 555-0199",
    "Remind me to call mom",
    "The office door code is hunter22",
    "Joanna Lindqvist likes sailing",
    "We use postgres for the billing project",
    "Tomorrow I fly to Oslo",
]


def everything(vault: Path) -> bytes:
    """Every file of the vault but .git (index included), and its file names."""
    files = [p for p in sorted(vault.rglob("*")) if p.is_file() and ".git" not in p.parts]
    return b"\n".join(p.as_posix().encode() + b"\n" + p.read_bytes() for p in files).lower()


def make_vault(path: Path) -> Path:
    """A git vault."""
    subprocess.run([sys.executable, "-m", "memoryclaw", "init", "--git", str(path)], check=True)
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    return path


def log_session(vault: Path, turns: list[str], session: str = "s1") -> None:
    """Log these user turns into one session's raw log."""
    lines = [json.dumps({"session": session, "role": "user", "content": t}) for t in turns]
    proc = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "ingest", "-", "--json"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def two_devices_sharing_the_session(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Devices a and b on one bare remote; a logged, consolidated and synced the session, b
    pulled it.  (a, b, the remote)."""
    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    a, b = make_vault(tmp_path / "a"), make_vault(tmp_path / "b")
    for vault in (a, b):
        git(vault, "remote", "add", "origin", str(remote))
        ok(vault, "sync", "--setup")
    log_session(a, SESSION_TURNS)
    ok(a, "consolidate", "--all")
    ok(a, "sync")
    ok(b, "sync")
    return a, b, remote


@pytest.fixture
def session_vault(tmp_path: Path) -> Path:
    """A git vault with one consolidated ten-turn session mentioning Joanna Lindqvist."""
    vault = make_vault(tmp_path / "v")
    log_session(vault, SESSION_TURNS)
    assert ok(vault, "consolidate", "--all")["commit"]
    return vault


@pytest.mark.parametrize("query", ["user", "assistant", "the user", "User"])
def test_forgetting_a_role_word_removes_nothing_memoryclaw_labelled_with_it(
    session_vault: Path, query: str
) -> None:
    """memoryclaw writes "User ..." in summaries and facts and a role on every turn: a query
    of those words alone names nothing the user said, so it removes nothing."""
    preview = ok(session_vault, "forget", query, "--dry-run")
    assert preview["removed"] == 0 and preview["changes"] == []
    assert ok(session_vault, "forget", "user Lindqvist", "--dry-run")["removed"] > 0


def test_forgetting_a_name_keeps_the_rest_of_the_session(session_vault: Path) -> None:
    preview = ok(session_vault, "forget", "Joanna Lindqvist", "--dry-run")
    turns = [t for c in preview["changes"] for t in c.get("turns", [])]
    assert sorted(t["turn"] for t in turns) == [2, 5, 8]  # not all ten
    facts = [f for c in preview["changes"] for f in c.get("facts", [])]
    assert [f["value"] for f in facts] == ["555-0199"]
    episode = [c for c in preview["changes"] if c["kind"] == "episode"]
    lines = [ln["text"] for c in episode for ln in c.get("lines", [])]
    assert all("lindqvist" in text.lower() for text in lines) and len(lines) == 3
    assert not episode[0]["delete"] and episode[0]["summary_rewritten"]
    proc = mc(session_vault, "forget", "Joanna Lindqvist", "--dry-run")
    assert "fact Lindqvist phone: 555-0199 (semantic/contacts.md:" in proc.stdout
    assert "turn 5 of logs/processed/" in proc.stdout
    ok(session_vault, "forget", "Joanna Lindqvist", "--yes")
    data = everything(session_vault)
    assert b"lindqvist" not in data and b"555-0199" not in data
    for kept in (b"dentist appointment", b"deadline", b"oat milk", b"2027-03-14", b"oslo"):
        assert kept in data, kept
    processed = next((session_vault / "logs" / "processed").glob("*.md")).read_text()
    assert processed.count("[forgotten]") == 3
    assert ok(session_vault, "search", "dentist")["results"]


SPEAKERS = {
    "one-word-name": ("Zorblax", "Zorblax"),
    "surname-of-a-full-name": ("Marta Kowalczyk", "Kowalczyk"),
}


@pytest.mark.parametrize(("speaker", "query"), SPEAKERS.values(), ids=SPEAKERS.keys())
def test_forgetting_a_speaker_takes_their_name_out_of_participants_and_turn_headings(
    tmp_path: Path, speaker: str, query: str
) -> None:
    """A group member's name is in the turns' headings and the episode's participants, not
    in the words they said: forgetting the name takes it out of both (their turns go, as the
    episode lines naming them do), and the rest of the conversation stays."""
    vault = make_vault(tmp_path / "v")
    session = "agent:main:telegram:group:77"
    turns = [
        {"role": "user", "name": speaker, "content": "Let's plan the kayak trip next month"},
        {"role": "assistant", "content": "Sure, what dates work?"},
        {"role": "user", "name": speaker, "content": "The second week of June works best"},
        {"role": "user", "content": "I will bring the tent"},
    ]
    lines = [json.dumps({"session": session, **turn}) for turn in turns]
    (tmp_path / "chat.jsonl").write_text("\n".join(lines) + "\n")
    ok(vault, "ingest", str(tmp_path / "chat.jsonl"))
    ok(vault, "consolidate", "--all")
    assert ok(vault, "search", query)["results"]
    report = ok(vault, "forget", query, "--yes")
    assert report["turns"] == 2
    data = everything(vault)
    for gone in (speaker.lower().encode(), b"kayak", b"second week"):
        assert gone not in data, gone
    assert b"bring the tent" in data and b"what dates work" in data
    assert ok(vault, "search", query)["results"] == []
    (episode,) = (vault / "episodes").glob("*.md")
    assert "participants: [assistant, participant]" in episode.read_text()


def test_forget_reaches_raw_log_turns_not_yet_consolidated(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    log_session(vault, ["We watched a grey Heron at the lake", "Lunch was pasta"])
    assert ok(vault, "search", "Heron")["recent"]
    preview = ok(vault, "forget", "Heron", "--dry-run")
    assert preview["turns"] == 1 and preview["removed"] == 1
    ok(vault, "forget", "Heron", "--yes")
    found = ok(vault, "search", "Heron")
    assert found["recent"] == [] and found["results"] == []
    assert b"heron" not in everything(vault)
    assert b"pasta" in everything(vault)


def test_forgotten_words_leave_the_index_file_bytes(session_vault: Path) -> None:
    ok(session_vault, "search", "Lindqvist")
    ok(session_vault, "forget", "Lindqvist", "--yes")
    state = session_vault / ".memoryclaw"
    for name in ("index.db", "index.db-wal"):
        if (state / name).exists():
            assert b"lindqvist" not in (state / name).read_bytes().lower(), name


def test_an_interrupted_forget_is_finished_by_the_next_command(session_vault: Path) -> None:
    lock = session_vault / ".git" / "index.lock"
    lock.write_text("")
    held = mc(session_vault, "forget", "hunter22", "--yes")
    assert held.returncode != 0
    lock.unlink()
    assert b"hunter22" not in everything(session_vault)  # the files went before the commit
    assert ok(session_vault, "consolidate", "--all") is not None
    assert not (session_vault / ".memoryclaw" / "forgetting.json").exists()
    assert git(session_vault, "status", "--porcelain", "--", "episodes", "semantic") == ""
    report = ok(session_vault, "forget", "hunter22", "--yes", "--purge-history")
    assert report["purge"]["clean"] is True
    assert "hunter22" not in git(session_vault, "log", "-p", "--all").lower()


def test_purge_history_works_with_a_live_session_open(session_vault: Path) -> None:
    log_session(session_vault, ["an open session about Lindqvist and tea"], session="live")
    (session_vault / "episodes" / "untracked-note.md").write_text("---\nsummary: tea\n---\nx\n")
    report = ok(session_vault, "forget", "Lindqvist", "--yes", "--purge-history")
    assert report["purge"]["clean"] is True and report["history_purged"] >= 1
    assert "lindqvist" not in git(session_vault, "log", "-p", "--all").lower()
    assert b"lindqvist" not in everything(session_vault)


def test_purge_history_refuses_before_removing_when_tracked_files_are_dirty(
    session_vault: Path,
) -> None:
    contacts = session_vault / "semantic" / "contacts.md"
    contacts.write_text(contacts.read_text() + "- Bo: 1\n")
    proc = mc(session_vault, "forget", "Lindqvist", "--yes", "--purge-history")
    assert proc.returncode != 0 and "semantic/contacts.md" in proc.stderr
    assert b"lindqvist" in everything(session_vault)  # nothing was removed


def test_purge_then_sync_does_not_bring_the_memory_back(tmp_path: Path) -> None:
    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    a = make_vault(tmp_path / "a")
    git(a, "remote", "add", "origin", str(remote))
    ok(a, "sync", "--setup")
    log_session(a, SESSION_TURNS)
    ok(a, "consolidate", "--all")
    ok(a, "sync")
    report = ok(a, "forget", "Lindqvist", "--yes", "--purge-history")
    assert report["purge"]["pushed"].startswith("origin/")
    ok(a, "sync")
    assert b"lindqvist" not in everything(a)
    assert "lindqvist" not in git(a, "log", "-p", "--all").lower()
    assert "lindqvist" not in git(remote, "log", "-p", "--all").lower()


def test_a_forget_travels_by_sync_and_the_merge_is_scrubbed(tmp_path: Path) -> None:
    a, b, _ = two_devices_sharing_the_session(tmp_path)
    assert b"lindqvist" in everything(b)
    ok(a, "forget", "Lindqvist", "--yes")
    ok(a, "sync")
    ok(b, "sync")
    assert b"lindqvist" not in everything(b)
    assert b"oat milk" in everything(b)


def test_importing_an_export_made_before_a_forget_does_not_bring_it_back(
    session_vault: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "before.tar.gz"
    assert mc(session_vault, "export", str(archive)).returncode == 0
    ok(session_vault, "forget", "Lindqvist", "--yes")
    ok(session_vault, "import", str(archive))
    assert b"lindqvist" not in everything(session_vault)
    assert b"oat milk" in everything(session_vault)
    assert git(session_vault, "status", "--porcelain", "--", "episodes", "semantic", "logs") == ""
    assert ok(session_vault, "search", "Lindqvist")["results"] == []


def test_reimporting_notes_after_a_forget_does_not_bring_it_back(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    notes = tmp_path / "notes"
    notes.mkdir()
    memory = notes / "MEMORY.md"
    memory.write_text("# Memory\n\n- Boat slip is Quay-Nine at Marstrand\n- Coffee: oat milk\n")
    ok(vault, "import-notes", str(notes))
    assert b"marstrand" in everything(vault)
    ok(vault, "forget", "Marstrand", "--yes")
    assert b"marstrand" not in everything(vault) and b"oat milk" in everything(vault)
    memory.write_text(memory.read_text() + "- Tea: green\n")
    ok(vault, "import-notes", str(notes))
    assert b"marstrand" not in everything(vault)
    assert b"green" in everything(vault)


def test_forget_killed_at_random_moments_leaves_nothing_forgotten(tmp_path: Path) -> None:
    """30 forgets (with --purge-history) killed at random moments, each run again after."""
    vault = make_vault(tmp_path / "v")
    words = [f"zx{n:04d}" for n in range(45)]
    log_session(vault, [f"Code {w} for door {n}" for n, w in enumerate(words)] + ["keep tea"])
    ok(vault, "consolidate", "--all")
    rng = random.Random(7)
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "forget"]
    kills, tried = 0, []
    for word in words:
        if kills == 30:
            break
        tried.append(word)
        proc = subprocess.Popen(
            [*command, word, "--yes", "--purge-history"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
        )
        time.sleep(rng.uniform(0.1, 1.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
        again = mc(vault, "forget", word, "--yes", "--purge-history")
        assert again.returncode == 0, again.stderr
    assert kills == 30
    data = everything(vault)
    history = git(vault, "log", "-p", "--all").lower()
    for word in tried:
        holders = [p for p in vault.rglob("*") if p.is_file() and word.encode() in p.read_bytes()]
        holders += [p for p in vault.rglob("*") if word in p.name]
        assert word.encode() not in data and word not in history, (word, holders)
    for word in words[len(tried) :]:
        assert word.encode() in data  # nothing else lost
    assert b"keep tea" in data
    assert git(vault, "status", "--porcelain", "--", "episodes", "semantic") == ""


@pytest.mark.parametrize("found", [True, False], ids=["something-to-forget", "nothing-left"])
def test_the_temp_file_a_killed_purge_request_left_is_swept(tmp_path: Path, found: bool) -> None:
    """A purge killed while writing its request leaves ``.purge-….txt.….tmp`` among the
    tombstones; the next forget with --purge-history sweeps it, whether or not it finds
    anything left to forget."""
    vault = make_vault(tmp_path / "v")
    log_session(vault, ["Code zx0001 for the door", "keep tea"])
    ok(vault, "consolidate", "--all")
    left = vault / "semantic" / "_forgotten" / ".purge-1795744745-6ef29f5d.txt.ahxye95t.tmp"
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_text("# memoryclaw: a device purged", encoding="utf-8")
    ok(vault, "forget", "zx0001" if found else "nowhere", "--yes", "--purge-history")
    assert not left.exists()
    assert git(vault, "status", "--porcelain", "--", "episodes", "semantic") == ""


def test_openclaw_import_after_a_forget_does_not_bring_it_back(tmp_path: Path) -> None:
    from ..openclaw_state import T0, append_event, make_state, message

    vault = make_vault(tmp_path / "v")
    state = make_state(tmp_path / "openclaw")
    ok(vault, "openclaw", "import", "--state-dir", str(state))
    assert b"plumber" in everything(vault) and b"keyworth" in everything(vault)
    ok(vault, "forget", "plumber", "--yes")
    ok(vault, "forget", "Keyworth", "--yes")
    assert b"plumber" not in everything(vault) and b"keyworth" not in everything(vault)
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    append_event(store, "s1", message("m9", "user", "The plumber comes back Monday.", T0 + 5000))
    memory = state / "workspace" / "MEMORY.md"
    memory.write_text(memory.read_text() + "- Florist: Petal Street\n")
    ok(vault, "openclaw", "import", "--state-dir", str(state))
    data = everything(vault)
    assert b"keyworth" not in data and b"340 pounds" not in data
    assert b"petal street" in data


def test_purge_history_finds_text_that_only_older_commits_hold(session_vault: Path) -> None:
    ok(session_vault, "forget", "Lindqvist", "--yes")  # files clean, history not
    assert "lindqvist" in git(session_vault, "log", "-p", "--all").lower()
    refused = mc(session_vault, "forget", "Lindqvist", "--purge-history")
    assert refused.returncode == 1 and "--yes" in refused.stderr  # asks, even with 0 to remove
    report = ok(session_vault, "forget", "Lindqvist", "--yes", "--purge-history")
    assert report["removed"] == 0 and report["history_purged"] >= 1
    assert report["purge"]["clean"] is True
    assert "lindqvist" not in git(session_vault, "log", "-p", "--all").lower()
    proc = mc(session_vault, "forget", "Lindqvist", "--yes", "--purge-history")
    assert "no commit here holds the removed text" in proc.stdout


def test_a_purge_reaches_every_device_and_no_sync_brings_it_back(tmp_path: Path) -> None:
    a, b, remote = two_devices_sharing_the_session(tmp_path)
    assert "lindqvist" in git(b, "log", "-p", "--all").lower()
    ok(a, "forget", "Lindqvist", "--yes", "--purge-history")
    ok(b, "sync")  # b still held the old history: it purges its own before pushing
    ok(a, "sync")
    for vault in (a, b):
        assert b"lindqvist" not in everything(vault)
        assert "lindqvist" not in git(vault, "log", "-p", "--all").lower()
        assert b"oat milk" in everything(vault)
    assert "lindqvist" not in git(remote, "log", "-p", "--all").lower()


def test_forgetting_a_short_fact_by_id_removes_that_line_only(tmp_path: Path) -> None:
    from memoryclaw.api import Vault

    root = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "memoryclaw", "init", str(root)], check=True)
    (root / "semantic" / "people.md").write_text("# People\n\n- Bo: 5\n- Al: 7\n")
    with Vault(root, env={}) as vault:
        vault.refresh()
        [row] = vault.index.fact_rows("entity = ?", ["Bo"])
        report = vault.forget(fact_id=row["id"])
    assert report.facts == (row["id"],)
    assert (root / "semantic" / "people.md").read_text() == "# People\n\n- Al: 7\n"


def test_forgetting_a_line_of_an_episode_without_frontmatter_keeps_the_rest(
    tmp_path: Path,
) -> None:
    root = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "memoryclaw", "init", str(root)], check=True)
    (root / "episodes" / "plain.md").write_text("Met Zorba at the pier\nBought bread\n")
    ok(root, "forget", "Zorba", "--yes")
    assert (root / "episodes" / "plain.md").read_text() == "Bought bread\n"


def test_a_purge_that_could_not_be_pushed_is_pushed_before_the_next_sync_pulls(
    tmp_path: Path,
) -> None:
    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    a = make_vault(tmp_path / "a")
    git(a, "remote", "add", "origin", str(remote))
    ok(a, "sync", "--setup")
    log_session(a, SESSION_TURNS)
    ok(a, "consolidate", "--all")
    ok(a, "sync")
    away = tmp_path / "away.git"
    remote.rename(away)  # the remote cannot be reached while the purge runs
    report = ok(a, "forget", "Lindqvist", "--yes", "--purge-history")
    assert report["purge"]["pushed"] is None and report["purge"]["push_error"]
    failed = mc(a, "sync")
    assert failed.returncode != 0 and "nothing was pulled" in failed.stderr
    away.rename(remote)
    ok(a, "sync")
    assert "lindqvist" not in git(remote, "log", "-p", "--all").lower()
    assert "lindqvist" not in git(a, "log", "-p", "--all").lower()
    assert b"lindqvist" not in everything(a)


def ingest_file(vault: Path, path: Path) -> Any:
    """``ingest`` of a JSON-lines file; its document."""
    return ok(vault, "ingest", str(path))


def chat_lines(turns: list[str], session: str = "agent:main:cli:9") -> str:
    """JSON lines of user turns a minute apart."""
    return "".join(
        json.dumps(
            {
                "session": session,
                "role": "user",
                "content": text,
                "timestamp": f"2025-11-01T12:{n:02d}:00Z",
            }
        )
        + "\n"
        for n, text in enumerate(turns)
    )


def test_ingesting_a_file_again_after_a_forget_does_not_bring_the_turn_back(
    tmp_path: Path,
) -> None:
    vault = make_vault(tmp_path / "v")
    said = [
        "My therapist is Dr Quillfeather, email quill@feather.example",
        "Book a table at Nandos",
    ]
    chat = tmp_path / "chat.jsonl"
    chat.write_text(chat_lines(said))
    ingest_file(vault, chat)
    ok(vault, "consolidate", "--all")
    ok(vault, "forget", "Quillfeather", "--yes", "--purge-history")
    assert b"quillfeather" not in everything(vault)
    # the same turns in a file that differs (one turn more): nothing marks them as ingested
    chat.write_text(chat_lines([*said, "Remind me to call mum"]))
    done = ingest_file(vault, chat)
    assert done["forgotten"] == 1
    assert b"quillfeather" not in everything(vault)  # the raw log holds it blanked
    ok(vault, "consolidate", "--all")
    data = everything(vault)
    assert b"quillfeather" not in data and b"quill@feather" not in data
    assert b"call mum" in data and b"nandos" in data
    assert "quillfeather" not in git(vault, "log", "-p", "--all").lower()
    found = ok(vault, "search", "Quillfeather")
    assert found["results"] == [] and found["recent"] == []


def _forget_and_log_again(vault: Path, said: str, forget: str, again: str) -> None:
    """Log ``said``, forget ``forget``, then log ``again`` in a new session, which succeeds."""
    log_session(vault, [said, "Lunch was pasta"])
    ok(vault, "forget", forget, "--yes")
    proc = mc(vault, "log", "--session", "s2", "--role", "user", "--", again)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "again",
    [
        "The alarm code is Zephyr-5521",
        "the alarm code is  ZEPHYR-5521.",
        "The alarm code is Zephyr-5521 !",
    ],
    ids=["same", "case-space-period", "closing-punctuation"],
)
def test_a_live_log_turn_repeating_a_forgotten_one_is_logged_blanked(
    tmp_path: Path, again: str
) -> None:
    vault = make_vault(tmp_path / "v")
    _forget_and_log_again(vault, "The alarm code is Zephyr-5521", "Zephyr-5521", again)
    assert b"zephyr" not in everything(vault)
    assert "[forgotten]" in "".join(p.read_text() for p in (vault / "logs").glob("*.md"))


@pytest.mark.parametrize(
    "again",
    [
        "In\u00eas's alarm code is Zephyr-5521",
        "In\u00eas\u2019s alarm code is Zephyr-5521",
        "Ine\u0302s's alarm code is Zephyr-5521",
        "In\u00eas's alarm code is Zephyr\u20115521",
    ],
    ids=["same", "curly-apostrophe", "decomposed-accent", "non-breaking-hyphen"],
)
def test_a_forgotten_turn_typed_again_with_other_quotes_or_accents_is_logged_blanked(
    tmp_path: Path, again: str
) -> None:
    """A phone's keyboard curls an apostrophe, another system decomposes an accent: the same
    words said again that way are still forgotten."""
    vault = make_vault(tmp_path / "v")
    _forget_and_log_again(vault, "In\u00eas's alarm code is Zephyr-5521", "Zephyr", again)
    assert b"zephyr" not in everything(vault)


@pytest.mark.parametrize(
    ("said", "asked"),
    [
        ("Our caf\u00e9 is Zo\u00eb's on Main Street", "Cafe\u0301 Zoe\u0308"),
        ("Our cafe\u0301 is Zoe\u0308's on Main Street", "Caf\u00e9 Zo\u00eb"),
    ],
    ids=["query-decomposed", "turn-decomposed"],
)
def test_a_forget_typed_with_its_accents_decomposed_forgets_the_same_words(
    tmp_path: Path, said: str, asked: str
) -> None:
    """One system composes "é", another types "e" and a combining accent: a forget query
    matches the words however either side spelled them."""
    vault = make_vault(tmp_path / "v")
    log_session(vault, [said, "Lunch was pasta"])
    report = ok(vault, "forget", asked, "--yes")
    assert report["removed"] >= 1, report
    data = everything(vault)
    assert b"Main Street" not in data and b"pasta" in data


def test_consolidation_leaves_out_a_forgotten_turn_a_raw_log_brought_in(tmp_path: Path) -> None:
    """A raw log that no writer of this device checked (copied in, or synced from a device
    that had not heard of the forget yet) is checked by consolidation itself."""
    vault = make_vault(tmp_path / "v")
    log_session(vault, ["The alarm code is Zephyr-5521", "Lunch was pasta"], session="a")
    ok(vault, "consolidate", "--all")
    ok(vault, "forget", "Zephyr-5521", "--yes")
    raw = (
        "---\nid: log-copied\ntimestamp: '2025-11-01T12:00:00Z'\nchannel: cli\nsession: b\n"
        "agent: main\nkind: direct\nscope: direct\nprocessed: false\nclosed: true\n---\n"
        "### user · 2025-11-01T12:00:00Z\nThe alarm code is Zephyr-5521\n\n"
        "### user · 2025-11-01T12:01:00Z\nThe boiler was serviced on Friday\n"
    )
    (vault / "logs" / "2025-11-01_12-00-00_cli_raw.md").write_text(raw)
    report = ok(vault, "consolidate", "--all")
    assert report["logs_read"] == 1 and report["commit"]
    data = everything(vault)
    assert b"zephyr" not in data and b"boiler" in data
    assert "zephyr" not in git(vault, "show", "HEAD").lower()


def _forget_fact_valued(vault: Path, value: str) -> None:
    """Forget, by its id, the one fact of ``vault`` whose value is ``value``."""
    from memoryclaw.api import Vault

    with Vault(vault, env={}) as opened:
        opened.refresh()
        [row] = opened.index.fact_rows("value = ?", [value])
    ok(vault, "forget", "--fact", str(row["id"]), "--yes")


def test_a_forgotten_fact_is_not_filed_again_from_a_new_log(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    log_session(vault, ["Wren's birthday is 1990-04-12"], session="a")
    ok(vault, "consolidate", "--all")
    _forget_fact_valued(vault, "1990-04-12")
    log_session(vault, ["Wren's birthday is 1990-04-12", "Wren likes kites"], session="b")
    ok(vault, "consolidate", "--all")
    semantic = "".join(p.read_text() for p in (vault / "semantic").glob("*.md"))
    assert "1990-04-12" not in semantic


@pytest.mark.parametrize(
    "filed",
    [
        "- Wren:\n    birthday: 1990-04-12\n",
        "| Entity | Birthday |\n|---|---|\n| Wren | 1990-04-12 |\n",
    ],
    ids=["nested", "table"],
)
def test_a_forgotten_nested_or_table_fact_is_not_filed_again_from_a_new_log(
    tmp_path: Path, filed: str
) -> None:
    """A fact written by hand under its entity, or in a table, is said again the way
    consolidation files it: it stays forgotten all the same."""
    vault = make_vault(tmp_path / "v")
    (vault / "semantic" / "people.md").write_text(f"# People\n\n{filed}\n- Ana: likes kites\n")
    _forget_fact_valued(vault, "1990-04-12")
    log_session(vault, ["Wren's birthday is 1990-04-12", "Wren likes sailing"], session="b")
    ok(vault, "consolidate", "--all")
    semantic = "".join(p.read_text() for p in (vault / "semantic").glob("*.md"))
    assert "1990-04-12" not in semantic and "likes kites" in semantic


def test_openclaw_import_after_a_purge_commits_no_forgotten_line(tmp_path: Path) -> None:
    from ..openclaw_state import T0, append_event, make_state, message

    vault = make_vault(tmp_path / "v")
    state = make_state(tmp_path / "openclaw")
    memory = state / "workspace" / "MEMORY.md"
    memory.write_text(memory.read_text() + "- Therapist: Dr Quillfeather, Harley Street\n")
    ok(vault, "openclaw", "import", "--state-dir", str(state))
    assert b"quillfeather" in everything(vault)
    ok(vault, "forget", "Quillfeather", "--yes", "--purge-history")
    assert "quillfeather" not in git(vault, "log", "-p", "--all").lower()
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    append_event(store, "s1", message("m9", "user", "The boiler man comes Monday.", T0 + 5000))
    done = ok(vault, "openclaw", "import", "--state-dir", str(state))
    assert done["turns"] == 1 and done["consolidation"]
    assert "quillfeather" not in git(vault, "log", "-p", "--all").lower()
    assert b"quillfeather" not in everything(vault)
    assert b"boiler man" in everything(vault)


def test_an_import_counts_only_what_it_keeps_and_says_what_was_forgotten(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v")
    notes = tmp_path / "notes"
    notes.mkdir()
    memory = notes / "MEMORY.md"
    memory.write_text("# Memory\n\n- Boat slip: Quay-Nine at Marstrand\n")
    ok(vault, "import-notes", str(notes))
    ok(vault, "forget", "Marstrand", "--yes")
    memory.write_text(memory.read_text() + "- Tea: green\n")
    again = ok(vault, "import-notes", str(notes))
    assert again["facts"] == 1 and again["notes"] == 1 and again["forgotten"] == 1
    proc = mc(vault, "import-notes", str(notes))
    assert "forgotten before: 1" in proc.stdout
    assert b"marstrand" not in everything(vault)


def test_a_forget_killed_at_its_git_commit_leaves_no_staged_removal_that_breaks_sync(
    tmp_path: Path,
) -> None:
    """A git on PATH that kills the forget (its parent) when asked to commit: the removal is
    staged and never committed; every later command, sync first, works and finishes it."""
    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    vault = make_vault(tmp_path / "v")
    git(vault, "remote", "add", "origin", str(remote))
    ok(vault, "sync", "--setup")
    log_session(vault, SESSION_TURNS)
    ok(vault, "consolidate", "--all")
    ok(vault, "sync")
    fake = tmp_path / "fakegit"
    fake.mkdir()
    armed = fake / "ARM"
    armed.write_text("")
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    (fake / "git").write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do if [ "$a" = commit ] && [ -e "' + str(armed) + '" ]; then\n'
        '  rm -f "' + str(armed) + '"; kill -9 $PPID; exit 1; fi; done\n'
        'exec "' + real.stdout.strip() + '" "$@"\n'
    )
    (fake / "git").chmod(0o755)
    env = clean_env(PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    killed = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), "forget", "Lindqvist", "--yes"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL and not armed.exists()
    assert "lindqvist" in git(vault, "diff", "--cached").lower()  # staged, not committed
    done = mc(vault, "sync")
    assert done.returncode == 0, done.stderr
    assert git(vault, "status", "--porcelain", "--", "episodes", "semantic", "logs") == ""
    assert b"lindqvist" not in everything(vault)
    tree = git(remote, "ls-tree", "-r", "--name-only", "HEAD").lower()
    held = subprocess.run(["git", "-C", str(remote), "grep", "-qi", "lindqvist", "HEAD"])
    assert "lindqvist" not in tree and held.returncode == 1  # the removal reached the remote
    assert not (vault / ".memoryclaw" / "forgetting.json").exists()
    assert ok(vault, "consolidate", "--all") is not None
    assert b"oat milk" in everything(vault)


def test_a_purge_push_to_a_remote_that_never_answers_stops_at_the_sync_timeout(
    tmp_path: Path,
) -> None:
    """The push of a rewritten history is bounded by sync.timeoutSeconds, and it and every
    process it started are stopped; the push is owed to the next sync."""
    import yaml

    remote = tmp_path / "r.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    vault = make_vault(tmp_path / "v")
    git(vault, "remote", "add", "origin", str(remote))
    ok(vault, "sync", "--setup")
    log_session(vault, SESSION_TURNS)
    ok(vault, "consolidate", "--all")
    ok(vault, "sync")
    config = vault / "memoryclaw.yaml"
    doc = yaml.safe_load(config.read_text())
    doc.setdefault("sync", {})["timeoutSeconds"] = 2
    config.write_text(yaml.safe_dump(doc))
    git(vault, "commit", "-qm", "shorter sync timeout", "--", "memoryclaw.yaml")
    git(vault, "config", "remote.origin.receivepack", "sh -c 'sleep 297; exit 1' hang")
    report = ok(vault, "forget", "Lindqvist", "--yes", "--purge-history")
    assert report["purge"]["pushed"] is None
    assert "did not answer within 2 s" in report["purge"]["push_error"]
    left = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p) == b"sleep\x00297\x00"]
    assert left == []  # the transport's own processes were stopped too
    git(vault, "config", "--unset", "remote.origin.receivepack")
    ok(vault, "sync")
    assert "lindqvist" not in git(remote, "log", "-p", "--all").lower()


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_temp_files_a_killed_forget_left_are_swept_by_the_next_forget(
    session_vault: Path,
) -> None:
    """A forget killed inside a write leaves its temp file (holding, or named after, what it
    forgets) and a torn journal; the next forget removes them."""
    episode = next((session_vault / "episodes").glob("*.md"))
    left = [
        episode.parent / f".{episode.name}.k1q2w3.tmp",
        session_vault / "semantic" / ".contacts.md.z9x8c7.tmp",
        session_vault / "semantic" / "_forgotten" / ".20260101T000000-ab.txt.p0o9i8.tmp",
        session_vault / "logs" / "processed" / ".joanna-lindqvist.md.u7y6t5.tmp",
    ]
    for path in left:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Joanna Lindqvist's phone is 555-0199\n")
    (session_vault / ".memoryclaw" / "forgetting.json.tmp").write_text('{"stone": "sem')
    ok(session_vault, "forget", "Lindqvist", "--yes")
    assert [p for p in left if p.exists()] == []
    assert not (session_vault / ".memoryclaw" / "forgetting.json.tmp").exists()
    assert b"lindqvist" not in everything(session_vault)
    assert b"555-0199" not in everything(session_vault)
