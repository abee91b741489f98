"""Archiving: unused episodes leave automatic recall for episodes/archive/YYYY/, stay
searchable with --all and the agents' memory_search, come back with --restore, and nothing is
ever lost, also when a run is killed (SIGKILL) at any moment."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import ArchiveConflictError, NotFoundError, Vault
from memoryclaw.recall.usage import RECALL_FILE, RecallLog, load_recalls, save_recalls
from memoryclaw.serve.daemon import Daemon
from memoryclaw.serve.stdio import StdioServer
from memoryclaw.vault.episodes import parse_episode

from ..conftest import child_limits, run_bounded
from ..line_client import line_client

DAYS = 30
ON = {"MEMORYCLAW_CONSOLIDATION_ARCHIVEAFTERDAYS": str(DAYS)}
T0 = datetime.now(timezone.utc).replace(microsecond=0)  # recalls begin to be noted
LATER = T0 + timedelta(days=DAYS + 1)  # every episode untouched since T0 is unused by then
DENTIST = "ep-20250115-194002-dentist-appointment"
DENTIST_FILE = "episodes/2025-01-15_19-40-02_dentist-appointment.md"
DENTIST_ARCHIVED = "episodes/archive/2025/2025-01-15_19-40-02_dentist-appointment.md"


def _episodes(root: Path) -> dict[str, bytes]:
    """Every episode file (archived or not) with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "episodes").rglob("*.md"))
    }


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every vault file outside .memoryclaw/ with its bytes and mtime."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memoryclaw" not in p.parts
    }


def _ids(root: Path) -> Counter[str]:
    """How many episode files carry each id."""
    return Counter(
        parse_episode(data.decode(), rel, 0.0).id for rel, data in _episodes(root).items()
    )


@pytest.fixture
def archiving(vault_dir: Path) -> Iterator[Vault]:
    """The sample vault with archiveAfterDays 30, noting recalls since T0."""
    with Vault(vault_dir, env=ON) as opened:
        first = opened.archive(now=T0)
        assert first.moved == []  # recalls are noted from now on: nothing is unused yet
        yield opened


# --------------------------------------------------------------------------- what moves


def test_default_off_archives_nothing(vault: Vault) -> None:
    before = _files(vault.root)
    report = vault.archive(now=T0 + timedelta(days=3650))
    assert report.after_days == 0 and report.moved == []
    assert _files(vault.root) == before
    assert not (vault.root / "episodes" / "archive").exists()


