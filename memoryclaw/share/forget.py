"""Forgetting: remove what matches from every place memoryclaw wrote it, and keep it gone.

A query forgets the lines, turns and facts that hold all its words: an episode's matching
detail lines (the whole episode only when nothing else is left, or when it is named by id),
the matching turns of raw and processed logs (each replaced by :data:`FORGOTTEN`, so that
every other episode's ``source_turns`` still point at its turns), the fact lines that hold
them and the facts drawn from a forgotten turn (same source log, value said in it).  A
:class:`Plan` lists each of these (:mod:`memoryclaw.vault.scrub`); it is what ``--dry-run`` shows.

Applying a plan is journalled: ``.memoryclaw/forgetting.json`` names the files first, then
the tombstones of what goes are written (``semantic/_forgotten/``,
:mod:`memoryclaw.vault.tombstones`), then each file is scrubbed again against them.  A forget killed
on the way is finished by the next forget, consolidation or sync (:func:`finish`): the tombstones
say what goes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MemoryclawError
from ..index.store import Index
from ..vault.facts import TRAILING_COMMENT_RE, format_fact_line, parse_facts, parse_provenance
from ..vault.files import (
    EPISODES_DIR,
    LOGS_DIR,
    PENDING_FILE,
    PROCESSED_DIR,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    SKILLS_DIR,
    STATE_DIR,
    atomic_write,
    ensure_dir,
    file_lock,
    open_private,
    read_text,
    resolve_inside,
    sweep_temp_files,
)
from ..vault.frontmatter import split_frontmatter
from ..vault.logformat import parse_log
from ..vault.pending import pending_facts
from ..vault.scrub import FORGOTTEN, Edit, Matcher, kind_of, scrub
from ..vault.tombstones import (
    TOMBSTONE_DIR,
    Stone,
    Tombstones,
    holds_terms,
    line_forms,
    load,
    new_stone,
    tombstone_path,
    words,
)
from ..vault.tombstones import write as write_stone
from ..vault.words import composed

__all__ = ["FORGOTTEN", "Plan", "apply", "finish", "plan_facts", "plan_ids", "plan_query"]

FORGET_JOURNAL = f"{STATE_DIR}/forgetting.json"
_FRAME_RE = re.compile(r"^(?:#{1,6}\s.*|\*\*[^*]{1,60}:?\*\*:?|---)?$")
_MIN_TOMBSTONE_CHARS = 6  # "ok", "yes": too common to forget everywhere they are said
Note = Callable[[Iterable[str]], None]


@dataclass
class _QueryMatch:
    """A query's words, and the lines forgotten along with them."""

    terms: set[str]
    stones: Tombstones

    def line(self, text: str) -> bool:
        """Whether ``text`` holds every word of the query or was forgotten before."""
        return holds_terms(text, self.terms) or self.stones.line(text)

    def ident(self, ident: str | None) -> bool:
        """Whether this episode id (or source key) was forgotten."""
        return self.stones.ident(ident)

    def speaker(self, name: str) -> bool:
        """Whether this speaker's name holds every word of the query."""
        return holds_terms(name, self.terms)


@dataclass
class Plan:
    """What forgetting removes, file by file, and the tombstones it leaves."""

    edits: list[Edit] = field(default_factory=list)
    stone: Stone = field(default_factory=new_stone)
    terms: set[str] = field(default_factory=set)
    fact_ids: list[str] = field(default_factory=list)

    @property
    def episodes(self) -> dict[str, str]:
        """Every episode touched: vault path -> id."""
        return {e.path: e.episode_id or "" for e in self.edits if e.kind == "episode"}

    def deleted(self) -> list[str]:
        """The files deleted (whole episodes, and the old names of renamed ones)."""
        return sorted(e.path for e in self.edits if e.text is None or e.new_path)

    def edited(self) -> list[str]:
        """The files edited (not deleted) when this plan is applied."""
        return sorted(e.new_path or e.path for e in self.edits if e.text is not None)

    def paths(self) -> list[str]:
        """Every file the plan writes, deletes or creates."""
        return sorted({e.path for e in self.edits} | {e.new_path for e in self.edits if e.new_path})

    def matcher(self) -> Matcher:
        """What this plan forgets."""
        return _QueryMatch(self.terms, Tombstones([self.stone]))

    def count(self) -> int:
        """How many things go: whole episodes, lines, turns and facts."""
        total = 0
        for e in self.edits:
            if e.whole:
                total += 1
            elif e.kind == "facts":
                total += max(len(e.facts), len(e.lines))
            else:
                total += len(e.lines) + len(e.turns) + int(e.summary)
        return total


