"""Incremental sync: additions, edits, deletions, moves, touches and bad files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import Vault
from memoryclaw.index.update import is_stale, sync, sync_paths

JOHN = "episodes/2025-04-08_14-32-10_email-john.md"


def _episode(summary: str, tags: str = "[demo]") -> str:
    return f"---\nsummary: {summary}\ntags: {tags}\n---\nBody text.\n"


def test_first_sync_indexes_every_file(vault: Vault, vault_dir: Path) -> None:
    report = vault.reindex()
    episodes = list((vault_dir / "episodes").glob("*.md"))
    semantic = [p for p in (vault_dir / "semantic").iterdir() if _indexed(p.name)]
    raw_logs = list((vault_dir / "logs").glob("*.md"))  # recalled before consolidation
    assert len(report.added) == len(episodes) + len(semantic) + len(raw_logs)
    assert report.skipped == []
    assert vault.index.counts()["episodes"] == len(episodes)


def test_second_sync_changes_nothing(vault: Vault) -> None:
    vault.reindex()
    again = vault.reindex()
    assert not again.changed_anything
    assert again.unchanged == vault.index.counts()["files"]


def test_edit_is_picked_up(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    path = vault_dir / JOHN
    path.write_text(path.read_text().replace("project update", "zanzibar update"))
    report = vault.reindex()
    assert report.changed == [JOHN]
    assert [r.path for r in vault.search("zanzibar", refresh=False).results] == [JOHN]


def test_touch_without_content_change_is_not_reparsed(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    path = vault_dir / JOHN
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    report = vault.reindex()
    assert report.changed == [] and report.added == []
    assert vault.index.file_states([JOHN])[JOHN].mtime_ns == stat.st_mtime_ns + 5_000_000_000


def test_delete_removes_from_index(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    (vault_dir / JOHN).unlink()
    report = vault.reindex()
    assert report.deleted == [JOHN]
    assert vault.index.episode_rows("path = ?", [JOHN]) == []


def test_move_is_reported_and_followed(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    target = vault_dir / "episodes" / "2025" / "john.md"
    target.parent.mkdir()
    shutil.move(vault_dir / JOHN, target)
    report = vault.reindex()
    assert report.moved == [(JOHN, "episodes/2025/john.md")]
    assert report.deleted == [] and report.added == []
    rows = vault.index.episode_rows("id = ?", ["ep-20250408-143210-email-john"])
    assert [r["path"] for r in rows] == ["episodes/2025/john.md"]


def test_bad_file_is_skipped_and_recovers(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    path = vault_dir / JOHN
    good = path.read_text()
    path.write_text("---\nsummary: [unclosed\n---\nbody\n")
    report = vault.reindex()
    assert [(s.path, s.line) for s in report.skipped] == [(JOHN, 2)]
    assert vault.index.episode_rows("path = ?", [JOHN]) == []
    assert vault.index.counts()["episodes"] > 30
    path.write_text(good)
    report = vault.reindex()
    assert report.skipped == [] and report.changed == [JOHN]


def test_unchanged_bad_file_is_still_reported(vault: Vault, vault_dir: Path) -> None:
    (vault_dir / "episodes" / "bad.md").write_text("---\ntags: {a: 1}\nsummary: x\n---\n")
    first = vault.reindex()
    second = vault.reindex()
    assert [s.path for s in first.skipped] == [s.path for s in second.skipped]
    assert "tags" in second.skipped[0].reason


def test_full_reindex_gives_identical_rows(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    before = vault.index.episode_rows("1", [], order="id, path")
    shutil.rmtree(vault_dir / ".memoryclaw")
    vault.close()
    with Vault(vault_dir, env={}) as fresh:
        fresh.reindex()
        after = fresh.index.episode_rows("1", [], order="id, path")
    strip = [{k: v for k, v in row.items() if k != "rowid"} for row in before]
    assert strip == [{k: v for k, v in row.items() if k != "rowid"} for row in after]


def test_staleness_detects_in_place_edit(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    assert not is_stale(vault.root, vault.index)
    with open(vault_dir / JOHN, "a", encoding="utf-8") as handle:
        handle.write("- appended by hand\n")
    assert is_stale(vault.root, vault.index)


def test_staleness_detects_new_file(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    (vault_dir / "episodes" / "new.md").write_text(_episode("brand new memory"))
    assert is_stale(vault.root, vault.index)
    assert vault.refresh() is not None
    assert vault.refresh() is None


def test_progress_callback_counts_every_file(vault: Vault) -> None:
    calls: list[tuple[int, int]] = []
    report = vault.reindex(progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (len(report.added), len(report.added))
    assert [c[0] for c in calls] == list(range(1, len(report.added) + 1))


def test_schema_change_triggers_rebuild(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    vault.index.set_meta("schema_version", "0")
    vault.close()
    with Vault(vault_dir, env={}) as reopened:
        assert reopened.index.rebuilt
        assert reopened.index.counts()["episodes"] == 0
        assert reopened.search("John").results  # refresh rebuilds before answering


def test_large_vault_freshness_uses_folder_mtimes_only(
    vault: Vault, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memoryclaw.index.update.FULL_STAT_LIMIT", 0)
    vault.reindex()
    assert not is_stale(vault.root, vault.index)
    with open(vault_dir / JOHN, "a", encoding="utf-8") as handle:
        handle.write("- appended in place\n")
    assert not is_stale(vault.root, vault.index)  # documented: left to the daemon or reindex
    nested = vault_dir / "episodes" / "2026" / "01"
    nested.mkdir(parents=True)
    vault.reindex()
    (nested / "deep.md").write_text(_episode("deep new memory"))
    assert is_stale(vault.root, vault.index)  # a file added two folders down is noticed


@pytest.mark.parametrize("limit", [0, 3, 10_000], ids=["none", "some", "beyond-the-vault"])
def test_freshness_counts_files_no_further_than_the_stat_limit(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Every retrieve checks freshness: a vault of 100k files must not count them all."""
    monkeypatch.setattr("memoryclaw.index.update.FULL_STAT_LIMIT", limit)
    vault.reindex()
    known = len(vault.index.file_stats())
    assert known > 3
    assert vault.index.file_count(limit + 1) == min(known, limit + 1)
    statements: list[str] = []
    vault.index.conn.set_trace_callback(statements.append)
    assert not is_stale(vault.root, vault.index)
    vault.index.conn.set_trace_callback(None)
    counts = [s for s in statements if "count(" in s and "FROM files" in s]
    assert counts and all(f"LIMIT {limit + 1}" in s for s in counts)


