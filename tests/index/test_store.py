"""The index database: schema creation shared safely between processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryclaw import Vault
from memoryclaw.index.schema import SCHEMA_VERSION
from memoryclaw.index.store import Index


def test_opening_a_fresh_index_never_drops_one_another_process_just_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes open a missing index at once; the slower one must not wipe the winner's work.

    The slower opener saw no schema before the other built and filled it; it must ask again
    under the write lock instead of dropping the tables it finds.
    """
    path = tmp_path / "index.db"
    asked: list[str | None] = []
    real_version = Index._schema_version

    def version_seen_by_the_slower_opener(self: Index) -> str | None:
        found = real_version(self)
        asked.append(found)
        if len(asked) == 1:  # the slower opener's first look; now the other process wins
            monkeypatch.setattr(Index, "_schema_version", real_version)
            winner = Index(path)
            winner.set_file("episodes/a.md", "episode", 1, 2, "sha")
            winner.close()
            monkeypatch.setattr(Index, "_schema_version", version_seen_by_the_slower_opener)
        return found

    monkeypatch.setattr(Index, "_schema_version", version_seen_by_the_slower_opener)
    slower = Index(path)
    try:
        assert asked[0] is None  # it did see an empty database first
        assert not slower.rebuilt
        assert slower.get_meta("schema_version") == SCHEMA_VERSION
        assert set(slower.file_stats()) == {"episodes/a.md"}
    finally:
        slower.close()


