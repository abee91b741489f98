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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..consolidate.review import matching, same_value
from ..errors import InvalidInputError
from ..share.forget import reapply
from ..vault.config import CONFIG_FILE
from ..vault.episodes import Episode, dump_episode, episode_filename, parse_episode
from ..vault.facts import format_fact_line, format_provenance
from ..vault.files import (
    EPISODES_DIR,
    MAX_FILE_BYTES,
    PENDING_FILE,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    atomic_write,
    ensure_dir,
    file_lock,
    printable_name,
    read_text,
    resolve_inside,
    sweep_temp_files,
    unique_path,
)
from ..vault.frontmatter import join_frontmatter
from ..vault.inputs import label_problem
from ..vault.naming import plural, short_hash, slugify
from ..vault.pending import MANY_VALUED, append_line
from ..vault.redact import redact
from ..vault.scopes import KINDS, OWNER, SCOPE_PROBLEM, conversation_scope, valid_scope
from ..vault.tombstones import Tombstones
from ..vault.tombstones import load as load_tombstones
from ..vault.values import value_key
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
    ItemFact,
    NoteItem,
    daily_note_date,
    foreign_lines,
    item_fact,
    memory_items,
    note_date,
    note_document,
    note_frontmatter,
    note_title,
    written_by_memoryclaw,
)
from .transcripts import import_sessions

if TYPE_CHECKING:
    from ..api import Vault

NOTE_FILE_NAMES = frozenset(
    {"memory.md", "user.md", "claude.md", "agents.md", "gemini.md", "memory_summary.md"}
)
SKIPPED_FOLDERS = frozenset({".git", ".obsidian", ".trash", "node_modules", ".memoryclaw"})
_NOON = time(12, 0, tzinfo=timezone.utc)


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


# ------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class _Item:
    """A memory-file item on its way to a fact file: what it states and where it was said."""

    fact: ItemFact
    heading: str
    source: str  # <origin>:<line>
    updated: str  # YYYY-MM-DD