def memory_files(root: Path) -> list[str]:
    """Every file a forget may edit, without following links (tombstones excluded)."""
    out: list[str] = []
    for top in (EPISODES_DIR, SEMANTIC_DIR, LOGS_DIR, SKILLS_DIR):
        for folder, dirs, files in os.walk(root / top):
            rel_folder = Path(folder).relative_to(root).as_posix()
            dirs[:] = [
                d
                for d in sorted(dirs)
                if not d.startswith(".") and f"{rel_folder}/{d}" != TOMBSTONE_DIR
            ]
            for name in sorted(files):
                rel = f"{rel_folder}/{name}"
                if kind_of(rel) and not os.path.islink(root / rel):
                    out.append(rel)
    return out


def _read(root: Path, rel: str) -> str | None:
    try:
        return read_text(root, rel)
    except (MemoryclawError, OSError, UnicodeDecodeError):
        return None


def _scrub_all(root: Path, paths: Iterable[str], match: Matcher) -> list[Edit]:
    edits = []
    for rel in sorted(set(paths)):
        text = _read(root, rel)
        if text is not None and (edit := scrub(rel, text, match)) is not None:
            edits.append(edit)
    return edits


def plan_query(root: Path, index: Index, keywords: Sequence[str]) -> Plan:
    """What forgetting a query removes: every line, turn and fact holding all its words."""
    out = Plan(terms=_forget_terms(keywords))
    terms = out.terms
    if not terms:
        return out
    candidates = []
    for rel in memory_files(root):
        text = _read(root, rel)
        if text is None:
            continue
        folded = composed(text).casefold()  # once per file, not once per term
        if all(t in folded for t in terms):
            candidates.append(rel)
    # A nested or table fact spreads entity, field and value over lines: match it as a whole,
    # and take the values it replaced with it (search finds only current values).
    facts = _facts_holding(index, terms)
    for row in facts:
        _stone_fact(root, out.stone, row)
    return _finish_plan(root, index, out, sorted({*candidates, *(str(r["path"]) for r in facts)}))


def _facts_holding(index: Index, terms: set[str]) -> list[dict[str, Any]]:
    """The fact rows whose entity, field and value together hold every term, with the
    superseded values of the same entity and field."""
    longest = max(terms, key=len)
    like = f"%{longest[:3]}%"  # a stem's head: a cheap prefilter, the words decide
    rows = index.fact_rows("lower(entity || ' ' || field || ' ' || value) LIKE ?", [like])
    found = [r for r in rows if holds_terms(f"{r['entity']} {r['field']} {r['value']}", terms)]
    keys = {(str(r["entity"]).casefold(), str(r["field"])) for r in found}
    known = {r["id"] for r in found}
    for entity, name in sorted(keys):
        for row in index.fact_rows(
            "lower(entity) = ? AND field = ? AND superseded = 1", [entity, name]
        ):
            if row["id"] not in known:
                known.add(row["id"])
                found.append(row)
    return found


def _stone_fact(root: Path, stone: Stone, row: Mapping[str, Any]) -> None:
    """Tombstone one fact (index row) by its line, a table fact by its row's cell, and
    either by the line consolidation would file it as (said again, it is filed so)."""
    stone.add_line(format_fact_line(str(row["entity"]), str(row["field"]), str(row["value"])))
    if row["form"] == "table":
        stone.add_line(f"{row['entity']} | {row['value']}")
        return
    line = _line_at(root, str(row["path"]), int(row["line"]))
    if line is not None:
        stone.add_line(TRAILING_COMMENT_RE.sub("", line))  # named: however short


def plan_ids(root: Path, index: Index, episodes: Sequence[Mapping[str, Any]]) -> Plan:
    """What forgetting these episodes (index rows) removes: their files, the turns they were
    made of and the facts drawn from those turns."""
    out = Plan()
    candidates: set[str] = set()
    for row in episodes:
        out.stone.add_id(str(row["id"]))
        candidates.add(str(row["path"]))
        text = _read(root, str(row["path"])) or ""
        for line in [str(row["summary"]), *_said_lines(text, str(row["path"]))]:
            _tombstone(out.stone, line)
        source, first, last = row["source"], row["turn_first"], row["turn_last"]
        if source and first and str(source).startswith(PROCESSED_DIR + "/"):
            candidates.add(str(source))
            numbers = set(range(int(first), int(last or first) + 1))
            for turn in _turn_texts(root, str(source), numbers):
                _tombstone(out.stone, turn)
    return _finish_plan(root, index, out, sorted(candidates))


def _said_lines(text: str, rel: str) -> list[str]:
    """An episode's lines that say something: its body without frontmatter, labels
    (``**Details:**``) and headings, which every episode has and no forget may reach."""
    try:
        _, body, _ = split_frontmatter(text, rel)
    except MemoryclawError:
        body = text
    return [line for line in body.split("\n") if not _FRAME_RE.match(line.strip())]


