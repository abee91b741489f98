"""Consolidation: closed raw logs become episodes and facts, then move to ``logs/processed/``.

For each log, under the vault's ``logs`` lock (so no turn can be appended meanwhile):

1. summarize it into episode drafts (:mod:`memoryclaw.consolidate.summarize`);
2. write each episode; its id comes from the log id and its turn range, and an episode with
   that id already in the index is rewritten where it is, so a re-run never duplicates;
3. file its facts under the rules of SPEC 2 (:func:`_file_fact`);
4. write the log to ``logs/processed/`` marked processed.

Steps 2 to 4 are held in memory (:func:`~memoryclaw.vault.files.staged_writes`) and written
together when the log is done, each file once, their data synced at once; meanwhile the next
log is read and summarized, under the same hold of the locks.

Logs are consolidated in batches (:func:`~memoryclaw.vault.files.durable_batch`): each
folder written is synced once a batch, and only then are the batch's logs removed from
``logs/``, the step that marks them consolidated.

Every write is atomic and every step can be repeated, so a run killed at any point and
started again ends with the vault an uninterrupted run would have made: no duplicate episode
or fact, no lost log.  Processed logs older than ``logRetentionDays`` are deleted.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import LockTimeoutError, ParseError, UnsafePathError
from ..index.store import Index
from ..index.update import sync, sync_paths
from ..share.history import commit_journal, journal
from ..vault.config import Settings
from ..vault.facts import format_fact_line, format_provenance
from ..vault.files import (
    CONSOLIDATE_LOCK,
    EPISODES_DIR,
    PENDING_FILE,
    PROCESSED_DIR,
    SEMANTIC_DIR,
    SEMANTIC_LOCK,
    Skipped,
    atomic_write,
    atomic_write_all,
    durable_batch,
    file_lock,
    read_text,
    remove_files,
    resolve_inside,
    scan,
    staged_writes,
    sweep_temp_files,
)
from ..vault.ledger import LEDGER_FILE, record_pruned
from ..vault.logformat import RawLog, parse_log
from ..vault.naming import plural
from ..vault.pending import MANY_VALUED, append_line, remove_lines, untrusted_note
from ..vault.rawlogs import processed_text, redacted_log, unprocessed_log_texts
from ..vault.scopes import PARTICIPANT, conversation_scope
from ..vault.scrub import FORGOTTEN, forgotten_turn
from ..vault.timestamps import now_utc, utc_iso
from ..vault.tombstones import Tombstones
from ..vault.tombstones import load as load_tombstones
from ..vault.values import value_kind
from .episodes import add_source, episode_place, episode_text, is_plain_file, to_episode, twin_of
from .extraction import FactDraft
from .llm import summarizer_for
from .review import matching, same_value, target_file
from .skills import suggest_skills
from .standing_filing import after_filing
from .summarize import EpisodeDraft

Summarizer = Callable[[RawLog], list[EpisodeDraft]]
_TOOL_OUTPUT_ROLES = frozenset({"tool", "tool_result"})
# Logs consolidated between two syncs of the folders written: fewer syncs, and a run killed
# meanwhile redoes at most this many (their episodes and facts are found again by id).
_BATCH_LOGS = 64
Note = Callable[[Iterable[str]], None]  # told each vault path before it is written or deleted


@dataclass
class ConsolidationReport:
    """What one consolidation run did."""

    logs_read: int = 0
    episodes: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # episodes that gained a source
    facts_added: int = 0
    facts_refreshed: int = 0
    pending: int = 0
    conflicts: int = 0
    promoted: int = 0
    skills_suggested: list[str] = field(default_factory=list)
    logs_processed: list[str] = field(default_factory=list)
    logs_deleted: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # logs of sessions still going on (not ended, a turn within sessionIdleMinutes): left
    # for a later run
    left_open: list[str] = field(default_factory=list)
    forgotten: int = 0  # turns blanked and facts left out: they were forgotten
    took_ms: float = 0.0
    commit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "logs_read": self.logs_read,
            "episodes": self.episodes,
            "duplicates": self.duplicates,
            "facts_added": self.facts_added,
            "facts_refreshed": self.facts_refreshed,
            "pending": self.pending,
            "conflicts": self.conflicts,
            "promoted": self.promoted,
            "skills_suggested": self.skills_suggested,
            "logs_processed": self.logs_processed,
            "logs_deleted": self.logs_deleted,
            "skipped": [{"path": s.path, "reason": s.reason, "line": s.line} for s in self.skipped],
            "left_open": self.left_open,
            "forgotten": self.forgotten,
            "took_ms": round(self.took_ms, 1),
            "commit": self.commit,
        }

    def commit_message(self) -> str:
        """A git commit message that says what the run changed."""
        lines = [
            f"memoryclaw: consolidate {plural(self.logs_read, 'log')} into"
            f" {plural(len(self.episodes), 'episode')}",
            "",
            f"{plural(self.facts_added, 'fact')} added, {self.facts_refreshed} refreshed, "
            f"{self.promoted} promoted, {self.pending} pending, "
            f"{plural(self.conflicts, 'conflict')}, "
            f"{plural(len(self.skills_suggested), 'skill')} suggested",
            "",
        ]
        lines += [f"+ {path}" for path in self.episodes + self.skills_suggested]
        lines += [f"= {path} (said again in another log)" for path in self.duplicates]
        lines += [f"processed {path}" for path in self.logs_processed]
        lines += [f"deleted {path} (retention)" for path in self.logs_deleted]
        return "\n".join(lines)


def is_closed(log: RawLog, idle: timedelta, now: datetime) -> bool:
    """Whether a log is done: closed at session end, or silent for ``idle`` by its last turn."""
    if log.meta.get("closed"):
        return True
    return bool(log.turns) and now - log.turns[-1].timestamp >= idle


def consolidate(
    root: Path,
    settings: Settings,
    index: Index,
    *,
    all_logs: bool = False,
    now: datetime | None = None,
    summarizer: Summarizer | None = None,
    auto_commit: bool = False,
) -> ConsolidationReport:
    """Consolidate every closed log (``all_logs``: every unprocessed one); the report.

    ``auto_commit`` (a git vault): what this run wrote, and what an earlier run killed before
    its commit wrote, becomes one commit.
    """
    started = time.perf_counter()
    now = now or now_utc()
    report = ConsolidationReport()
    if summarizer is None:
        summarizer = summarizer_for(settings)
    idle = timedelta(minutes=settings.consolidation.session_idle_minutes)
    note: Note = partial(journal, root) if auto_commit else _no_note
    with file_lock(root, CONSOLIDATE_LOCK):
        _sweep(root)
        sync(root, index)
        # read once (a forget holds the same lock): nothing forgotten is written again
        forgotten = load_tombstones(root)
        closed = []
        listed = {log.path: (text, log) for text, log in unprocessed_log_texts(root)}
        for _, candidate in listed.values():
            if all_logs or is_closed(candidate, idle, now):
                closed.append(candidate.path)
            else:
                report.left_open.append(candidate.path)
        read = partial(_read_log, root, settings, summarizer, report, forgotten, listed)
        with ThreadPoolExecutor(1, thread_name_prefix="memoryclaw-sync") as syncing:
            for first in range(0, len(closed), _BATCH_LOGS):
                consolidated: dict[str, str] = {}
                with durable_batch():
                    ahead: _ReadLog | None = None
                    batch = closed[first : first + _BATCH_LOGS]
                    for n, rel in enumerate(batch):
                        with file_lock(root, "logs"), file_lock(root, SEMANTIC_LOCK):
                            got = ahead if n else read(rel)
                            touched, writes = _consolidate_log(
                                root, settings, index, got, report, now, note, forgotten
                            )
                            if got is not None:
                                consolidated[rel] = _digest(got.text)
                            written = syncing.submit(copy_context().run, atomic_write_all, writes)
                            try:  # the next log is read and summarized while these files sync
                                ahead = read(batch[n + 1]) if n + 1 < len(batch) else None
                            finally:  # on disk before the semantic lock goes
                                written.result()
                        _index_written(root, index, touched)
                _remove_consolidated(root, index, consolidated)
        if report.forgotten:  # the logs' forgotten turns were indexed: none left in its bytes
            index.forget_deleted()
        report.skills_suggested = suggest_skills(root, settings, note)
        report.logs_deleted = _expire_processed(root, settings, now, note)
        if auto_commit:  # under the lock: no other run notes files while this one commits
            report.commit = commit_journal(root, report.commit_message())
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _no_note(paths: Iterable[str]) -> None:
    """Without auto-commit nothing needs to remember what was written."""


def _fact_files(root: Path) -> list[str]:
    return [f"{SEMANTIC_DIR}/{p.name}" for p in sorted((root / SEMANTIC_DIR).glob("*.md"))]


def _index_written(root: Path, index: Index, episodes: Sequence[str]) -> None:
    """Index what consolidating one log changed, so the next log's duplicate checks see its
    facts: its episodes, the fact files and the log itself, without walking the vault."""
    if sync_paths(root, index, [*episodes, *_fact_files(root)]) is None:
        sync(root, index)


@dataclass(frozen=True)
class _ReadLog:
    """A log as consolidation read it under the logs lock, and the episodes it makes."""

    rel: str
    text: str  # what gets consolidated: the log is removed only while it still reads so
    original: RawLog
    log: RawLog  # redacted, its scope filled in, its forgotten turns blanked
    drafts: list[EpisodeDraft]


def _read_log(
    root: Path,
    settings: Settings,
    summarizer: Summarizer,
    report: ConsolidationReport,
    forgotten: Tombstones,
    listed: Mapping[str, tuple[str, RawLog]],
    rel: str,
) -> _ReadLog | None:
    """Read, redact and summarize one log, under the logs lock; None when it is processed.

    This reads nothing else of the vault, so it can run while the files of the log before
    are synced.  ``listed`` holds the logs as the run found them, text and parse: one still
    so is not parsed again.  Whatever ``forgotten`` holds is left out: its turns are blanked
    and left out of the summary, and a fact that matches it is dropped.
    """
    text = read_text(root, rel)  # re-read under the lock: this text is what gets consolidated
    known = listed.get(rel)
    original = known[1] if known is not None and known[0] == text else parse_log(text, rel)
    if original.meta.get("processed"):
        return None
    log = redacted_log(original)  # whatever privacy.redactSecrets was when it was logged
    if log.scope is None:  # logged before scopes: its session key still tells where it was
        kind = log.meta.get("kind")
        where = conversation_scope(
            log.session, str(kind) if kind else None, settings.scopes.owner_ids
        )
        log = RawLog(log.path, {**log.meta, "scope": where}, log.turns)
    report.logs_read += 1
    before = log
    log, blank = _blank_forgotten(log, forgotten)
    report.forgotten += sum(a.content != b.content for a, b in zip(before.turns, log.turns))
    drafts = _without_forgotten(summarizer(blank), blank, forgotten, report)
    return _ReadLog(rel, text, original, log, drafts)


def _consolidate_log(
    root: Path,
    settings: Settings,
    index: Index,
    read: _ReadLog | None,
    report: ConsolidationReport,
    now: datetime,
    note: Note,
    forgotten: Tombstones,
) -> tuple[list[str], list[tuple[Path, str]]]:
    """File what one read log became, under both locks: the episode files it wrote or
    deleted, and the files to write, for :func:`~memoryclaw.vault.files.atomic_write_all`.

    What the log becomes is written at once: the data of its episodes, fact files and
    processed copy synced together, each fact file written once however many facts it gets.
    The log itself stays in ``logs/`` until :func:`_remove_consolidated` removes it, once
    that is on disk.

    Episodes an earlier, killed run made from this log and this run does not make again (turns
    were appended since, so the turn ranges moved) are deleted: a turn is in one episode only.
    An episode's line, summary or fact that matches ``forgotten`` is dropped.
    """
    if read is None:
        return [], []
    rel, text, original, log, drafts = read.rel, read.text, read.original, read.log, read.drafts
    processed_rel = _processed_path(root, rel, str(log.meta.get("id", "")))
    planned: list[tuple[EpisodeDraft, tuple[str, str]]] = []
    for draft in drafts:  # two episodes of one log may share a second and a slug
        taken = {path for _, (_, path) in planned}
        planned.append((draft, episode_place(root, index, log, draft, taken)))
    episodes = [
        to_episode(log, processed_rel, draft, ident, path) for draft, (ident, path) in planned
    ]
    texts = [episode_text(episode, forgotten) for episode in episodes]
    twins = [twin_of(index, episode) for episode in episodes]
    made = {e.id for e, twin, (_, t) in zip(episodes, twins, texts) if twin is None and t}
    earlier = index.episode_rows("source = ? AND session = ?", [processed_rel, log.session])
    stale = [row["path"] for row in earlier if row["id"] not in made]
    targets = {target_file(fact.field)[0] for draft in drafts for fact in draft.facts}
    facts = sorted({*_fact_files(root), *targets, PENDING_FILE}) if targets else []
    written = [twin or place for (place, body), twin in zip(texts, twins) if twin or body]
    note([*written, *stale, *facts, processed_rel, rel])
    for path in stale:
        resolve_inside(root, path).unlink(missing_ok=True)
    with staged_writes() as staged:
        for (draft, _), (place, body), twin in zip(planned, texts, twins):
            if twin is None and body is not None:
                atomic_write(resolve_inside(root, place), body)
                report.episodes.append(place)
            elif twin is not None:  # said already, from another log: kept once, with both sources
                add_source(root, twin, processed_rel)
                report.duplicates.append(twin)
            for fact in draft.facts:
                try:
                    _file_fact(root, settings, index, fact, processed_rel, log, report, now)
                    after_filing(root, fact, now.date().isoformat())
                except (ParseError, UnsafePathError) as exc:  # a bad fact file holds back no log
                    why = f"{exc.reason}; fact {fact.entity} {fact.field} from {rel} not filed"
                    line = exc.line if isinstance(exc, ParseError) else None
                    report.skipped.append(Skipped(exc.path, why, line))
        meta = {**log.meta, "processed": True, "processed_at": utc_iso(now)}
        processed = processed_text(text, original, log, meta)
        atomic_write(resolve_inside(root, processed_rel), processed)
    report.logs_processed.append(processed_rel)
    return [*written, *stale], list(staged.items())


def _remove_consolidated(root: Path, index: Index, consolidated: dict[str, str]) -> None:
    """Remove from ``logs/`` the logs a batch consolidated, now that its episodes, facts and
    processed copies are on disk: a log's removal is what marks it consolidated, so it must
    not reach the disk before them.  A log a turn was appended to since is left for the next
    run, which consolidates it whole again (its processed copy and episodes keep their ids)."""
    if not consolidated:
        return
    with file_lock(root, "logs"):
        done = []
        for rel, digest in consolidated.items():
            try:
                text = read_text(root, rel)
            except ParseError:
                continue  # gone or unreadable: nothing to remove
            if _digest(text) == digest:
                done.append(resolve_inside(root, rel))
        remove_files(done)
    # the logs' own turns leave the index as their episodes entered it
    _index_written(root, index, list(consolidated))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _blank_forgotten(log: RawLog, forgotten: Tombstones) -> tuple[RawLog, RawLog]:
    """``log`` with each forgotten turn blanked (as forget blanks it), and the same log as
    the summarizer reads it: a blanked turn empty, so it yields no line, tag or fact."""
    if not forgotten and not any(t.content == FORGOTTEN for t in log.turns):
        return log, log
    turns = tuple(
        replace(t, content=FORGOTTEN, name=None, tool=None)
        if forgotten_turn(t.content, forgotten)
        else t
        for t in log.turns
    )
    kept = RawLog(log.path, log.meta, turns)
    empty = tuple(replace(t, content="") if t.content == FORGOTTEN else t for t in turns)
    return kept, RawLog(log.path, log.meta, empty)


def _without_forgotten(
    drafts: list[EpisodeDraft], log: RawLog, forgotten: Tombstones, report: ConsolidationReport
) -> list[EpisodeDraft]:
    """The drafts without an episode made of blanked turns only, and without a fact that was
    forgotten (``forget --fact`` tombstones the fact's line, not the turn it was said in)."""
    out = []
    for draft in drafts:
        said = log.turns[max(0, draft.first_turn - 1) : draft.last_turn]
        if said and all(not t.content for t in said):
            continue
        if forgotten:
            kept = tuple(
                f
                for f in draft.facts
                if not forgotten.line(format_fact_line(f.entity, f.field, f.value))
            )
            if len(kept) != len(draft.facts):
                report.forgotten += len(draft.facts) - len(kept)
                draft = replace(draft, facts=kept)
        out.append(draft)
    return out


def _processed_path(root: Path, rel: str, log_id: str) -> str:
    """Where the log goes in ``logs/processed/``: its own earlier copy, else a free name."""
    stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
    for counter in range(1, 10_000):
        name = f"{stem}.md" if counter == 1 else f"{stem}-{counter}.md"
        path = root / PROCESSED_DIR / name
        if not os.path.lexists(path):
            return f"{PROCESSED_DIR}/{name}"
        if is_plain_file(path) and f"id: {log_id}\n" in path.read_text("utf-8", errors="replace"):
            return f"{PROCESSED_DIR}/{name}"
    raise FileExistsError(f"{PROCESSED_DIR}/{stem}.md: no free name")


# --------------------------------------------------------------------------- facts


def _valid(fact: FactDraft) -> bool:
    """Values that claim a kind must be of that kind: an email looks like one, a date parses."""
    kind = value_kind(fact.value)
    if fact.field == "email":
        return kind == "email"
    dated = {"birthday", "deadline", "due", "appointment"}
    if fact.field in dated and re.match(r"^\d{4}-", fact.value):
        try:
            datetime.strptime(fact.value[:10], "%Y-%m-%d")
        except ValueError:
            return False
    if fact.field == "url":
        return kind == "url"
    return bool(fact.value.strip()) and "\n" not in fact.value


def _file_fact(
    root: Path,
    settings: Settings,
    index: Index,
    fact: FactDraft,
    source: str,
    log: RawLog,
    report: ConsolidationReport,
    now: datetime,
) -> None:
    """Add one fact under SPEC 2's rules: dedup, conflicts and doubts to pending, provenance."""
    rules = settings.consolidation
    updated = now.date().isoformat()
    said = log.turns[fact.turn - 1] if 0 < fact.turn <= len(log.turns) else None
    if said is not None and said.role in _TOOL_OUTPUT_ROLES:
        fact = replace(fact, confidence="low")  # a tool's output is data, not the owner's word
    provenance = format_provenance(
        source, updated, fact.confidence, agent=log.agent, scope=log.scope
    )
    earlier = [p.line for p in matching(root, fact.entity, fact.field, fact.value)]
    if said is not None and said.role == PARTICIPANT:
        if not earlier:  # only the owner's approval or own word makes it a fact
            body = format_fact_line(fact.entity, fact.field, fact.value)[2:]
            by = untrusted_note(said.name, said.sender, log.scope or log.session or log.path)
            append_line(root, PENDING_FILE, "Pending", f"- UNTRUSTED {body}{by} {provenance}")
            report.pending += 1
        return
    same_key = index.fact_rows(  # a superseded value is history: neither a duplicate nor a conflict
        "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
        [fact.entity, fact.field],
    )
    if any(same_value(row["value"], fact.value) for row in same_key):
        report.facts_refreshed += _refresh(root, same_key, fact, updated)
        return
    line = format_fact_line(fact.entity, fact.field, fact.value, provenance)
    if same_key and fact.field.lower() not in MANY_VALUED:
        was = ", ".join(sorted({str(row["value"]) for row in same_key}))
        if not earlier:
            body = format_fact_line(fact.entity, fact.field, fact.value)[2:]
            append_line(
                root, PENDING_FILE, "Pending", f"- CONFLICT {body} (was {was}) {provenance}"
            )
            report.conflicts += 1
        return
    doubtful = (rules.fact_validation and not _valid(fact)) or fact.confidence == "low"
    if earlier and all(source not in p and log.path not in p for p in earlier):
        remove_lines(root, PENDING_FILE, set(earlier))  # a second interaction corroborates
        report.promoted += 1
        doubtful = False
    elif earlier:
        return  # already waiting for review from this same interaction
    if doubtful and rules.pending_review:
        mark = "INVALID" if rules.fact_validation and not _valid(fact) else "LOW"
        append_line(root, PENDING_FILE, "Pending", f"- {mark} {line[2:]}")
        report.pending += 1
        return
    target, heading = target_file(fact.field)
    append_line(root, target, heading, line)
    report.facts_added += 1


def _refresh(root: Path, rows: Sequence[dict[str, Any]], fact: FactDraft, updated: str) -> int:
    """Bump ``updated`` on machine lines with this value (hand lines stay as they are); count."""
    bumped = 0
    for row in rows:
        if row["source"] == "hand" or not same_value(row["value"], fact.value):
            continue
        path = resolve_inside(root, row["path"])
        lines = read_text(root, row["path"]).split("\n")
        old = lines[row["line"] - 1]
        new = re.sub(r"updated: [0-9-]+", f"updated: {updated}", old, count=1)
        if new != old:
            lines[row["line"] - 1] = new
            atomic_write(path, "\n".join(lines))
        bumped += 1
    return bumped


def _sweep(root: Path) -> None:
    """Remove temp files an earlier, killed run left in the folders consolidation writes.

    Every other writer of those folders holds the logs lock (logging, forget's blanking, the
    transcript importer's ledger) or the semantic lock (facts, imported notes, forget, a sync's
    merge), or runs alone with consolidation (archive, sync): holding both, no write is in
    flight, and every temp file found is a killed process's."""
    folders = [root / SEMANTIC_DIR, root / PROCESSED_DIR, root / EPISODES_DIR]
    folders += [root / rel for rel in scan(root).folders]
    with file_lock(root, "logs"), file_lock(root, SEMANTIC_LOCK):
        for folder in dict.fromkeys(folders):
            sweep_temp_files(folder)


# --------------------------------------------------------------------------- retention


def _expire_processed(root: Path, settings: Settings, now: datetime, note: Note) -> list[str]:
    """Delete processed logs older than ``logRetentionDays`` (by their last modification)."""
    keep = settings.consolidation.log_retention_days
    folder = root / PROCESSED_DIR
    if keep <= 0 or not folder.is_dir():
        return []
    cutoff = (now - timedelta(days=keep)).timestamp()
    expired = [
        f"{PROCESSED_DIR}/{path.name}"
        for path in sorted(folder.glob("*.md"))
        # not a log memoryclaw wrote (a folder, a link): never deleted
        if is_plain_file(path) and path.stat().st_mtime < cutoff
    ]
    if not expired:
        return []
    # an OpenClaw import must still know these turns were logged once their logs are gone;
    # while the ledger cannot be written (an import holds it, or it is broken) they are kept
    note([LEDGER_FILE])
    try:
        record_pruned(root, _readable_logs(root, expired))
    except (LockTimeoutError, ParseError):
        return []
    for rel in expired:
        note([rel])
        (root / rel).unlink()
    return expired


def _readable_logs(root: Path, paths: Iterable[str]) -> Iterator[RawLog]:
    for rel in paths:
        try:
            yield parse_log(read_text(root, rel), rel)
        except ParseError:
            continue  # a log that does not parse names no turns to remember