def _file_day(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date().isoformat()


def _items(
    path: Path, text: str, origin: str, *, user_model: bool, heading: str | None
) -> tuple[list[NoteItem], list[_Item]]:
    """A memory file's items, and each as a fact on its way to a fact file."""
    notes = memory_items(text, user_model=user_model)
    updated = _file_day(path)
    facts = [
        _Item(
            item_fact(i),
            heading or i.section or "Memory",
            f"{origin}:{i.line}",
            i.observed or updated,
        )
        for i in notes
    ]
    return notes, facts


def _read_outside(path: Path) -> str:
    """A file outside the vault, as text with every secret redacted (line numbers kept); one
    too big to be a note is refused by name.  This is where imported text enters: everything
    an import writes (episodes, facts, pending lines, file names) is made from it, or from a
    name passed through :func:`_name`."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        problem = f"{size} bytes, over the {MAX_FILE_BYTES} limit of one note"
        raise InvalidInputError("file", problem, source=str(path))
    return redact(_note_text(path.read_bytes(), path), keep_lines=True)


def _note_text(data: bytes, path: Path) -> str:
    """A note's bytes as text; a binary file (a NUL byte) or one that is not UTF-8 is
    refused by name: stored, it would be an episode the index refuses."""
    nul = data.find(b"\0")
    if nul >= 0:
        problem = f"a binary file, not a note (a NUL byte at offset {nul})"
        raise InvalidInputError("file", problem, source=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        raise InvalidInputError("file", problem, source=str(path)) from None


def _name(text: str) -> str:
    """A name from outside (a note's path, an agent id) as an import writes it: redacted,
    since it becomes a ``source``, a heading, a file name and a commit message."""
    return redact(text)


def _known(vault: Vault, fact: ItemFact) -> list[dict[str, Any]]:
    """The vault's current facts with the same entity and field (a note: the same text)."""
    if fact.is_note:
        rows = vault.index.fact_rows("field = 'note' AND superseded = 0", [])
        return [r for r in rows if same_value(r["value"], fact.value)]
    return vault.index.fact_rows(
        "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
        [fact.entity, fact.field],
    )


def _file_items(
    vault: Vault,
    items: Sequence[_Item],
    target: str,
    meta: dict[str, Any],
    title: str,
    report: ImportReport,
) -> None:
    """File the ``entity: value`` items into the fact file ``target``: new ones appended under
    their headings, known ones skipped, contradicting ones to pending."""
    with file_lock(vault.root, SEMANTIC_LOCK):  # one writer of fact files at a time
        seen: set[tuple[str, str, str]] = set()
        fresh: list[_Item] = []
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
    root: Path, target: str, meta: dict[str, Any], title: str, items: Sequence[_Item]
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


# ---------------------------------------------------------------------- episodes


@dataclass(frozen=True)
class _NoteEpisode:
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


def _add_note_episode(vault: Vault, note: _NoteEpisode, report: ImportReport) -> None:
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


def _write_new_episode(vault: Vault, note: _NoteEpisode, report: ImportReport) -> None:
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


def _dated_note(
    path: Path,
    day: date,
    origin: str,
    agent: str | None,
    *,
    text: str | None = None,
    scope: str | None = OWNER,
) -> _NoteEpisode:
    """A daily (or any dated) note as an episode of that day, at noon UTC; ``text`` is the
    note as read already (redacted, review lines left out)."""
    document = note_document(_read_outside(path) if text is None else text, _name(path.stem))
    tags = ("imported", "daily-note") if daily_note_date(path.name) else ("imported", "note")
    moment = datetime.combine(day, _NOON)
    return _NoteEpisode(origin, document.summary, document.lines, moment, agent, tags, scope)


def _memory_note(
    path: Path, items: Sequence[NoteItem], origin: str, summary: str, agent: str | None
) -> _NoteEpisode:
    """A memory file's items as one episode, dated by the file's last change."""
    moment = datetime.fromtimestamp(int(path.stat().st_mtime), timezone.utc)
    lines = tuple((i.line, i.text) for i in items)
    return _NoteEpisode(origin, summary, lines, moment, agent, ("imported", "memory-file"))


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
    _refuse_inside_vault(vault, state)
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
    facts: list[_Item] = []
    agent = _name(place.agent)
    for rel in memory_files(place.workspace):
        path, origin = place.workspace / rel, f"openclaw:{_name(rel)}"
        user_model = rel == "USER.md"
        try:
            text = _read_outside(path)
        except (OSError, InvalidInputError) as exc:
            report.skipped.append(f"{origin}: {exc}")
            continue
        items, as_facts = _items(path, text, origin, user_model=user_model, heading=None)
        facts += as_facts
        if items:
            summary = f"{_name(rel)} of OpenClaw agent {agent}"
            _add_note_episode(vault, _memory_note(path, items, origin, summary, agent), report)
    meta = {"agent": agent, "scope": OWNER}
    target = f"{SEMANTIC_DIR}/openclaw-{slugify(agent, 40)}.md"
    _file_items(vault, facts, target, meta, f"OpenClaw memory of agent {agent}", report)
    for rel in daily_notes(place.workspace):
        day = daily_note_date(Path(rel).name)
        if day is None or (since is not None and day < since):
            continue
        try:
            note = _dated_note(place.workspace / rel, day, f"openclaw:{_name(rel)}", agent)
        except (OSError, InvalidInputError) as exc:
            report.skipped.append(f"openclaw:{_name(rel)}: {exc}")
            continue
        _add_note_episode(vault, note, report)


def _refuse_inside_vault(vault: Vault, folder: Path) -> None:
    """Refuse to import a vault's own files (this vault's, or another's: a team vault, an old
    one): imported again they would lose their scope (a group's episode filed as the owner's)
    and their review state (a pending or untrusted line filed as a fact).  A folder holding a
    vault is fine: :func:`note_files` leaves the vault out."""
    inside, root = folder.resolve(), vault.root.resolve()
    for place in (inside, *inside.parents):
        if place == root or _is_vault(place):
            problem = f"inside the vault {place}; import notes from a folder outside it"
            raise InvalidInputError("folder", problem, source=str(folder))


def _is_vault(folder: Path) -> bool:
    """Whether ``folder`` is a memoryclaw vault (its configuration and fact folder)."""
    return (folder / CONFIG_FILE).is_file() and (folder / SEMANTIC_DIR).is_dir()


def note_files(folder: Path, vault_root: Path) -> list[Path]:
    """The markdown notes of ``folder`` (recursively), leaving out hidden and tool folders,
    symbolic links, and the vault (or any other) when it lies inside."""
    out: list[Path] = []
    vault = vault_root.resolve()
    stack = [folder]
    while stack:
        current = stack.pop()
        if current.resolve() == vault or _is_vault(current):
            continue
        for entry in sorted(current.iterdir()):
            if entry.is_symlink() or entry.name in SKIPPED_FOLDERS:
                continue
            if entry.is_dir():
                if not entry.name.startswith("."):
                    stack.append(entry)
            elif entry.suffix.lower() == ".md" and entry.is_file():
                out.append(entry)
    return sorted(out)


def _kept_scope(meta: dict[str, Any]) -> tuple[str | None, str] | None:
    """The agent and scope a note memoryclaw wrote keeps (None: not such a note); one whose
    scope or agent an import cannot keep is refused by name."""
    if not written_by_memoryclaw(meta):
        return None
    agent, scope, session = meta.get("agent"), meta.get("scope"), meta.get("session")
    if agent is not None and (not isinstance(agent, str) or label_problem("agent", agent)):
        problem = f"its frontmatter agent {agent!r} is not an agent id an import can keep"
        raise InvalidInputError("note", problem)  # the caller names the file
    if scope is None:  # written before scopes: the conversation it was made in says
        kind = meta.get("kind") if meta.get("kind") in KINDS else None
        scope = conversation_scope(session, kind) if isinstance(session, str) and session else OWNER
    if not isinstance(scope, str) or not valid_scope(scope):
        problem = f"its frontmatter scope {scope!r} is not one an import can keep ({SCOPE_PROBLEM})"
        raise InvalidInputError("note", problem)
    return (_name(agent) if agent else None), scope


def _timestamp_day(meta: dict[str, Any]) -> date | None:
    """The day of an episode's ``timestamp``."""
    value = meta.get("timestamp")
    if isinstance(value, datetime):
        return value.date()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date()
    except ValueError:
        return None


def _modified_day(path: Path) -> date:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date()


def is_fact_note(path: Path, text: str) -> bool:
    """A note whose items become facts: a known memory file, or one mostly made of list items."""
    if path.name.lower() in NOTE_FILE_NAMES:
        return True
    items = memory_items(text)
    bullets = sum(1 for line in text.split("\n") if line.lstrip().startswith(("- ", "* ", "+ ")))
    return bool(items) and bullets * 2 >= len(items)


def sweep_written_folders(root: Path) -> None:
    """Remove the temp files a killed import (or other writer) left where imports write.
    Every writer of ``episodes/`` and ``semantic/`` holds the logs or the semantic lock:
    holding both, no write is in flight."""
    with file_lock(root, "logs"), file_lock(root, SEMANTIC_LOCK):
        for folder in (EPISODES_DIR, SEMANTIC_DIR):
            sweep_temp_files(root / folder)


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
    _refuse_inside_vault(vault, folder)
    report = ImportReport(dry_run=dry_run, note=note_writes, stones=load_tombstones(vault.root))
    if not dry_run:
        sweep_written_folders(vault.root)
    vault.refresh()
    base = folder.resolve()
    facts: list[_Item] = []
    vault_files = 0  # notes a vault wrote: episodes, review files, scoped fact lines
    for path in note_files(folder, vault.root):
        if printable_name(str(path)) != str(path):  # it could be neither stored nor indexed
            report.skipped.append(f"{printable_name(str(path))}: file name is not valid UTF-8")
            continue
        rel = _name(path.resolve().relative_to(base).as_posix())
        origin = _name(str(path.resolve()))
        if path.name.casefold() == REVIEW_FILE:
            vault_files += 1
            report.skipped.append(f"{origin}: a vault's review file; its lines await review")
            continue
        try:
            text, left_out = foreign_lines(_read_outside(path))
            kept = _kept_scope(note_frontmatter(text))
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
            day = day or note_date(meta) or _timestamp_day(meta) or _modified_day(path)
            note = _dated_note(path, day, origin, kept[0], text=text, scope=kept[1])
            if isinstance(meta.get("summary"), str) and meta["summary"].strip():
                note = replace(note, summary=_name(meta["summary"]))
            if note.lines and (since is None or day >= since):
                _add_note_episode(vault, note, report)
            continue
        if day is None and is_fact_note(path, text):
            user_model = path.name == "USER.md"
            items, as_facts = _items(path, text, origin, user_model=user_model, heading=rel)
            facts += as_facts
            if items:
                summary = note_title(note_frontmatter(text)) or rel
                _add_note_episode(vault, _memory_note(path, items, origin, summary, None), report)
            continue
        meta = note_frontmatter(text)
        day = (
            day
            or note_date(meta)
            or datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date()
        )
        if since is not None and day < since:
            continue
        note = _dated_note(path, day, origin, None, text=text)
        if not note.lines and left_out:
            continue  # every line was left out (said above)
        if not note.lines and not text.strip():
            report.skipped.append(f"{origin}: empty")
            continue
        _add_note_episode(vault, note, report)
    if vault_files:
        report.notices.append(
            f"{_name(str(folder))} looks like a memoryclaw vault's folder"
            f" ({plural(vault_files, 'file')} a vault wrote): episodes kept their scope and"
            " agent, and lines awaiting review or made in a scope were left out; bring a"
            " vault's memories over with sync"
        )
    name = _name(base.name)
    target = f"{SEMANTIC_DIR}/notes-{slugify(name, 40)}.md"
    _file_items(vault, facts, target, {"scope": OWNER}, f"Notes imported from {name}", report)
    if not dry_run:
        vault.refresh()
    return report