def test_renaming_a_file_marks_the_index_stale(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    (vault_dir / JOHN).rename(vault_dir / "episodes" / "renamed.md")
    assert is_stale(vault.root, vault.index)


def test_incremental_changes_match_a_full_rebuild(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()  # bulk-loaded first
    (vault_dir / JOHN).write_text((vault_dir / JOHN).read_text().replace("deadline", "cutoff"))
    (vault_dir / "episodes" / "2025-01-09_08-12-45_gym-membership.md").unlink()
    (vault_dir / "episodes" / "fresh.md").write_text(_episode("gym cutoff reminder", "[gym]"))
    contacts = vault_dir / "semantic" / "contacts.md"
    contacts.write_text(contacts.read_text() + "- Zoe: zoe@example.com\n")
    vault.reindex()
    assert vault.index.integrity_problems() == []
    queries = ["cutoff", "gym", "deadline", "Zoe", "John email"]
    incremental = [vault.search(q, refresh=False).as_dict() for q in queries]
    vault.reindex(full=True)
    rebuilt = [vault.search(q, refresh=False).as_dict() for q in queries]
    for doc in incremental + rebuilt:
        doc.pop("took_ms")
    assert incremental == rebuilt
    assert incremental[0]["results"][0]["path"] in {JOHN, "episodes/fresh.md"}


# ------------------------------------------------------------- sync_paths (the watcher's)


def test_sync_paths_applies_exactly_the_named_changes(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    episodes = vault_dir / "episodes"
    with open(vault_dir / JOHN, "a", encoding="utf-8") as handle:
        handle.write("- zebracorn appended in place\n")
    (episodes / "fresh.md").write_text(_episode("a quokka sighting"), encoding="utf-8")
    dentist = "episodes/2025-01-15_19-40-02_dentist-appointment.md"
    (vault_dir / dentist).unlink()
    piano = "episodes/2025-02-19_16-45-10_piano-lessons.md"
    os.rename(vault_dir / piano, episodes / "piano.md")
    (episodes / "notes.txt").write_text("not a note", encoding="utf-8")
    named = [JOHN, "episodes/fresh.md", dentist, piano, "episodes/piano.md", "episodes/notes.txt"]
    report = sync_paths(vault_dir, vault.index, named)
    assert report is not None
    assert (report.changed, report.added, report.deleted) == (
        [JOHN],
        ["episodes/fresh.md"],
        [dentist],
    )
    assert report.moved == [(piano, "episodes/piano.md")]
    assert [r.path for r in vault.search("zebracorn", refresh=False).results] == [JOHN]
    assert [r.path for r in vault.search("quokka", refresh=False).results] == ["episodes/fresh.md"]
    # The index now equals what a full walk makes of the vault, folder record included.
    assert not sync(vault_dir, vault.index).changed_anything
    assert not is_stale(vault_dir, vault.index)


def test_sync_paths_leaves_unnamed_changes_to_a_full_sync(vault: Vault, vault_dir: Path) -> None:
    vault.reindex()
    (vault_dir / "episodes" / "unseen.md").write_text(_episode("never named"), encoding="utf-8")
    report = sync_paths(vault_dir, vault.index, [JOHN])
    assert report is not None and not report.changed_anything and report.unchanged == 1
    assert sync(vault_dir, vault.index).added == ["episodes/unseen.md"]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda root: (root / "episodes" / "2026").mkdir(), id="new-folder"),
        pytest.param(
            lambda root: (
                (root / "episodes" / "2026").mkdir()
                or (root / "episodes" / "2026" / "deep.md").write_text(_episode("deep"))
            ),
            id="file-in-new-folder",
        ),
        pytest.param(
            lambda root: os.symlink(root / JOHN, root / "episodes" / "link.md"), id="symlink"
        ),
    ],
)
def test_sync_paths_asks_for_a_full_sync_when_a_walk_is_needed(
    vault: Vault, vault_dir: Path, make: Any
) -> None:
    vault.reindex()
    before = set(os.listdir(vault_dir / "episodes"))
    make(vault_dir)
    created = sorted(set(os.listdir(vault_dir / "episodes")) - before)
    named = [f"episodes/{name}" for name in created]
    if (vault_dir / "episodes" / "2026" / "deep.md").exists():
        named = ["episodes/2026/deep.md"]
    assert sync_paths(vault_dir, vault.index, named) is None
    assert vault.index.counts()["episodes"] == 36  # untouched: the caller syncs everything


