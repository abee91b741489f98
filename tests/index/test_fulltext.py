"""Full-text ranking: one pass per query, the same answers as scoring every match."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from random import Random

import pytest

from memoryclaw import Vault
from memoryclaw.index import fulltext, passages, rowids
from memoryclaw.index.store import Index

WORDS = ["heron", "pelican", "harbour", "ferry", "lantern", "anchor"]


def _write(
    root: Path, name: str, summary: str, tags: list[str], lines: list[str], day: int
) -> None:
    body = "\n".join(f"- #{n} Ana: {line}" for n, line in enumerate(lines, start=1))
    (root / "episodes" / f"{name}.md").write_text(
        f"---\nid: {name}\ntimestamp: 2025-01-{day:02d}T10:00:00Z\nsummary: {summary}\n"
        f"tags: [{', '.join(tags)}]\n---\n**Details:**\n{body}\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def common(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """A vault in which every word of ``WORDS`` is in a large share of the episodes, in
    every column, with lengths that vary: many scores, some of them tied."""
    rng = Random(7)
    with Vault.init(tmp_path_factory.mktemp("common") / "v", env={}) as vault:
        for n in range(400):
            summary = " ".join(rng.choice([*WORDS, "tide", "quay", "gull"]) for _ in range(4))
            tags = rng.sample(WORDS, rng.randint(0, 2))
            lines = [
                " ".join(rng.choice([*WORDS, "wave", "rope"]) for _ in range(rng.randint(2, 9)))
                for _ in range(rng.randint(1, 3))
            ]
            _write(vault.root, f"ep-{n:03d}", summary, tags, lines, 1 + n % 28)
        for n in range(30):  # the same text, so the same score: ties at every cut-off
            _write(vault.root, f"ep-tie-{n:02d}", "heron pelican", [], ["heron"], 1 + n % 3)
        vault.reindex()
        yield vault


def _every_match_scored(index: Index, match: str, limit: int) -> list[tuple[int, float]]:
    """The reference: every match scored and joined, sorted by score, then newer, then id."""
    weights = ", ".join(str(w) for w in fulltext.EPISODE_WEIGHTS)
    rows = index.execute(
        f"SELECT e.rowid, -bm25(episodes_fts, {weights}) AS score FROM episodes_fts"
        " JOIN episodes e ON e.rowid = episodes_fts.rowid WHERE episodes_fts MATCH ?"
        " ORDER BY score DESC, e.ts_epoch DESC, e.id LIMIT ?",
        [match, limit],
    ).fetchall()
    return [(int(rowid), float(score)) for rowid, score in rows]


def _statements(index: Index) -> list[str]:
    seen: list[str] = []
    index.conn.set_trace_callback(seen.append)
    return seen


EXPRESSIONS = [
    " OR ".join(f'"{w}"' for w in sorted(words))
    for size in (1, 2, 3, 4)
    for words in itertools.combinations(WORDS, size)
]


@pytest.mark.parametrize("limit", [1, 5, 25], ids=["limit-1", "limit-5", "limit-25"])
def test_episodes_are_ranked_in_one_statement_as_if_every_match_were_scored(
    common: Vault, limit: int
) -> None:
    """Ties at the cut-off are settled by the same statement (newer, then id): no second,
    wider pass."""
    index = common.index
    for match in [*EXPRESSIONS, '"heron" OR "pelican"']:
        seen = _statements(index)
        hits = index.search_episodes(match, limit)
        index.conn.set_trace_callback(None)
        assert [(h.rowid, h.bm25) for h in hits] == _every_match_scored(index, match, limit)
        assert sum("episodes_fts MATCH" in s and "bm25" in s for s in seen) == 1, match


def test_a_tie_straddling_the_cut_off_goes_to_the_newer_then_the_smaller_id(
    common: Vault,
) -> None:
    index = common.index
    match = '"heron" AND "pelican" NOT "wave"'
    reference = _every_match_scored(index, match, 500)
    tie = index.execute("SELECT rowid FROM episodes WHERE id = 'ep-tie-00'").fetchone()[0]
    first = next(n for n, (rowid, _) in enumerate(reference) if rowid == tie)
    first = next(n for n, (_, score) in enumerate(reference) if score == reference[first][1])
    limit = first + 3  # the cut-off falls inside the 30 tied episodes
    assert reference[limit][1] == reference[limit - 1][1]
    assert [(h.rowid, h.bm25) for h in index.search_episodes(match, limit)] == reference[:limit]


def test_common_phrases_are_ranked_among_rows_holding_two_of_them_first(
    common: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every phrase is common: the rows holding two of them are scored first and, when the
    best of them provably beat every other row, are the answer, identical to scoring all."""
    monkeypatch.setattr(fulltext, "_NARROW_FROM_MATCHES", 100)
    index = common.index
    narrowed = 0
    for match in EXPRESSIONS:
        seen = _statements(index)
        hits = index.search_episodes(match, 5)
        index.conn.set_trace_callback(None)
        assert [(h.rowid, h.bm25) for h in hits] == _every_match_scored(index, match, 5), match
        ranking = [s for s in seen if "bm25" in s]
        if " AND " in ranking[0] and len(ranking) == 1:
            narrowed += 1
    assert narrowed >= len(EXPRESSIONS) // 2


