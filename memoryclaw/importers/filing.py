"""Writing what an import read into the vault: a memory file's ``entity: value`` items filed
as facts (known ones skipped, contradicting ones to pending) and notes as episodes, new or
with the lines an earlier import's episode lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..consolidate.review import matching, same_value
from ..vault.episodes import Episode, dump_episode, episode_filename, parse_episode
from ..vault.facts import format_fact_line, format_provenance
from ..vault.files import (
    EPISODES_DIR,
    PENDING_FILE,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    atomic_write,
    ensure_dir,
    file_lock,
    read_text,
    resolve_inside,
    sweep_temp_files,
    unique_path,
)
from ..vault.frontmatter import join_frontmatter
from ..vault.naming import short_hash
from ..vault.pending import MANY_VALUED, append_line
from ..vault.scopes import OWNER
from ..vault.values import value_key
from .discovery import outside_name, read_outside
from .parsers import ItemFact, NoteItem, daily_note_date, item_fact, memory_items, note_document

if TYPE_CHECKING:
    from ..api import Vault
    from .workspace import ImportReport

_NOON = time(12, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class FactItem:
    """A memory-file item on its way to a fact file: what it states and where it was said."""

    fact: ItemFact
    heading: str
    source: str  # <origin>:<line>
    updated: str  # YYYY-MM-DD


def _file_day(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date().isoformat()


def memory_file_items(
    path: Path, text: str, origin: str, *, user_model: bool, heading: str | None
) -> tuple[list[NoteItem], list[FactItem]]:
    """A memory file's items, and each as a fact on its way to a fact file."""
    notes = memory_items(text, user_model=user_model)
    updated = _file_day(path)
    facts = [
        FactItem(
            item_fact(i),
            heading or i.section or "Memory",
            f"{origin}:{i.line}",
            i.observed or updated,
        )
        for i in notes
    ]
    return notes, facts


def _known(vault: Vault, fact: ItemFact) -> list[dict[str, Any]]:
    """The vault's current facts with the same entity and field (a note: the same text)."""
    if fact.is_note:
        rows = vault.index.fact_rows("field = 'note' AND superseded = 0", [])
        return [r for r in rows if same_value(r["value"], fact.value)]
    return vault.index.fact_rows(
        "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
        [fact.entity, fact.field],
    )


def file_items(
    vault: Vault,
    items: Sequence[FactItem],
    target: str,
    meta: dict[str, Any],
    title: str,
    report: ImportReport,
) -> None:
    """File the ``entity: value`` items into the fact file ``target``: new ones appended under
    their headings, known ones skipped, contradicting ones to pending."""
    with file_lock(vault.root, SEMANTIC_LOCK):  # one writer of fact files at a time
        seen: set[tuple[str, str, str]] = set()
        fresh: list[FactItem] = []
        for item in items:
            fact = item.fact
            key = (fact.entity.casefold(), fact.field, fact.value)
            if fact.is_note or key in seen:
                continue
            if report.stones.line(format_fact_line(fact.entity, fact.field, fact.value)):
                report.forgotten += item.source not in report.dropped  # not counted as a line
                continue
            seen.add(key)
            rows = _known(vault, fact)
            if any(same_value(r["value"], fact.value) for r in rows) or matching(
                vault.root, fact.entity, fact.field, fact.value
            ):
                report.known_items += 1
                continue
            if rows and fact.field not in MANY_VALUED:
                report.conflicts += 1
                if not report.dry_run:
                    was = ", ".join(sorted({str(r["value"]) for r in rows}))
                    body = format_fact_line(fact.entity, fact.field, fact.value)[2:]
                    agent = meta.get("agent")
                    provenance = format_provenance(
                        item.source, item.updated, "high", agent=agent, scope=OWNER
                    )
                    line = f"- CONFLICT {body} (was {was}) {provenance}"
                    report.writing(PENDING_FILE)
                    append_line(vault.root, PENDING_FILE, "Pending", line)
                    report.wrote(PENDING_FILE)
                continue
            report.facts += 1
            fresh.append(item)
        if fresh and not report.dry_run:
            report.writing(target)
            _append_under_headings(vault.root, target, meta, title, fresh)
            report.wrote(target)


def _append_under_headings(
    root: Path, target: str, meta: dict[str, Any], title: str, items: Sequence[FactItem]
) -> None:
    path = resolve_inside(root, target)
    if path.exists():
        text = read_text(root, target)
    else:
        ensure_dir(path.parent)
        text = join_frontmatter(meta, f"# {title}\n")
    text = text if text.endswith("\n") else text + "\n"
    last = _last_heading(text)
    for item in items:
        if item.heading != last:
            text += f"\n## {item.heading}\n\n"
            last = item.heading
        provenance = format_provenance(item.source, item.updated, "high")
        fact = item.fact
        text += format_fact_line(fact.entity, fact.field, fact.value, provenance) + "\n"
    atomic_write(path, text)


def _last_heading(text: str) -> str | None:
    headings = [line[3:].strip() for line in text.split("\n") if line.startswith("## ")]
    return headings[-1] if headings else None