def test_sync_paths_needs_a_first_full_sync(vault: Vault, vault_dir: Path) -> None:
    assert sync_paths(vault_dir, vault.index, [JOHN]) is None
    with Vault(vault_dir, env={}) as fresh:
        report = fresh.reindex_paths([JOHN])  # falls back to the full sync
    assert len(report.added) > 30


NEW = "episodes/2025-06-01_10-00-00_churn.md"
CHURN = {
    "vanishes": lambda path: path.unlink(),
    "becomes-a-folder": lambda path: (path.unlink(), path.mkdir()),
    "changes": lambda path: path.write_text(_episode("walrus rewritten at length")),
}


@pytest.mark.parametrize("known", [False, True], ids=["new-file", "indexed-file"])
@pytest.mark.parametrize("change", list(CHURN.values()), ids=list(CHURN))
def test_file_changing_under_the_scan_is_skipped_for_this_pass(
    vault: Vault, vault_dir: Path, monkeypatch: pytest.MonkeyPatch, change: Any, known: bool
) -> None:
    path = vault_dir / NEW
    path.write_text(_episode("walrus"))
    if known:
        vault.reindex()
    os.utime(path, ns=(1, 1))  # so the scan sees it as new or changed
    import memoryclaw.index.update as sync_module

    real_scan = sync_module.scan

    def scan_then_change(root: Path) -> Any:
        walked = real_scan(root)
        change(path)
        return walked

    monkeypatch.setattr(sync_module, "scan", scan_then_change)
    report = vault.reindex()
    assert [s.path for s in report.skipped] == [NEW]
    assert "scanned" in report.skipped[0].reason
    assert vault.index.errors() == []  # not recorded as a bad file
    monkeypatch.undo()
    following = vault.reindex()
    assert following.skipped == []
    episodes = {r.path for r in vault.search("walrus", refresh=False).results}
    assert episodes == ({NEW} if path.is_file() else set())