def test_passages_and_term_explanations_read_one_cursor_per_expression(
    common: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = common.index
    monkeypatch.setattr(type(index), "_small_passages", lambda *_: None)  # as a large table
    monkeypatch.setattr(type(index), "_phrase_passages", lambda *_: None)  # of many lines
    paths = [f"episodes/ep-{n:03d}.md" for n in range(0, 400, 40)]  # far apart
    seen = _statements(index)
    rows = index.search_passages('"heron" OR "anchor"', paths, 500)
    index.conn.set_trace_callback(None)
    assert [s.count("passages_fts MATCH") for s in seen if "JOIN passages p" in s] == [1]
    expected = index.execute(
        "SELECT p.rowid FROM passages_fts JOIN passages p ON p.rowid = passages_fts.rowid"
        f" WHERE passages_fts MATCH ? AND p.path IN ({','.join('?' * len(paths))})",
        ['"heron" OR "anchor"', *paths],
    ).fetchall()
    assert sorted(r["rowid"] for r in rows) == sorted(r[0] for r in expected)
    terms = {"heron": '"heron"', "anchor": '"anchor"', "rope": '"rope"'}
    wanted = [r["rowid"] for r in rows]
    seen = _statements(index)
    found = index.terms_matching("passages", wanted, terms)
    index.conn.set_trace_callback(None)
    # the phrases of the search were read whole for its smoothed scores: only "rope" is asked
    assert [s.count("passages_fts MATCH") for s in seen if "passages_fts MATCH" in s] == [1]
    for rowid in wanted:
        text = index.execute("SELECT text FROM passages WHERE rowid = ?", [rowid]).fetchone()[0]
        assert found.get(rowid, []) == [t for t in terms if t in text.split()]


@pytest.mark.parametrize("cut", ["first", "tenth", "tied"])
def test_passages_cut_inside_the_statement_are_the_head_of_the_whole_ranking(
    common: Vault, cut: str
) -> None:
    """Only the best ``limit`` lines of the files asked for become rows, yet they are the
    head of every match ranked (a cut between tied lines included), with the same smoothed
    scores, and a file inside a merged range that was not asked for takes no place."""
    index = common.index
    # neighbours, so their ranges merge with the files between them, which are not asked for
    paths = [f"episodes/ep-{n:03d}.md" for n in range(0, 400, 2)]
    paths += [f"episodes/ep-tie-{n:02d}.md" for n in range(30)]
    match = '"heron" OR "anchor"'
    everything = index.search_passages(match, paths, 100_000)
    assert {r["path"] for r in everything} <= set(paths)
    scores = [r["score"] for r in everything]
    tied = next(n for n in range(1, len(scores) - 1) if scores[n - 1] == scores[n] == scores[n + 1])
    limit = {"first": 1, "tenth": 10, "tied": tied}[cut]
    kept = index.search_passages(match, paths, limit)
    key = ["rowid", "score", "smooth", "path", "line"]
    assert [[r[k] for k in key] for r in kept] == [[r[k] for k in key] for r in everything[:limit]]


@pytest.mark.parametrize("match", EXPRESSIONS[::3])
def test_a_small_tables_lines_are_scored_as_the_full_text_query_scores_them(
    common: Vault, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a small table, lines are scored from their phrases' own scores, kept between
    queries, with no full-text query: the same rows, in the same order, with the same
    floats as bm25() of the whole expression."""
    index = common.index
    paths = [f"episodes/ep-{n:03d}.md" for n in range(0, 400, 3)]
    paths += [f"episodes/ep-tie-{n:02d}.md" for n in range(0, 30, 2)]
    for limit in (5, 120, 10_000):
        seen = _statements(index)
        small = index.search_passages(match, paths, limit)
        index.conn.set_trace_callback(None)
        assert not any("bm25" in s and " OR " in s for s in seen)
        with monkeypatch.context() as patch:
            patch.setattr(type(index), "_small_passages", lambda *_: None)
            patch.setattr(type(index), "_phrase_passages", lambda *_: None)
            full = index.search_passages(match, paths, limit)
        assert [_without_phrases(r) for r in small] == full and small


def _without_phrases(row: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in row.items() if key != "phrases"}


@pytest.fixture
def large(common: Vault, monkeypatch: pytest.MonkeyPatch) -> Iterator[Index]:
    """The common vault's index as if its lines were too many to read a phrase whole (no
    small-table shortcut, nothing of it kept from earlier tests)."""
    index = common.index
    monkeypatch.setattr(type(index), "_phrase_scores", lambda *_: None)
    index._memo_store.clear()
    yield index
    index._memo_store.clear()


def _holds(index: Index, phrase: str, rowid: int) -> bool:
    return bool(
        index.execute(
            "SELECT 1 FROM passages_fts WHERE passages_fts MATCH ? AND rowid = ?", [phrase, rowid]
        ).fetchone()
    )


@pytest.mark.parametrize("match", EXPRESSIONS[::3])
def test_the_lines_of_a_few_short_files_are_scored_phrase_by_phrase(
    large: Index, match: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each phrase scored alone over the files' lines adds up to the same rows, order and
    floats as bm25() of the whole expression, and tells which phrases each line holds."""
    paths = [f"episodes/ep-{n:03d}.md" for n in range(0, 400, 9)]
    paths += [f"episodes/ep-tie-{n:02d}.md" for n in range(0, 30, 2)]
    for limit in (5, 120, 10_000):
        seen = _statements(large)
        alone = large.search_passages(match, paths, limit)
        large.conn.set_trace_callback(None)
        assert not any("bm25" in s and " OR " in s for s in seen)
        with monkeypatch.context() as patch:
            patch.setattr(type(large), "_phrase_passages", lambda *_: None)
            whole = large.search_passages(match, paths, limit)
        assert [_without_phrases(r) for r in alone] == whole and alone
        for row in alone:
            held = [p for p in match.split(" OR ") if _holds(large, p, row["rowid"])]
            assert list(row["phrases"]) == held


def test_the_lines_of_many_files_are_ranked_by_one_cursor(
    large: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``PHRASE_LINES`` lines the files are ranked by the expression's one cursor, and
    which phrases a line holds is not known from its score."""
    monkeypatch.setattr(passages, "PHRASE_LINES", 10)
    seen = _statements(large)
    rows = large.search_passages(
        '"heron" OR "anchor"', [f"episodes/ep-{n:03d}.md" for n in range(20)], 50
    )
    large.conn.set_trace_callback(None)
    assert [s.count("passages_fts MATCH") for s in seen if "JOIN passages p" in s] == [1]
    assert rows and not any("phrases" in r for r in rows)


def test_the_phrases_a_line_came_with_are_not_asked_again(large: Index) -> None:
    """Which query words each line holds: the phrases its score came with are not looked up
    again, the others are, and the answer is the one of asking every phrase."""
    paths = [f"episodes/ep-{n:03d}.md" for n in range(0, 400, 7)]
    rows = large.search_passages('"anchor" OR "heron"', paths, 500)
    terms = {"heron": '"heron"', "anchor": '"anchor"', "rope": '"rope"'}
    wanted = [r["rowid"] for r in rows]
    known = {r["rowid"]: r["phrases"] for r in rows}
    seen = _statements(large)
    found = large.terms_matching("passages", wanted, terms, known, {'"anchor"', '"heron"'})
    large.conn.set_trace_callback(None)
    assert [s.count("passages_fts MATCH") for s in seen if "passages_fts MATCH" in s] == [
        1
    ]  # "rope"
    assert found == large.terms_matching("passages", wanted, terms)
    for rowid in wanted:
        held = [label for label, phrase in terms.items() if _holds(large, phrase, rowid)]
        assert found.get(rowid, []) == held


def test_passages_of_a_file_inside_a_merged_range_take_no_place(tmp_path: Path) -> None:
    """Two long files asked for, a short one between them that is not: one range covers all
    three, yet the short file's lines, the best of all, are neither returned nor counted."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        long = [f"heron {'wave ' * (n % 7)}" for n in range(300)]
        _write(vault.root, "ep-a", "a", [], long, 1)
        _write(vault.root, "ep-b", "b", [], ["heron heron heron"] * 3, 2)
        _write(vault.root, "ep-c", "c", [], long, 3)
        vault.reindex()
        index = vault.index
        spans = index.execute("SELECT path, min(rowid), max(rowid) FROM passages GROUP BY path")
        bounds = {path: (low, high) for path, low, high in spans}
        assert bounds["episodes/ep-a.md"][1] < bounds["episodes/ep-b.md"][0]
        assert bounds["episodes/ep-b.md"][1] < bounds["episodes/ep-c.md"][0]
        asked = ["episodes/ep-a.md", "episodes/ep-c.md"]
        rows = index.search_passages('"heron"', asked, 50)
        assert len(rows) == 50 and "episodes/ep-b.md" not in {r["path"] for r in rows}
        assert rows == index.search_passages('"heron"', asked, 1_000)[:50]


def test_passages_of_long_raw_logs_and_short_files_are_found_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long files are ranges of the filter, short ones listed rows, many of either split
    over statements: every matching line of every file asked for is found, no other."""
    monkeypatch.setattr(rowids, "RANGES_PER_QUERY", 2)
    with Vault.init(tmp_path / "v", env={}) as vault:
        for session in range(5):
            vault.ingest(
                {"session": f"long-{session}", "role": "user", "content": f"turn {n} {word}"}
                for n in range(300)
                for word in ["osprey" if n % 97 == 5 else "gull"]
            )
        vault.ingest(
            {"session": "short", "role": "user", "content": "an osprey at dawn"} for _ in [0]
        )
        index = vault.index
        spans = index.execute(
            "SELECT path, max(rowid) - min(rowid) FROM passages GROUP BY path"
        ).fetchall()
        assert sorted(size for _, size in spans)[-1] >= rowids.LISTED_SPAN
        rows = index.search_passages('"osprey"', [], 500)
        expected = index.execute("SELECT rowid FROM passages WHERE text LIKE '%osprey%'").fetchall()
        assert sorted(r["rowid"] for r in rows) == sorted(r[0] for r in expected)
        assert len(rows) == 5 * 4 + 1


def test_the_archive_condition_is_read_only_while_an_episode_is_archived(tmp_path: Path) -> None:
    """Leaving archived episodes out costs a condition on every match: a vault without any
    ranks without it, and once one is archived it is left out again."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        for name, day in (("ep-a", 1), ("ep-b", 2)):
            _write(vault.root, name, "heron", [], ["a heron"], day)
        vault.reindex()
        index = vault.index
        seen = _statements(index)
        hits = index.search_episodes('"heron"', 5, archived=False)
        index.conn.set_trace_callback(None)
        assert [h.row["id"] for h in hits] == ["ep-b", "ep-a"]
        assert not any("NOT IN" in s for s in seen if "bm25" in s)
        archive = vault.root / "episodes" / "archive" / "2025"
        archive.mkdir(parents=True)
        (vault.root / "episodes" / "ep-b.md").rename(archive / "ep-b.md")
        vault.reindex()
        seen = _statements(index)
        hits = index.search_episodes('"heron"', 5, archived=False)
        index.conn.set_trace_callback(None)
        assert [h.row["id"] for h in hits] == ["ep-a"]
        assert any("NOT IN" in s for s in seen if "bm25" in s)
        assert [h.row["id"] for h in index.search_episodes('"heron"', 5)] == ["ep-b", "ep-a"]


def test_episode_words_as_common_as_pruned_ones_are_looked_up_at_each_row(common: Vault) -> None:
    """Which words an episode holds: a word in more than 5% of the episodes is looked up at
    each row asked (its whole list of rows is not read), a rarer one read whole, and both
    answer as matching each row alone does."""
    index = common.index
    terms = {"heron": '"heron"', "pelican": '"pelican"', "nowhere": '"nowhere"'}
    wanted = [r[0] for r in index.execute("SELECT rowid FROM episodes ORDER BY rowid LIMIT 9")]
    seen = _statements(index)
    found = index.terms_matching("episodes", wanted, terms)
    index.conn.set_trace_callback(None)
    asked = [s for s in seen if "episodes_fts MATCH" in s and "UNION ALL" in s]
    assert len(asked) == 1 and asked[0].count("+rowid IN") == 1  # "nowhere" only
    for rowid in wanted:
        holds = [
            label
            for label, phrase in terms.items()
            if index.execute(
                "SELECT 1 FROM episodes_fts WHERE episodes_fts MATCH ? AND rowid = ?",
                [phrase, rowid],
            ).fetchone()
        ]
        assert found.get(rowid, []) == holds


def test_line_words_as_common_in_episodes_as_pruned_ones_are_looked_up_at_each_row(
    large: Index,
) -> None:
    """Which words a line holds: a word in more than 5% of the episodes is looked up at each
    line asked (its lines, more still, are not all read), a rarer one read whole, and both
    answer as matching each line alone does."""
    terms = {"heron": '"heron"', "pelican": '"pelican"', "nowhere": '"nowhere"'}
    wanted = [r[0] for r in large.execute("SELECT rowid FROM passages ORDER BY rowid LIMIT 9")]
    seen = _statements(large)
    found = large.terms_matching("passages", wanted, terms)
    large.conn.set_trace_callback(None)
    asked = [s for s in seen if "passages_fts MATCH" in s and "UNION ALL" in s]
    assert len(asked) == 1 and asked[0].count("+rowid IN") == 1  # "nowhere" only
    for rowid in wanted:
        assert found.get(rowid, []) == [p for p in terms if _holds(large, terms[p], rowid)]