def test_turns_logged_one_by_one_are_indexed_once_each(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        for n in range(5):
            vault.log_turn("s", "user", f"pelican sighting number {n} at the harbour")
        index = vault.index
        rows = index.execute("SELECT count(*) FROM passages WHERE kind = 'log'").fetchone()[0]
        hits = index.execute(
            "SELECT count(*) FROM passages_fts WHERE passages_fts MATCH 'pelican'"
        ).fetchone()[0]
        assert rows == hits == 5
        assert index.integrity_problems() == []
        # the index read turn by turn equals the index read whole
        before = sorted(p.text for p in vault.search("pelican").passages)
        vault.reindex(full=True)
        assert sorted(p.text for p in vault.search("pelican").passages) == before


def test_passages_of_many_raw_logs_are_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More raw logs than SQLite allows parts in one compound query are all searched (their
    ranges left apart, as files far from each other in the index are)."""
    monkeypatch.setattr("memoryclaw.index.rowids.merged_spans", lambda spans, gap=0: list(spans))
    with Vault.init(tmp_path / "v", env={}) as vault:
        vault.ingest(
            {"session": f"s{n}", "role": "user", "content": f"heron number {n} seen"}
            for n in range(600)
        )
        found = vault.search("heron", limit=5)
        assert len({p.path for p in found.passages}) == len(found.passages) == 40
        assert (
            vault.index.execute(
                "SELECT count(DISTINCT path) FROM passages WHERE kind = 'log'"
            ).fetchone()[0]
            == 600
        )


def _note(root: Path, name: str, text: str) -> None:
    (root / "episodes" / f"{name}.md").write_text(
        f"---\nid: {name}\ntimestamp: 2025-04-08T10:00:00Z\nsummary: {text}\n---\n- {text}\n",
        encoding="utf-8",
    )


def test_match_counts_follow_every_write_of_any_process(tmp_path: Path) -> None:
    """Counts are kept between queries; a write here or by another connection renews them."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        _note(vault.root, "ep-a", "pelican at the harbour")
        vault.reindex()
        assert vault.index.match_count('"pelican"', 10) == 1
        _note(vault.root, "ep-b", "another pelican")
        vault.reindex()  # this connection's own write
        assert vault.index.match_count('"pelican"', 10) == 2
        with Vault(vault.root, env={}) as other:  # another connection's write
            _note(vault.root, "ep-c", "a third pelican")
            other.reindex()
        assert vault.index.match_count('"pelican"', 10) == 3
        assert vault.index.match_count('"pelican"', 2) == 2  # the cap is part of the question


def test_a_search_looks_for_other_connections_commits_once(tmp_path: Path) -> None:
    """Inside a block of reads (a search) the counts kept are checked against other
    connections' commits once, at the first ask; after it, a commit renews them again."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        _note(vault.root, "ep-a", "pelican at the harbour")
        vault.reindex()
        index = vault.index
        seen: list[str] = []
        index.conn.set_trace_callback(seen.append)
        vault.search("pelican harbour", refresh=False)
        index.conn.set_trace_callback(None)
        assert seen.count("PRAGMA data_version") == 1
        with index.read_once():
            assert index.match_count('"pelican"', 10) == 1
            with Vault(vault.root, env={}) as other:  # another connection's write
                _note(vault.root, "ep-b", "another pelican")
                other.reindex()
            assert index.match_count('"pelican"', 10) == 1  # looked for at the first ask only
        assert index.match_count('"pelican"', 10) == 2


def test_search_hits_carry_their_details_once_shown(tmp_path: Path) -> None:
    """A search reads details only for the results it returns; they are the episode's own."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        _note(vault.root, "ep-a", "pelican at the harbour")
        vault.reindex()
        hits = vault.index.search_episodes('"pelican"', 5)
        assert hits and "details" not in hits[0].row
        seen: list[str] = []
        vault.index.conn.set_trace_callback(seen.append)
        [found] = vault.search("pelican", refresh=False).results
        vault.index.conn.set_trace_callback(None)
        assert found.details == "- pelican at the harbour"
        assert found.matched == ("pelican",)
        # which rowid its words are looked up at and its details: one statement
        assert sum("FROM episodes WHERE id IN" in s for s in seen if "summary" not in s) == 1
        rowid = vault.index.execute("SELECT rowid FROM episodes WHERE id = 'ep-a'").fetchone()[0]
        assert vault.index.shown_episodes(["ep-a", "nothing"]) == {"ep-a": (rowid, found.details)}


def test_a_turn_logged_by_another_process_is_found_by_a_vault_that_searched_before(
    tmp_path: Path,
) -> None:
    """Which raw logs there are, and where each file's lines lie, are kept between searches
    only until any connection writes."""
    with Vault.init(tmp_path / "v", env={}) as reader:
        reader.log_turn("s-1", "user", "the pelican is at the harbour")
        assert len(reader.search("pelican", refresh=False).passages) == 1
        with Vault(reader.root, env={}) as writer:
            writer.log_turn("s-2", "user", "a second pelican landed")
        found = reader.search("pelican", refresh=False).passages
        assert sorted(p.text for p in found) == [
            "a second pelican landed",
            "the pelican is at the harbour",
        ]


def _segments(index: Index, fts: str) -> int:
    return int(index.execute(f"SELECT count(DISTINCT segid) FROM {fts}_idx").fetchone()[0])


def test_optimize_merges_the_full_text_segments_and_changes_no_answer(vault_dir: Path) -> None:
    """Every sync adds a segment per full-text table; merged, every answer is the same."""
    queries = ["email john", "dentist appointment", "falcon release", "gym", "sarah newco"]
    with Vault(vault_dir, env={}) as vault:
        vault.reindex()
        assert _segments(vault.index, "passages_fts") == 1  # a first load is merged at once
        for n in range(12):  # hand edits, one sync each
            note = vault_dir / "episodes" / f"2025-12-{n + 1:02d}_09-00-00_note-{n}.md"
            note.write_text(
                f"---\nid: ep-note-{n}\ntimestamp: 2025-12-{n + 1:02d}T09:00:00Z\n"
                f"summary: Note {n} about John and the falcon release.\ntags: [note]\n---\n"
                f"**Details:**\n- John asked about the falcon release, note {n}\n",
                encoding="utf-8",
            )
            vault.reindex()
        assert _segments(vault.index, "passages_fts") > 1
        before = [vault.search(q, refresh=False).as_dict() for q in queries]
        with vault.index.transaction():
            vault.index.optimize()
        assert _segments(vault.index, "passages_fts") == 1
        after = [vault.search(q, refresh=False).as_dict() for q in queries]
    strip = [{k: v for k, v in doc.items() if k != "took_ms"} for doc in before]
    assert strip == [{k: v for k, v in doc.items() if k != "took_ms"} for doc in after]


def _note_folder(root: Path, count: int) -> Path:
    folder = root / "notes"
    folder.mkdir()
    for n in range(count):
        (folder / f"2026-01-{n + 1:02d}-walk.md").write_text(f"# Walk {n}\n\n- Walked {n} km\n")
    return folder


def test_an_import_notes_rerun_finds_each_episode_through_the_source_index(
    tmp_path: Path,
) -> None:
    """Every query a re-run makes of the episodes table is answered by an index, never a
    scan of the table: a scan per note made a 50k-note re-run quadratic."""
    folder = _note_folder(tmp_path, 5)
    with Vault.init(tmp_path / "vault", env={}) as vault:
        assert vault.import_notes(folder).episodes == 5
        statements: list[str] = []
        vault.index.conn.set_trace_callback(statements.append)
        again = vault.import_notes(folder)
        vault.index.conn.set_trace_callback(None)
        assert (again.known_episodes, again.added) == (5, 0)
        lookups = [s for s in statements if "FROM episodes" in s and "WHERE source" in s]
        assert len(lookups) == 5
        for statement in lookups:
            plan = vault.index.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()
            details = " ".join(str(row[-1]) for row in plan)
            assert "USING INDEX idx_episodes_source_agent" in details, details
            assert "SCAN episodes" not in details, details


def test_an_index_of_the_previous_schema_is_rebuilt_with_the_source_index(
    tmp_path: Path,
) -> None:
    folder = _note_folder(tmp_path, 2)
    with Vault.init(tmp_path / "vault", env={}) as vault:
        vault.import_notes(folder)
        vault.index.execute("DROP INDEX idx_episodes_source_agent")
        vault.index.set_meta("schema_version", str(int(SCHEMA_VERSION) - 1))
        vault.index.conn.commit()
        path = vault.index.path
    reopened = Index(path)
    try:
        assert reopened.rebuilt
        assert reopened.get_meta("schema_version") == SCHEMA_VERSION
        names = {r[0] for r in reopened.execute("SELECT name FROM sqlite_master").fetchall()}
        assert "idx_episodes_source_agent" in names
    finally:
        reopened.close()
    with Vault(tmp_path / "vault", env={}) as vault:  # the rebuilt index is filled again
        vault.refresh()
        assert len(vault.index.source_episodes(str(folder / "2026-01-01-walk.md"), None)) == 1
