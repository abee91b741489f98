"""Bring memory from elsewhere into the vault: an OpenClaw install, or a folder of notes.

The rules (README, "Importing"):

* Every note becomes an episode, whose detail lines are what retrieval searches word by word:
  a memory file (OpenClaw's ``MEMORY.md`` / ``USER.md`` / undated ``memory/*.md``, a notes
  folder's ``CLAUDE.md`` / ``AGENTS.md`` or list-shaped notes) one episode of its items,
  dated by the file's last change; a dated note (``YYYY-MM-DD*.md``) one episode of that day
  (at noon UTC, so the day is the same in every time zone people live in); any other note one
  episode dated by its last change.  The episode's ``source`` is the file
  (``openclaw:MEMORY.md``, or a note's absolute path) and ``source_lines`` the line of each
  detail.  Importing again finds the episode by its source and adds only lines it lacks.
* The ``entity: value`` items of memory files are facts as well (fact lookups, supersession):
  the owner's own word — they wrote it, or their own agent wrote it where they read it — so
  they are filed directly, not held for review, in one fact file per source
  (``semantic/openclaw-<agent>.md``, ``semantic/notes-<folder>.md``), each line with its
  provenance ``source: <origin>:<line>``.  A fact the vault already holds is skipped; one
  that contradicts a current single value goes to ``semantic/_pending.md`` as a CONFLICT.
* A session transcript becomes raw-log turns with their own times, session key, agent and
  speakers, closed and then consolidated as any log.  ``logs/imported.yaml``
  records, per session, the time of the last turn brought in; a later import brings only
  newer turns.

Owner-level scope: OpenClaw loads these files only in the owner's private sessions, so what
they hold is recalled in the owner's direct conversations (of that agent) and never where
other people read.

An import never raises trust.  A note memoryclaw wrote (its frontmatter carries ``scope``,
``agent``, ``session`` or ``source_turns``: an episode of a vault, copied) keeps its scope and
agent, and is only an episode, never facts; one whose scope or agent cannot be kept is
skipped by name.  A vault's review file (``_pending.md``) is skipped, and so is every line
awaiting review (``- UNTRUSTED …``, ``- CONFLICT …``, ``- LOW``/``- INVALID`` with its
provenance) and every fact line whose provenance names an agent or a scope other than
owner-level: an import files what it reads owner-level, which those lines were not.  A
folder holding such files is reported as looking like a vault's folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInputError
from ..share.forget import reapply
from ..vault.files import SEMANTIC_DIR, printable_name
from ..vault.naming import plural, slugify
from ..vault.scopes import OWNER
from ..vault.tombstones import Tombstones
from ..vault.tombstones import load as load_tombstones
from .discovery import (
    is_fact_note,
    kept_scope,
    modified_day,
    note_files,
    outside_name,
    read_outside,
    refuse_inside_vault,
    timestamp_day,
)
from .filing import (
    FactItem,
    add_note_episode,
    dated_note,
    file_items,
    memory_file_items,
    memory_note,
    sweep_written_folders,
)
from .openclaw_store import (
    AgentPlace,
    StoredSession,
    agent_places,
    daily_notes,
    load_config,
    memory_files,
    sessions,
    state_dir,
)
from .parsers import (
    REVIEW_FILE,
    daily_note_date,
    foreign_lines,
    note_date,
    note_frontmatter,
    note_title,
)
from .transcripts import import_sessions

if TYPE_CHECKING:
    from ..api import Vault


@dataclass
class ImportReport:
    """What an import added (or, on a dry run, would add) and what it found already there."""

    facts: int = 0
    notes: int = 0
    conflicts: int = 0
    known_items: int = 0
    episodes: int = 0
    known_episodes: int = 0
    sessions: int = 0
    turns: int = 0
    known_turns: int = 0
    unreadable_events: int = 0
    forgotten: int = 0  # items and turns left out because they were forgotten
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what the user should know of the source
    consolidation: dict[str, Any] | None = None
    dry_run: bool = False
    # Told each vault file before it is written (the git journal: a killed run's files are
    # committed by the next run); not part of the report.
    note: Callable[[Iterable[str]], None] | None = field(default=None, repr=False, compare=False)
    # The vault's tombstones: a forgotten item is never written again (nor counted as added).
    stones: Tombstones = field(default_factory=Tombstones, repr=False, compare=False)
    dropped: set[str] = field(default_factory=set, repr=False, compare=False)  # origin:line

    def writing(self, rel: str) -> None:
        """Note, before writing it, that the import is about to write the vault file ``rel``."""
        if self.note is not None:
            self.note([rel])

    def wrote(self, rel: str) -> None:
        """Note that the import wrote the vault file ``rel``."""
        if rel not in self.files:
            self.files.append(rel)

    @property
    def added(self) -> int:
        """How many memories the import added: facts, notes, pending conflicts, episodes, turns."""
        return self.facts + self.notes + self.conflicts + self.episodes + self.turns

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "facts": self.facts,
            "notes": self.notes,
            "conflicts": self.conflicts,
            "known_items": self.known_items,
            "episodes": self.episodes,
            "known_episodes": self.known_episodes,
            "sessions": self.sessions,
            "turns": self.turns,
            "known_turns": self.known_turns,
            "unreadable_events": self.unreadable_events,
            "forgotten": self.forgotten,
            "added": self.added,
            "files": self.files,
            "skipped": self.skipped,
            "notices": self.notices,
            "consolidation": self.consolidation,
            "dry_run": self.dry_run,
        }


# ------------------------------------------------------------------- entry points


def import_openclaw(
    vault: Vault,
    *,
    state: Path | None = None,
    agent: str | None = None,
    since: date | None = None,
    dry_run: bool = False,
    consolidate: bool = True,
    note_writes: Callable[[Iterable[str]], None] | None = None,
) -> ImportReport:
    """Import an OpenClaw install's memory (see the module docstring); the report.
    ``note_writes`` is told each vault file before it is written, as for :func:`import_notes`."""
    state = state if state is not None else state_dir()
    if not state.is_dir():
        raise InvalidInputError("openclaw", "no OpenClaw state folder here", source=str(state))
    refuse_inside_vault(vault, state)
    config = load_config(state)
    report = ImportReport(dry_run=dry_run, note=note_writes, stones=load_tombstones(vault.root))
    if not dry_run:
        sweep_written_folders(vault.root)
    vault.refresh()
    starting = datetime.combine(since, time(0, tzinfo=timezone.utc)) if since else None
    done_workspaces: set[Path] = set()
    found: list[StoredSession] = []
    for place in agent_places(state, config, agent):
        found += sessions(place, report.skipped)  # malformed store rows: named, left out
        workspace = place.workspace.resolve() if place.workspace.is_dir() else None
        if workspace is None or workspace in done_workspaces:
            continue  # a workspace shared by several agents is imported once, for the first
        done_workspaces.add(workspace)
        _import_workspace(vault, place, since, report)
    import_sessions(vault, found, starting, report)
    if not dry_run and report.stones and report.files:
        # a second net before the consolidation commits what this import wrote
        reapply(vault.root, report.files, report.note)
    if consolidate and not dry_run and report.turns:
        report.consolidation = vault.consolidate().as_dict()
    if not dry_run:
        vault.refresh()
    return report


def _import_workspace(
    vault: Vault, place: AgentPlace, since: date | None, report: ImportReport
) -> None:
    facts: list[FactItem] = []
    agent = outside_name(place.agent)
    for rel in memory_files(place.workspace):
        path, origin = place.workspace / rel, f"openclaw:{outside_name(rel)}"
        user_model = rel == "USER.md"
        try:
            text = read_outside(path)
        except (OSError, InvalidInputError) as exc:
            report.skipped.append(f"{origin}: {exc}")
            continue
        items, as_facts = memory_file_items(path, text, origin, user_model=user_model, heading=None)
        facts += as_facts
        if items:
            summary = f"{outside_name(rel)} of OpenClaw agent {agent}"
            add_note_episode(vault, memory_note(path, items, origin, summary, agent), report)
    meta = {"agent": agent, "scope": OWNER}
    target = f"{SEMANTIC_DIR}/openclaw-{slugify(agent, 40)}.md"
    file_items(vault, facts, target, meta, f"OpenClaw memory of agent {agent}", report)
    for rel in daily_notes(place.workspace):
        day = daily_note_date(Path(rel).name)
        if day is None or (since is not None and day < since):
            continue
        try:
            note = dated_note(place.workspace / rel, day, f"openclaw:{outside_name(rel)}", agent)
        except (OSError, InvalidInputError) as exc:
            report.skipped.append(f"openclaw:{outside_name(rel)}: {exc}")
            continue
        add_note_episode(vault, note, report)


def import_notes(
    vault: Vault,
    folder: Path,
    *,
    since: date | None = None,
    dry_run: bool = False,
    note_writes: Callable[[Iterable[str]], None] | None = None,
) -> ImportReport:
    """Import a folder of markdown notes by the rules in the module docstring: every note is
    an episode (dated by its name, else its last change); the ``entity: value`` items of
    memory files and list-shaped notes are facts too.  ``note_writes`` is told each vault file
    before it is written (:func:`memoryclaw.share.history.journal`)."""
    folder = folder.expanduser()
    if not folder.is_dir():
        raise InvalidInputError("folder", "not a folder", source=str(folder))
    refuse_inside_vault(vault, folder)
    report = ImportReport(dry_run=dry_run, note=note_writes, stones=load_tombstones(vault.root))
    if not dry_run:
        sweep_written_folders(vault.root)
    vault.refresh()
    base = folder.resolve()
    facts: list[FactItem] = []
    vault_files = 0  # notes a vault wrote: episodes, review files, scoped fact lines
    for path in note_files(folder, vault.root):
        if printable_name(str(path)) != str(path):  # it could be neither stored nor indexed
            report.skipped.append(f"{printable_name(str(path))}: file name is not valid UTF-8")
            continue
        rel = outside_name(path.resolve().relative_to(base).as_posix())
        origin = outside_name(str(path.resolve()))
        if path.name.casefold() == REVIEW_FILE:
            vault_files += 1
            report.skipped.append(f"{origin}: a vault's review file; its lines await review")
            continue
        try:
            text, left_out = foreign_lines(read_outside(path))
            kept = kept_scope(note_frontmatter(text))
        except (OSError, InvalidInputError) as exc:
            report.skipped.append(f"{origin}: {exc}")
            continue
        vault_files += bool(left_out) or kept is not None
        if left_out:
            report.skipped.append(
                f"{origin}: {left_out} lines awaiting review or made in a scope or by an agent "
                "(an import files what it reads owner-level)"
            )
        day = daily_note_date(path.name)
        if kept is not None:  # a vault's episode: only an episode, in its own scope
            meta = note_frontmatter(text)
            day = day or note_date(meta) or timestamp_day(meta) or modified_day(path)
            note = dated_note(path, day, origin, kept[0], text=text, scope=kept[1])
            if isinstance(meta.get("summary"), str) and meta["summary"].strip():
                note = replace(note, summary=outside_name(meta["summary"]))
            if note.lines and (since is None or day >= since):
                add_note_episode(vault, note, report)
            continue
        if day is None and is_fact_note(path, text):
            user_model = path.name == "USER.md"
            items, as_facts = memory_file_items(
                path, text, origin, user_model=user_model, heading=rel
            )
            facts += as_facts
            if items:
                summary = note_title(note_frontmatter(text)) or rel
                add_note_episode(vault, memory_note(path, items, origin, summary, None), report)
            continue
        meta = note_frontmatter(text)
        day = (
            day
            or note_date(meta)
            or datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date()
        )
        if since is not None and day < since:
            continue
        note = dated_note(path, day, origin, None, text=text)
        if not note.lines and left_out:
            continue  # every line was left out (said above)
        if not note.lines and not text.strip():
            report.skipped.append(f"{origin}: empty")
            continue
        add_note_episode(vault, note, report)
    if vault_files:
        report.notices.append(
            f"{outside_name(str(folder))} looks like a memoryclaw vault's folder"
            f" ({plural(vault_files, 'file')} a vault wrote): episodes kept their scope and"
            " agent, and lines awaiting review or made in a scope were left out; bring a"
            " vault's memories over with sync"
        )
    name = outside_name(base.name)
    target = f"{SEMANTIC_DIR}/notes-{slugify(name, 40)}.md"
    file_items(vault, facts, target, {"scope": OWNER}, f"Notes imported from {name}", report)
    if not dry_run:
        vault.refresh()
    return report
