"""Consolidation: closed raw logs become episodes and facts, then move to ``logs/processed/``.

For each log, under the vault's ``logs`` lock (so no turn can be appended meanwhile):

1. summarize it into episode drafts (:mod:`memoryclaw.consolidate.summarize`);
2. write each episode; its id comes from the log id and its turn range, and an episode with
   that id already in the index is rewritten where it is, so a re-run never duplicates;
3. file its facts under the rules of SPEC 2 (:func:`.filing.file_fact`);
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
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

from ..errors import LockTimeoutError, ParseError, UnsafePathError
from ..index.store import Index
from ..index.update import sync, sync_paths
from ..share.history import commit_journal, journal
from ..vault.config import Settings
from ..vault.facts import format_fact_line
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
    staged_writes,
    sweep_temp_files,
)
from ..vault.ledger import LEDGER_FILE, record_pruned
from ..vault.logformat import RawLog, parse_log
from ..vault.rawlogs import processed_text, redacted_log, unprocessed_log_texts
from ..vault.scanning import scan
from ..vault.scopes import conversation_scope
from ..vault.scrub import FORGOTTEN, forgotten_turn
from ..vault.timestamps import now_utc, utc_iso
from ..vault.tombstones import Tombstones
from ..vault.tombstones import load as load_tombstones
from .episodes import add_source, episode_place, episode_text, is_plain_file, to_episode, twin_of
from .filing import file_fact
from .llm import summarizer_for
from .report import ConsolidationReport
from .review import target_file
from .skills import suggest_skills
from .standing_filing import after_filing
from .summarize import EpisodeDraft

Summarizer = Callable[[RawLog], list[EpisodeDraft]]
# Logs consolidated between two syncs of the folders written: fewer syncs, and a run killed
# meanwhile redoes at most this many (their episodes and facts are found again by id).
_BATCH_LOGS = 64
Note = Callable[[Iterable[str]], None]  # told each vault path before it is written or deleted


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
                    file_fact(root, settings, index, fact, processed_rel, log, report, now)
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