def plan_facts(root: Path, index: Index, facts: Sequence[Mapping[str, Any]]) -> Plan:
    """What forgetting these facts (index rows) removes: their lines (a table fact's cell)."""
    out = Plan()
    for row in facts:
        _stone_fact(root, out.stone, row)
    return _finish_plan(root, index, out, sorted({str(row["path"]) for row in facts}))


def _line_at(root: Path, rel: str, number: int) -> str | None:
    lines = (_read(root, rel) or "").split("\n")
    return lines[number - 1] if 0 < number <= len(lines) else None


def _turn_texts(root: Path, rel: str, numbers: set[int]) -> list[str]:
    try:
        log = parse_log(read_text(root, rel), rel)
    except (MemoryclawError, OSError):  # a missing or broken log has no turns to forget
        return []
    return [turn.content for n, turn in enumerate(log.turns, 1) if n in numbers]


def _tombstone(stone: Stone, text: str) -> None:
    """Tombstone a removed text: each of its lines, and a turn as a whole."""
    pieces = [text, *text.split("\n")] if "\n" in text else [text]
    for piece in pieces:
        forms = line_forms(piece)
        if forms and max(len(f) for f in forms) >= _MIN_TOMBSTONE_CHARS and piece != FORGOTTEN:
            stone.add_line(piece)


def _finish_plan(root: Path, index: Index, out: Plan, candidates: Sequence[str]) -> Plan:
    """Scrub the candidates, add the facts drawn from forgotten turns, scrub again."""
    first = _scrub_all(root, candidates, out.matcher())
    said: dict[str, str] = {}  # processed log -> its forgotten turns' text, case folded
    for edit in first:
        for text in edit.removed_text:
            _tombstone(out.stone, text)
        if edit.text is None and edit.episode_id:
            out.stone.add_id(edit.episode_id)
        if edit.kind == "log" and edit.turns:
            said[edit.path] = "\n".join(t for _, t in edit.turns).casefold()
    extra = _drawn_facts(root, said, out.stone)
    out.edits = _scrub_all(root, [*candidates, *extra], out.matcher())
    for edit in out.edits:
        for text in edit.removed_text:
            if edit.kind == "facts":  # a fact line names its entity: specific however short
                out.stone.add_line(text)
            else:
                _tombstone(out.stone, text)
        if edit.text is None and edit.episode_id:
            out.stone.add_id(edit.episode_id)
        for fact in edit.facts:
            rows = index.fact_rows("path = ? AND line = ?", [edit.path, fact["line"]])
            out.fact_ids += [str(r["id"]) for r in rows]
    return out


def _drawn_facts(root: Path, said: Mapping[str, str], stone: Stone) -> list[str]:
    """Tombstone the facts drawn from forgotten turns (their provenance names the log and
    the turns said their value); the fact files holding them."""
    if not said:
        return []
    files: set[str] = set()
    for path in (root / SEMANTIC_DIR).glob("*.md"):
        rel = f"{SEMANTIC_DIR}/{path.name}"
        text = _read(root, rel)
        if text is None or rel == PENDING_FILE:
            continue
        try:
            facts = parse_facts(text, rel, "")
        except MemoryclawError:
            continue
        lines = text.split("\n")
        for fact in facts:
            heard = said.get(fact.source)
            if heard and len(fact.value) >= 3 and fact.value.casefold() in heard:
                stone.add_line(TRAILING_COMMENT_RE.sub("", lines[fact.line - 1]))
                stone.add_line(format_fact_line(fact.entity, fact.field, fact.value))
                files.add(rel)
    for entry in pending_facts(root) if (root / PENDING_FILE).exists() else []:
        comment = TRAILING_COMMENT_RE.search(entry.line)
        origin = parse_provenance(comment.group("body")).get("source") if comment else None
        heard = said.get(origin or "")
        if heard and len(entry.value) >= 3 and entry.value.casefold() in heard:
            stone.add_line(TRAILING_COMMENT_RE.sub("", entry.line))
            files.add(PENDING_FILE)
    return sorted(files)


def matcher_for(root: Path, keywords: Sequence[str]) -> tuple[Matcher, set[str]]:
    """What a purge searches the history for: the query's words and every tombstone."""
    terms = _forget_terms(keywords)
    return _QueryMatch(terms, load(root)), terms


# Words memoryclaw itself writes on every turn and summary ("User said ...", a turn's role):
# a query of them alone would match every turn of a role, not something the user said.
_ROLE_WORDS = frozenset(words("user assistant system tool"))


