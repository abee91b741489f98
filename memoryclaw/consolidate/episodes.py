"""Where a consolidated log's episodes go: their stable ids and file names, their text with
forgotten lines taken out, and the episode of another log that already says the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..index.store import Index
from ..vault.episodes import Episode, dump_episode, episode_filename, episode_fingerprint
from ..vault.files import EPISODES_DIR, atomic_write, read_text, resolve_inside
from ..vault.frontmatter import split_frontmatter
from ..vault.logformat import RawLog, replace_log_meta
from ..vault.naming import short_hash
from ..vault.scrub import scrub
from ..vault.tombstones import Tombstones
from .summarize import EpisodeDraft


def episode_text(episode: Episode, forgotten: Tombstones) -> tuple[str, str | None]:
    """Where the episode goes and its text, with its forgotten lines taken out as forget
    takes them out (its summary rewritten, its file renamed); no text when nothing is left."""
    text = dump_episode(episode)
    if not forgotten:
        return episode.path, text
    held = [episode.summary, *episode.details.split("\n"), *episode.tags, *episode.entities]
    if not forgotten.ident(episode.id) and not any(forgotten.line(t) for t in held if t.strip()):
        return episode.path, text
    edit = scrub(episode.path, text, forgotten)
    if edit is None:
        return episode.path, text
    return edit.new_path or episode.path, edit.text


def episode_id(log: RawLog, draft: EpisodeDraft) -> str:
    """The stable id of the episode made from turns ``first..last`` of ``log``."""
    stamp = draft.timestamp.strftime("%Y%m%d-%H%M%S")
    log_id = str(log.meta.get("id") or log.path)
    return f"ep-{stamp}-{short_hash(log_id, str(draft.first_turn), str(draft.last_turn), length=8)}"


def episode_place(
    root: Path, index: Index, log: RawLog, draft: EpisodeDraft, taken: set[str]
) -> tuple[str, str]:
    """The episode's id and file: where an episode with that id already is, else a free name
    (not one of ``taken``, the files planned for this log's other episodes)."""
    ident = episode_id(log, draft)
    known = index.episode_rows("id = ?", [ident])
    return ident, known[0]["path"] if known else _free_episode_path(root, draft, ident, taken)


def to_episode(log: RawLog, source: str, draft: EpisodeDraft, ident: str, rel: str) -> Episode:
    """The episode a draft of ``log`` becomes, at ``rel``."""
    return Episode(
        id=ident,
        path=rel,
        timestamp=draft.timestamp,
        summary=draft.summary,
        details="**Details:**\n" + "".join(f"- {line}\n" for line in draft.details),
        tags=draft.tags,
        participants=draft.participants,
        confidence=draft.confidence,
        source=source,
        source_turns=(draft.first_turn, draft.last_turn),
        session=log.session,
        entities=draft.entities,
        agent=log.agent,
        scope=log.scope,
    )


def twin_of(index: Index, episode: Episode) -> str | None:
    """The file of an episode from another log that says the same (same normalised summary
    and details, :func:`~memoryclaw.vault.notes.episode_fingerprint`) to the same audience (agent
    and scope): ``episode`` is not written again.  None when there is none."""
    rows = index.episode_rows(
        "fingerprint = ? AND id != ? AND coalesce(source, '') != ?"
        " AND coalesce(agent, '') = ? AND coalesce(scope, '') = ?",
        [
            episode_fingerprint(episode.summary, episode.details),
            episode.id,
            episode.source or "",
            episode.agent or "",
            episode.scope or "",
        ],
        order="ts_epoch, path",
    )
    return str(rows[0]["path"]) if rows else None


def add_source(root: Path, rel: str, source: str) -> None:
    """List ``source`` in the episode's ``also_from`` (once: a re-run adds nothing); its body
    is left byte for byte."""
    text = read_text(root, rel)
    meta, _, _ = split_frontmatter(text, rel)
    also = meta.get("also_from")
    sources = [str(s) for s in also] if isinstance(also, list) else ([str(also)] if also else [])
    if source in sources or meta.get("source") == source:
        return
    meta["also_from"] = [*sources, source]
    atomic_write(resolve_inside(root, rel), replace_log_meta(text, rel, meta))


def _free_episode_path(root: Path, draft: EpisodeDraft, ident: str, taken: set[str]) -> str:
    """``episodes/<stamp>_<slug>.md``, with the id's hash added if another episode has it."""
    name = episode_filename(draft.timestamp, draft.slug)
    rel = f"{EPISODES_DIR}/{name}"
    path = root / rel
    mine = is_plain_file(path) and f"id: {ident}\n" in path.read_text("utf-8", errors="replace")
    if rel in taken or (os.path.lexists(path) and not mine):
        rel = f"{EPISODES_DIR}/{name[:-3]}-{ident.rsplit('-', 1)[-1]}.md"
    return rel


def is_plain_file(path: Path) -> bool:
    """A regular file, not a link or a folder: the only kind consolidation reads back."""
    return path.is_file() and not path.is_symlink()