def test_a_first_run_only_starts_noting_recalls(vault_dir: Path) -> None:
    with Vault(vault_dir, env=ON) as vault:
        assert load_recalls(vault.root, vault.index) is None
        report = vault.archive(now=T0)
        assert report.moved == [] and not (vault_dir / "episodes" / "archive").exists()
        recalls = load_recalls(vault.root, vault.index)
        assert recalls is not None and recalls.since == T0
        assert report.unused_from == (T0 + timedelta(days=DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_unused_episodes_move_to_their_year_and_recalled_ones_stay(archiving: Vault) -> None:
    root = archiving.root
    before = _episodes(root)
    payload = archiving.retrieve("what did I email John about", now=T0 + timedelta(days=10))
    recalled = {e.id for e in payload.episodes} | {p.episode_id for p in payload.passages}
    assert recalled
    report = archiving.archive(now=LATER)
    moved = {m.id for m in report.moved}
    assert moved and not moved & recalled
    kept = {parse_episode(data.decode(), rel, 0.0).id for rel, data in _episodes(root).items()}
    assert kept == {parse_episode(d.decode(), r, 0.0).id for r, d in before.items()}
    for move in report.moved:
        assert move.target == move.source.replace("episodes/", "episodes/archive/2025/", 1)
        assert not (root / move.source).exists()
        assert (root / move.target).read_bytes() == before[move.source]  # byte for byte
    for rel, data in _episodes(root).items():
        ident = parse_episode(data.decode(), rel, 0.0).id
        assert rel.startswith("episodes/archive/") == (ident in moved)


def test_an_old_episode_edited_by_hand_lately_is_not_archived(archiving: Vault) -> None:
    path = archiving.root / DENTIST_FILE
    edited = (LATER - timedelta(hours=2)).timestamp()
    os.utime(path, (edited, edited))
    report = archiving.archive(now=LATER)
    assert report.moved and DENTIST not in {m.id for m in report.moved}
    assert path.exists()


def test_lost_recall_times_delay_archiving_and_archive_nothing(archiving: Vault) -> None:
    """Lost from the index and from its copy (``.memoryclaw/`` deleted), noting starts over."""
    archiving.close()
    for index_file in (archiving.root / ".memoryclaw").glob("index.db*"):
        index_file.unlink()
    (archiving.root / RECALL_FILE).write_text("{not json")
    report = archiving.archive(now=LATER)
    assert report.moved == []
    recalls = load_recalls(archiving.root, archiving.index)
    assert recalls is not None and recalls.since == LATER  # noting starts over, from now
    later = archiving.archive(now=LATER + timedelta(days=DAYS + 1))
    assert later.moved


def test_a_second_run_moves_nothing(archiving: Vault) -> None:
    assert archiving.archive(now=LATER).moved
    after = _files(archiving.root)
    again = archiving.archive(now=LATER)
    assert again.moved == [] and again.settled == [] and again.conflicts == []
    assert _files(archiving.root) == after


def test_dry_run_shows_what_would_move_and_changes_nothing(archiving: Vault) -> None:
    before = _files(archiving.root)
    recalls = (archiving.root / RECALL_FILE).read_bytes()
    preview = archiving.archive(dry_run=True, now=LATER)
    assert preview.dry_run and len(preview.moved) > 30
    assert _files(archiving.root) == before
    assert (archiving.root / RECALL_FILE).read_bytes() == recalls
    done = archiving.archive(now=LATER)
    assert done.moved == preview.moved


# --------------------------------------------------------------------------- recall and search


def test_archived_episodes_leave_recall_but_stay_searchable(archiving: Vault) -> None:
    query = "dentist appointment with Dr. Hoffman"
    assert DENTIST in {e.id for e in archiving.search(query).results}
    archiving.archive(now=LATER)
    assert (archiving.root / DENTIST_ARCHIVED).exists()
    assert not archiving.search(query).results
    payload = archiving.retrieve(query)
    assert "ep-20250115" not in payload.context and not payload.episodes
    found = archiving.search(query, include_archived=True)
    assert found.results[0].id == DENTIST and found.results[0].path == DENTIST_ARCHIVED
    assert any(p.episode_id == DENTIST for p in found.passages)
    assert archiving.get(DENTIST)["path"] == DENTIST_ARCHIVED  # memory_get still reads it


def test_a_full_reindex_keeps_the_archive_apart(archiving: Vault) -> None:
    archiving.archive(now=LATER)
    archiving.reindex(full=True)
    assert not archiving.search("dentist appointment").results
    assert archiving.search("dentist appointment", include_archived=True).results


def test_a_hand_written_episode_keeps_its_id_in_the_archive(archiving: Vault) -> None:
    path = archiving.root / "episodes" / "notes" / "boat.md"
    path.parent.mkdir()
    path.write_text("Sailing lesson on the Solent: tack before the buoy.\n")
    stamp = T0.timestamp() - 86_400
    os.utime(path, (stamp, stamp))
    ident = next(r.id for r in archiving.search("sailing solent").results)
    archiving.archive(now=LATER)
    year = datetime.fromtimestamp(stamp, tz=timezone.utc).year  # its timestamp is its mtime
    found = archiving.search("sailing solent", include_archived=True).results
    assert [(r.id, r.path) for r in found] == [(ident, f"episodes/archive/{year}/notes/boat.md")]
    assert found[0].timestamp.startswith(
        f"{datetime.fromtimestamp(stamp, tz=timezone.utc):%Y-%m-%d}"
    )
    archiving.restore(ident)
    assert path.exists() and [r.id for r in archiving.search("sailing solent").results] == [ident]


# --------------------------------------------------------------------------- restore


def test_restore_brings_an_episode_back_for_another_period(archiving: Vault) -> None:
    original = (archiving.root / DENTIST_FILE).read_bytes()
    archiving.archive(now=LATER)
    report = archiving.restore(DENTIST, now=LATER)
    assert [m.as_dict() for m in report.moved] == [
        {"id": DENTIST, "from": DENTIST_ARCHIVED, "to": DENTIST_FILE}
    ]
    assert (archiving.root / DENTIST_FILE).read_bytes() == original
    assert not (archiving.root / DENTIST_ARCHIVED).exists()
    assert archiving.search("dentist appointment Hoffman").results[0].id == DENTIST
    assert archiving.archive(now=LATER + timedelta(days=DAYS - 1)).moved == []
    again = archiving.archive(now=LATER + timedelta(days=DAYS + 1))
    assert DENTIST in {m.id for m in again.moved}


def test_restore_of_an_active_episode_does_nothing_and_an_unknown_id_fails(
    archiving: Vault,
) -> None:
    before = _files(archiving.root)
    assert archiving.restore(DENTIST, now=LATER).moved == []
    assert _files(archiving.root) == before
    with pytest.raises(NotFoundError):
        archiving.restore("ep-nope", now=LATER)


def test_restore_refuses_to_overwrite_a_different_file(archiving: Vault) -> None:
    archiving.archive(now=LATER)
    (archiving.root / DENTIST_FILE).write_text("summary: another note under the same name\n")
    with pytest.raises(ArchiveConflictError) as caught:
        archiving.restore(DENTIST, now=LATER)
    assert caught.value.target == DENTIST_FILE
    assert (archiving.root / DENTIST_ARCHIVED).exists()


# --------------------------------------------------------------------------- interrupted moves


def test_an_interrupted_archive_is_finished_and_never_shown_twice(archiving: Vault) -> None:
    root = archiving.root
    original = (root / DENTIST_FILE).read_bytes()
    archived = root / DENTIST_ARCHIVED
    archived.parent.mkdir(parents=True)
    shutil.copy2(root / DENTIST_FILE, archived)  # killed after the copy, before the removal
    (archived.parent / ".x.md.123.tmp").write_text("half a copy")  # and one killed mid-copy
    found = archiving.search("dentist appointment Hoffman", include_archived=True)
    assert [r.id for r in found.results].count(DENTIST) == 1
    assert len(archiving.index.episode_rows("id = ?", [DENTIST])) == 1
    report = archiving.archive(now=LATER)
    assert DENTIST in {m.id for m in report.moved}
    assert archived.read_bytes() == original and not (root / DENTIST_FILE).exists()
    assert not list(archived.parent.glob(".*.tmp"))
    assert _ids(root)[DENTIST] == 1


def test_an_interrupted_restore_ends_restored(archiving: Vault) -> None:
    root = archiving.root
    archiving.archive(now=LATER)
    shutil.copy2(root / DENTIST_ARCHIVED, root / DENTIST_FILE)  # the copy back was written
    archiving.restore(DENTIST, now=LATER)  # the rerun
    assert (root / DENTIST_FILE).exists() and not (root / DENTIST_ARCHIVED).exists()
    assert _ids(root)[DENTIST] == 1
    assert archiving.archive(now=LATER).moved == []


def test_twins_that_differ_are_both_kept_and_reported(archiving: Vault) -> None:
    root = archiving.root
    archived = root / DENTIST_ARCHIVED
    archived.parent.mkdir(parents=True)
    archived.write_text((root / DENTIST_FILE).read_text() + "- edited in the archive\n")
    report = archiving.archive(now=LATER - timedelta(days=2))  # nothing else is unused yet
    assert [c.path for c in report.conflicts] == [DENTIST_ARCHIVED]
    assert archived.exists() and (root / DENTIST_FILE).exists()
    rows = archiving.index.episode_rows("id = ?", [DENTIST], order="path")
    assert [r["path"] for r in rows] == [DENTIST_FILE, DENTIST_ARCHIVED]  # neither is hidden
    found = archiving.search("dentist appointment Hoffman").results  # recall: the active one
    assert [(r.id, r.path) for r in found if r.id == DENTIST] == [(DENTIST, DENTIST_FILE)]


# --------------------------------------------------------------------------- git


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_each_run_is_one_commit_in_a_git_vault(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(f"consolidation:\n  archiveAfterDays: {DAYS}\n")
    (vault_dir / ".gitignore").write_text(".memoryclaw/\n")
    _git(vault_dir, "init", "-q")
    _git(vault_dir, "add", "-A")
    _git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    (vault_dir / "semantic" / "notes.md").write_text("# Notes\n\n- Plan: mine to commit\n")
    with Vault(vault_dir, env={}) as vault:
        vault.archive(now=T0)
        report = vault.archive(now=LATER)
        assert report.moved and report.commit
        assert _git(vault_dir, "rev-list", "--count", "HEAD").strip() == "2"
        message = _git(vault_dir, "log", "-1", "--format=%B")
        assert message.startswith(f"memoryclaw: archive {len(report.moved)} episodes")
        status = _git(vault_dir, "status", "--porcelain", "--untracked-files=all")
        assert status.splitlines() == ["?? semantic/notes.md"]
        restored = vault.restore(DENTIST, now=LATER)
        assert restored.commit and "restore 1 episode\n" in _git(vault_dir, "log", "-1")
        renames = _git(vault_dir, "show", "-M", "--name-status", "--format=", "HEAD")
        assert renames.split() == ["R100", DENTIST_ARCHIVED, DENTIST_FILE]


# --------------------------------------------------------------------------- CLI, bridge, daemon


def _age(root: Path, since: datetime) -> None:
    """Make every episode look unused since ``since``: recalls noted from then, files as old."""
    save_recalls(root, RecallLog(since))
    for path in (root / "episodes").rglob("*.md"):
        os.utime(path, (since.timestamp(), since.timestamp()))


def test_cli_archive_dry_run_then_archive_then_restore(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(f"consolidation:\n  archiveAfterDays: {DAYS}\n")
    _age(vault_dir, T0 - timedelta(days=DAYS + 5))
    before = _files(vault_dir)
    preview = run_bounded(vault_dir, "archive", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert preview.stdout.startswith("would archive 36 episodes unused for 30 days")
    assert f"{DENTIST_FILE} -> {DENTIST_ARCHIVED}" in preview.stdout
    assert _files(vault_dir) == before
    done = run_bounded(vault_dir, "archive", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["action"] == "archive" and len(report["moved"]) == 36
    plain = run_bounded(vault_dir, "search", "dentist appointment", "--json")
    assert json.loads(plain.stdout)["results"] == []
    every = run_bounded(vault_dir, "search", "--all", "dentist appointment")
    assert DENTIST_ARCHIVED in every.stdout and "[archived]" in every.stdout
    back = run_bounded(vault_dir, "archive", "--restore", DENTIST)
    assert back.returncode == 0 and f"restored {DENTIST}" in back.stdout
    assert (vault_dir / DENTIST_FILE).exists()
    unknown = run_bounded(vault_dir, "archive", "--restore", "ep-nope")
    assert unknown.returncode == 1 and unknown.stderr.startswith("memoryclaw: error: no episode")
    usage = run_bounded(vault_dir, "archive", "--restore", DENTIST, "--dry-run")
    assert usage.returncode == 2


def test_cli_says_when_archiving_is_off(vault_dir: Path) -> None:
    done = run_bounded(vault_dir, "archive")
    assert done.returncode == 0 and "archiving is off" in done.stdout
    assert not (vault_dir / "episodes" / "archive").exists()


def test_the_bridge_searches_the_archive_only_when_asked(vault_dir: Path) -> None:
    (vault_dir / "memoryclaw.yaml").write_text(f"consolidation:\n  archiveAfterDays: {DAYS}\n")
    _age(vault_dir, T0 - timedelta(days=DAYS + 5))
    assert run_bounded(vault_dir, "archive").returncode == 0
    query = "dentist appointment Hoffman"
    with line_client(vault_dir, "serve", "--stdio") as client:

        def ask(ident: int, method: str, **params: object) -> dict[str, Any]:
            line = json.dumps({"id": ident, "method": method, "params": params})
            return client.ask(line.encode())["result"]  # type: ignore[no-any-return]

        assert ask(1, "search", query=query)["results"] == []
        assert ask(2, "search", query=query, all=True)["results"][0]["id"] == DENTIST
        assert DENTIST not in ask(3, "retrieve", query=query)["context"]
        client.finish()


def test_the_agents_memory_search_reaches_the_archive(vault_dir: Path) -> None:
    _age(vault_dir, T0 - timedelta(days=DAYS + 5))
    with Vault(vault_dir, env=ON) as vault:
        vault.archive(now=T0)
    server = StdioServer(vault_dir, env=ON)
    request = {"id": 1, "method": "search", "params": {"query": "dentist", "all": True}}
    assert server.handle(json.dumps(request))["result"]["results"]
    plugin = (Path(__file__).parents[2] / "plugins" / "openclaw" / "index.js").read_text()
    assert "all: true, ...(limit ? { limit } : {})" in plugin
    server.close()


def test_retrieve_notes_what_it_recalled(vault: Vault) -> None:
    payload = vault.retrieve("what did I email John about", now=T0)
    recalls = load_recalls(vault.root, vault.index)
    assert recalls is not None and payload.episodes
    assert {e.id for e in payload.episodes} <= set(recalls.last)
    assert all(recalls.last[e.id] == T0 for e in payload.episodes)


def test_the_daemon_archives_after_consolidating_when_on(vault_dir: Path) -> None:
    _age(vault_dir, T0 - timedelta(days=DAYS + 5))
    Daemon(vault_dir, env=ON).run_once()
    assert (vault_dir / DENTIST_ARCHIVED).exists()
    Daemon(vault_dir, env={}).run_once()  # off: the archive stays as it is, nothing returns
    assert (vault_dir / DENTIST_ARCHIVED).exists()


# --------------------------------------------------------------------------- SIGKILL


EPISODES = 400


def _big_vault(root: Path) -> dict[str, bytes]:
    """A vault of many old episodes, all unused; the episodes' bytes by id."""
    Vault.init(root, git=True, env={}).close()
    (root / "memoryclaw.yaml").write_text(f"consolidation:\n  archiveAfterDays: {DAYS}\n")
    first = datetime(2023, 1, 1, tzinfo=timezone.utc)
    texts: dict[str, bytes] = {}
    for n in range(EPISODES):
        at = first + timedelta(days=n * 2)
        ident = f"ep-{at:%Y%m%d}-{n:04d}"
        text = (
            f"---\nid: {ident}\ntimestamp: {at:%Y-%m-%dT%H:%M:%SZ}\n"
            f"summary: Session {n} about topic{n % 17} and harbour{n}\ntags: [t{n % 5}]\n---\n"
            f"**Details:**\n- line {n}\n"
        )
        (root / "episodes" / f"{at:%Y-%m-%d}_00-00-00_s{n}.md").write_text(text)
        texts[ident] = text.encode()
    _age(root, T0 - timedelta(days=DAYS + 5))
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    return texts


def test_kill_loop_loses_and_doubles_no_episode_and_commits_everything(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    texts = _big_vault(root)
    rng = random.Random(5)
    killed = 0
    for round_ in range(12):
        restore = round_ % 4 == 3
        # archive runs, and now and then a restore of many episodes (then archive again)
        args = ["archive"] if not restore else ["archive", "--restore", rng.choice(list(texts))]
        archived_before = len(list((root / "episodes" / "archive").rglob("*.md")))
        run = subprocess.Popen(
            [sys.executable, "-m", "memoryclaw", "--vault", str(root), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=child_limits(),
        )
        if restore:  # one episode moves back: kill at a random moment of the run
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.wait(timeout=rng.uniform(0.2, 0.8))
        else:  # kill once a random number of further episodes reached the archive
            target = archived_before + rng.randint(1, 40)
            deadline = time.monotonic() + 60
            while run.poll() is None and time.monotonic() < deadline:
                if len(list((root / "episodes" / "archive").rglob("*.md"))) >= target:
                    break
                time.sleep(0.0005)
        if run.poll() is None:
            run.kill()
            killed += 1
        run.wait(timeout=30)
        if run.stderr:
            run.stderr.close()
        # between runs, search shows each episode at most once
        found = run_bounded(root, "search", "--all", "--json", "--limit", "50", "harbour7 topic7")
        assert found.returncode == 0, found.stderr
        ids = [r["id"] for r in json.loads(found.stdout)["results"]]
        assert len(ids) == len(set(ids)) and ids, ids
        # every episode is somewhere, whole, at least once
        copies = _ids(root)
        assert set(copies) == set(texts), f"round {round_}: lost {set(texts) - set(copies)}"
        for rel, data in _episodes(root).items():
            ident = parse_episode(data.decode(), rel, 0.0).id
            assert data == texts[ident], rel
    assert killed >= 6, "the kills should land inside the runs"
    done = run_bounded(root, "archive", "--json")
    assert done.returncode == 0, done.stderr
    assert _ids(root) == Counter(dict.fromkeys(texts, 1))
    active = {
        parse_episode(data.decode(), rel, 0.0).id
        for rel, data in _episodes(root).items()
        if not rel.startswith("episodes/archive/")
    }
    restored = set(json.loads((root / RECALL_FILE).read_text())["episodes"])
    assert active <= restored  # only what a restore brought back stays out of the archive
    assert len(active) < EPISODES // 2
    reindex = run_bounded(root, "reindex", "--full", "--json")
    assert json.loads(reindex.stdout)["skipped"] == []
    rows = run_bounded(root, "stats", "--json")
    assert json.loads(rows.stdout)["episodes"] == EPISODES
    status = _git(root, "status", "--porcelain", "--untracked-files=all")
    assert status == ""