_OPENED: list[str] | None = None  # paths opened or listed while a test audits (else None)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    wanted = _OPENED is not None and event in ("open", "os.scandir", "os.listdir")
    if wanted and args and isinstance(args[0], (str, bytes, os.PathLike)):
        assert _OPENED is not None
        _OPENED.append(os.fsdecode(args[0]))


@pytest.mark.parametrize("index", ["current", "none-yet", "rebuilt"])
def test_logging_a_turn_reads_nothing_of_the_vault_but_logs(vault_dir: Path, index: str) -> None:
    """Also the first turn into a vault whose index is new or was rebuilt: the turn's log
    is indexed alone, and no episode, fact or other folder is opened or listed."""
    global _OPENED
    import sqlite3
    import sys

    if index != "none-yet":
        with Vault(vault_dir) as vault:
            vault.reindex()
    if index == "rebuilt":
        with sqlite3.connect(vault_dir / ".memoryclaw" / "index.db") as db:
            db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    sys.addaudithook(_audit)
    _OPENED = []
    try:
        with Vault(vault_dir) as vault:
            logged = vault.log_turn("s-audit", "user", "the harbour7 key is under the mat")
    finally:
        opened, _OPENED = _OPENED, None
    root = str(vault_dir.resolve())
    touched = {os.path.relpath(os.path.realpath(p), root) for p in opened}
    inside = {p for p in touched if not p.startswith("..")}
    outside_logs = {
        p
        for p in inside
        if p not in (".", "logs")
        and not p.startswith((".memoryclaw", "logs/"))
        and p != "memoryclaw.yaml"
    }
    assert outside_logs == set()
    assert not {p for p in inside if p.startswith("logs/processed")}
    with Vault(vault_dir) as vault:
        hits = vault.index.execute("SELECT text FROM passages WHERE path = ?", [logged.path])
        assert [h[0] for h in hits] == ["the harbour7 key is under the mat"]


@pytest.mark.parametrize("full", [False, True], ids=["sync", "full-reindex"])
def test_the_index_knows_which_session_each_open_log_is_of(vault: Vault, full: bool) -> None:
    """What lets a turn read only its own session's log: an open log's session, and none for
    a log closed or consolidated (by hand here, as another writer would)."""
    from memoryclaw.vault.rawlogs import close_session

    root = vault.root
    opened = vault.log_turn("open-one", "user", "still talking")
    closed = vault.log_turn("closed-one", "user", "said and done")
    assert close_session(root, "closed-one") == [closed.path]
    vault.reindex(full=full)
    known = vault.index.raw_log_stats("logs")
    assert known[opened.path.removeprefix("logs/")][2] == "open-one"
    assert known[closed.path.removeprefix("logs/")][2] is None
    stat = os.stat(root / opened.path)
    assert known[opened.path.removeprefix("logs/")][:2] == (stat.st_mtime_ns, stat.st_size)
    assert not any("/" in name for name in known)  # logs/processed/ is not among them
    os.utime(root / opened.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    vault.reindex()  # touched, content unchanged: still open
    assert vault.index.raw_log_stats("logs")[opened.path.removeprefix("logs/")][2] == "open-one"


def _indexed(name: str) -> bool:
    """A semantic file the index reads: a fact file, or the review queue (its conflicts are
    recalled beside the facts they would replace)."""
    return not name.startswith("_") or name == "_pending.md"