@dataclass(frozen=True)
class NoteEpisode:
    """A note on its way to an episode: where it came from, what it says (line, text)."""

    origin: str  # the episode's ``source``: openclaw:<file>, or a note's absolute path
    summary: str
    lines: tuple[tuple[int, str], ...]
    when: datetime
    agent: str | None
    tags: tuple[str, ...]
    scope: str | None = OWNER  # a note memoryclaw wrote keeps its own


def _line_key(text: str) -> str:
    return value_key(text.strip().removeprefix("- ").strip())


def add_note_episode(vault: Vault, note: NoteEpisode, report: ImportReport) -> None:
    """Write ``note`` as an episode, or, when an earlier import made its episode, append the
    lines that episode does not hold yet (edits made to it by hand are kept).  A forgotten
    line is left out (a note all of whose lines were forgotten makes no episode)."""
    if report.stones:
        kept = tuple((n, text) for n, text in note.lines if not report.stones.line(text))
        gone = {f"{note.origin}:{n}" for n, text in note.lines if (n, text) not in kept}
        report.forgotten += len(gone - report.dropped)
        report.dropped |= gone
        if gone and not kept:
            return
        note = replace(note, lines=kept)
    with file_lock(vault.root, SEMANTIC_LOCK):  # episodes/ is swept under this lock
        rows = vault.index.source_episodes(note.origin, note.agent)
        if not rows:
            report.episodes += 1
            report.notes += len(note.lines)
            if not report.dry_run:
                _write_new_episode(vault, note, report)
            return
        report.known_episodes += 1
        rel = str(rows[0]["path"])
        path = resolve_inside(vault.root, rel)
        episode = parse_episode(read_text(vault.root, rel), rel, path.stat().st_mtime)
        held = {_line_key(line) for line in episode.details.split("\n") if line.strip()}
        fresh = [(n, text) for n, text in note.lines if _line_key(text) not in held]
        report.known_items += len(note.lines) - len(fresh)
        if not fresh:
            return
        report.notes += len(fresh)
        if report.dry_run:
            return
        details = episode.details if episode.details.endswith("\n") else episode.details + "\n"
        details += "".join(f"- {text}\n" for _, text in fresh)
        lines = episode.extra.get("source_lines")
        known = list(lines) if isinstance(lines, list) else []
        extra = {**episode.extra, "source_lines": known + [n for n, _ in fresh]}
        report.writing(rel)
        atomic_write(path, dump_episode(replace(episode, details=details, extra=extra)))
        report.wrote(rel)


def _write_new_episode(vault: Vault, note: NoteEpisode, report: ImportReport) -> None:
    ident = f"ep-{note.when:%Y%m%d-%H%M%S}-{short_hash(note.origin, note.agent or '', length=8)}"
    episode = Episode(
        id=ident,
        path="",
        timestamp=note.when,
        summary=note.summary,
        details="".join(f"- {text}\n" for _, text in note.lines),
        tags=note.tags,
        confidence="high",
        source=note.origin,
        extra={"source_lines": [n for n, _ in note.lines]},
        agent=note.agent,
        scope=note.scope,
    )
    folder = resolve_inside(vault.root, EPISODES_DIR)
    ensure_dir(folder)
    target = unique_path(folder, episode_filename(note.when, f"imported {note.summary}"))
    report.writing(f"{EPISODES_DIR}/{target.name}")
    atomic_write(target, dump_episode(episode))
    report.wrote(f"{EPISODES_DIR}/{target.name}")


def dated_note(
    path: Path,
    day: date,
    origin: str,
    agent: str | None,
    *,
    text: str | None = None,
    scope: str | None = OWNER,
) -> NoteEpisode:
    """A daily (or any dated) note as an episode of that day, at noon UTC; ``text`` is the
    note as read already (redacted, review lines left out)."""
    document = note_document(read_outside(path) if text is None else text, outside_name(path.stem))
    tags = ("imported", "daily-note") if daily_note_date(path.name) else ("imported", "note")
    moment = datetime.combine(day, _NOON)
    return NoteEpisode(origin, document.summary, document.lines, moment, agent, tags, scope)


def memory_note(
    path: Path, items: Sequence[NoteItem], origin: str, summary: str, agent: str | None
) -> NoteEpisode:
    """A memory file's items as one episode, dated by the file's last change."""
    moment = datetime.fromtimestamp(int(path.stat().st_mtime), timezone.utc)
    lines = tuple((i.line, i.text) for i in items)
    return NoteEpisode(origin, summary, lines, moment, agent, ("imported", "memory-file"))


def sweep_written_folders(root: Path) -> None:
    """Remove the temp files a killed import (or other writer) left where imports write.
    Every writer of ``episodes/`` and ``semantic/`` holds the logs or the semantic lock:
    holding both, no write is in flight."""
    with file_lock(root, "logs"), file_lock(root, SEMANTIC_LOCK):
        for folder in (EPISODES_DIR, SEMANTIC_DIR):
            sweep_temp_files(root / folder)