def _forget_terms(keywords: Sequence[str]) -> set[str]:
    """The words a forget query matches by, less the role words memoryclaw writes itself."""
    terms: set[str] = set()
    for keyword in keywords:
        terms |= words(keyword)
    return terms - _ROLE_WORDS


# ------------------------------------------------------------------------------ apply


def apply(root: Path, todo: Plan, note: Note | None = None) -> str | None:
    """Journal the plan, write its tombstones, then scrub its files; the tombstone file's
    vault path (None when there was nothing to forget).  The caller brings the index up to
    date, commits and calls :func:`done`."""
    if not todo.edits:
        return None
    rel = tombstone_path()
    paths = todo.paths()
    if note is not None:
        note([*paths, rel])
    _write_journal(root, {"stone": rel, "paths": paths})  # no text: the tombstones say it
    write_stone(root, rel, todo.stone)
    rescrub(root, paths, todo.matcher(), note)
    return rel


def rescrub(
    root: Path, paths: Iterable[str], match: Matcher, note: Note | None = None
) -> list[str]:
    """Scrub these files again, as they are now, under the locks their writers take; the
    files written or deleted."""
    changed: list[str] = []
    paths = list(paths)
    # logs before semantic, as consolidation takes them
    with file_lock(root, "logs"), file_lock(root, SEMANTIC_LOCK):
        # a killed write's temp file can hold (or be named after) what is forgotten; every
        # writer of these folders holds one of the two locks, so none is in flight
        folders = {p.rpartition("/")[0] for p in paths if not p.startswith(SKILLS_DIR + "/")}
        for folder in sorted(folders | {TOMBSTONE_DIR}):
            sweep_temp_files(resolve_inside(root, folder))
        for edit in _scrub_all(root, paths, match):
            target = resolve_inside(root, edit.path)
            if edit.text is None:
                target.unlink(missing_ok=True)
            elif edit.new_path:
                if note is not None:
                    note([edit.new_path])
                atomic_write(resolve_inside(root, edit.new_path), edit.text)
                target.unlink(missing_ok=True)
                changed.append(edit.new_path)
            else:
                atomic_write(target, edit.text)
            changed.append(edit.path)
    return changed


def _write_journal(root: Path, doc: Mapping[str, Any]) -> None:
    ensure_dir(root / STATE_DIR)
    tmp = root / f"{FORGET_JOURNAL}.tmp"
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, json.dumps(doc).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, root / FORGET_JOURNAL)


def done(root: Path) -> None:
    """The forget is committed: drop its journal."""
    (root / FORGET_JOURNAL).unlink(missing_ok=True)
    (root / f"{FORGET_JOURNAL}.tmp").unlink(missing_ok=True)


def interrupted(root: Path) -> dict[str, Any] | None:
    """The journal of a forget that did not finish, if one did not (a journal killed while
    it was written counts: nothing was removed yet, and :func:`finish` drops it)."""
    if (root / f"{FORGET_JOURNAL}.tmp").exists() and not (root / FORGET_JOURNAL).exists():
        return {"stone": None, "paths": []}
    try:
        doc = json.loads((root / FORGET_JOURNAL).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"stone": None, "paths": []}  # torn before anything was written
    return doc if isinstance(doc, dict) else {"stone": None, "paths": []}


def finish(root: Path, note: Note | None = None) -> list[str] | None:
    """Finish a forget that was killed: when its tombstones were written, scrub its files
    against every tombstone (they hold every text the plan removes); otherwise nothing was
    removed and it is rolled back.  The files changed (None: no forget was interrupted); the caller
    re-indexes, commits and calls :func:`done`."""
    doc = interrupted(root)
    (root / f"{FORGET_JOURNAL}.tmp").unlink(missing_ok=True)  # under the lock: no writer now
    if doc is None:
        return None
    stone = doc.get("stone")
    paths = [p for p in doc.get("paths") or [] if isinstance(p, str)]
    try:
        written = isinstance(stone, str) and resolve_inside(root, stone).is_file()
    except MemoryclawError:
        written = False
    if not written:
        done(root)
        return []
    if note is not None:
        note([*paths, str(stone)])
    rescrub(root, paths, load(root), note)
    return paths


def reapply(root: Path, paths: Iterable[str], note: Note | None = None) -> list[str]:
    """Take forgotten content out of these files again (what a merge or import brought
    back); the files changed."""
    stones = load(root)
    paths = list(paths)
    if any(p.startswith(TOMBSTONE_DIR + "/") for p in paths):
        paths = memory_files(root)  # a forget from elsewhere: everything here is checked
    chosen = [p for p in paths if kind_of(p)]
    if not stones or not chosen:
        return []
    return rescrub(root, chosen, stones, note)
