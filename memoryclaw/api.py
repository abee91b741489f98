"""``memoryclaw.Vault``: the one API the CLI, the servers and the plugins are layers over."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from . import __version__
from .consolidate.archive import ArchiveReport
from .errors import (
    EmbeddingError,
    ExternalToolError,
    InvalidInputError,
    MemoryclawError,
    NotFoundError,
    ReadOnlyVaultError,
)
from .index.embeddings import Embedder, embedder_for, embedder_name
from .index.store import Index
from .index.update import Progress, SyncReport, index_logged_turn, is_stale, sync, sync_paths
from .index.vectors import QueryMemo, VectorHit, nearest, nearest_passages, update_vectors
from .recall import metrics as recall_metrics
from .recall.explain import withheld_from
from .recall.recency import effective_weight
from .recall.results import SearchResult
from .recall.retrieval import VectorFallback, passage_neighbours, search
from .recall.usage import load_recalls, recalled_ids
from .share.history import (
    Commit,
    commit_changes,
    commit_journal,
    file_history,
    first_commit,
    is_repository,
    journal,
    snapshot,
    value_commits,
)
from .share.teams import (
    TeamVault,
    holder_of,
    merge,
    owner_of,
    qualify,
    readable,
    refuse,
    team_neighbours,
    team_vaults,
)
from .vault.config import (
    CONFIG_FILE,
    Settings,
    default_config_yaml,
    resolve_vault_path,
)
from .vault.configfile import load_settings
from .vault.episodes import episode_handle, is_episode_handle
from .vault.facts import format_provenance
from .vault.files import (
    ARCHIVE_DIR,
    CONSOLIDATE_LOCK,
    SEMANTIC_LOCK,
    STATE_DIR,
    VAULT_FOLDERS,
    Skipped,
    atomic_write,
    disk_usage,
    ensure_dir,
    file_lock,
    owner_only_umask,
    read_text,
    require_vault,
    resolve_inside,
    safe_relpath,
    scan,
)
from .vault.naming import plural
from .vault.newturns import NewTurn, validate_turn
from .vault.rawlogs import (
    LoggedTurn,
    append_turns,
    close_session,
    held_back_logs,
    is_open_log,
    unprocessed_logs,
)
from .vault.scopes import OWNER, Policy, RecallContext
from .vault.timestamps import now_utc, parse_timestamp, utc_iso

if TYPE_CHECKING:
    from .consolidate.pipeline import ConsolidationReport
    from .consolidate.supersede import SupersedeReport
    from .importers.workspace import ImportReport
    from .recall.payload import RetrievePayload
    from .share.sync import RemoteSyncReport
    from .vault.pending import PendingFact
    from .vault.skillfiles import SkillInfo

_log = logging.getLogger("memoryclaw.vectors")
_NEIGHBOURS_OF = 20  # the best passages whose neighbouring lines may come along

INDEX_FILE = "index.db"
READ_ONLY_NOTE = (
    "the vault cannot be written: each command keeps the index in memory, brought up to date "
    "from the files; reading works, logging and consolidation need write access"
)
READ_DEFAULT_LINES = 200
GITIGNORE = ".memoryclaw/\n"
_FORGET_WAIT_SECONDS = 120.0  # a consolidation or sync under way finishes first


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget`` removed (or would remove, on a dry run)."""

    episodes: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    files_deleted: tuple[str, ...] = ()
    files_edited: tuple[str, ...] = ()
    dry_run: bool = False
    commit: str | None = None
    in_history: bool = False  # the vault is a git repository: older commits still hold it
    changes: tuple[dict[str, Any], ...] = ()  # file by file: lines, turns and facts that go
    removed: int = 0  # whole episodes, lines, turns and facts
    turns: int = 0  # log turns blanked (raw logs not yet consolidated included)
    tombstones: str | None = None  # the file keeping what was forgotten forgotten

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "episodes": list(self.episodes),
            "facts": list(self.facts),
            "files_deleted": list(self.files_deleted),
            "files_edited": list(self.files_edited),
            "dry_run": self.dry_run,
            "commit": self.commit,
            "in_history": self.in_history,
            "changes": list(self.changes),
            "removed": self.removed,
            "turns": self.turns,
            "tombstones": self.tombstones,
        }


@dataclass(frozen=True)
class IngestReport:
    """What ``ingest`` wrote: turns, and the logs they went to (now closed)."""

    turns: int
    logs: tuple[str, ...]
    sessions: tuple[str, ...] = field(default=())
    known_turns: int = 0  # turns of the file an earlier (killed or whole) run had written
    forgotten: int = 0  # turns written blanked: they were forgotten

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "turns": self.turns,
            "logs": list(self.logs),
            "sessions": list(self.sessions),
            "known_turns": self.known_turns,
            "forgotten": self.forgotten,
        }


def _writable(path: Path) -> bool:
    """Whether ``path`` (and the folder holding it) can be written or created."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    return _writable(path.parent) if path.parent != path else False


class Vault:
    """A memory vault on disk and its index.

    Open one with ``Vault(path)`` (or :meth:`Vault.open`, which honours ``MEMORYCLAW_VAULT``),
    create one with :meth:`Vault.init`.  Use as a context manager to close the index.

    With ``retrieval.fallback: vector`` the embedder ``embeddings`` names is built the first
    time something needs embedding and kept, so a long-lived process loads its model once;
    ``embedder`` supplies one instead (its ``name`` keys the cached vectors).
    """

    def __init__(
        self,
        path: str | Path,
        settings: Settings | None = None,
        *,
        env: Mapping[str, str] | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.root = require_vault(Path(path).expanduser())
        self.settings = settings if settings is not None else load_settings(self.root, env)
        self._index: Index | None = None
        self._embedder = embedder
        self._own_embedder = embedder is None  # built here, so closed here
        self._queries = QueryMemo()  # a search embeds its query once, for episodes and lines
        self._vectors_checked = False  # whether this instance has brought the vectors up to date
        # Episode id -> the day this instance last noted it recalled: a long-lived process
        # writes the recall log at most once a day per episode.
        self._noted: dict[str, str] = {}
        self._teams: list[TeamVault] | None = None
        self.init_commit: str | None = None  # the first commit ``init(git=True)`` made

    @classmethod
    def open(cls, path: str | Path | None = None, *, env: Mapping[str, str] | None = None) -> Vault:
        """Open the vault at ``path``, else ``$MEMORYCLAW_VAULT``, else the default location."""
        return cls(resolve_vault_path(path, env), env=env)

    @classmethod
    def init(
        cls, path: str | Path, *, git: bool = False, env: Mapping[str, str] | None = None
    ) -> Vault:
        """Create a vault: folders, default config and .gitignore; existing files are kept."""
        root = Path(path).expanduser()
        if root.exists() and not root.is_dir():
            raise InvalidInputError("path", f"{root} exists and is not a folder")
        ensure_dir(root)
        for folder in VAULT_FOLDERS:
            ensure_dir(root / folder)
        if not (root / CONFIG_FILE).exists():
            atomic_write(root / CONFIG_FILE, default_config_yaml())
        gitignore = root / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, GITIGNORE)
        elif ".memoryclaw/" not in gitignore.read_text(encoding="utf-8").split():
            atomic_write(
                gitignore, gitignore.read_text(encoding="utf-8").rstrip("\n") + "\n" + GITIGNORE
            )
        from .share.sync import has_remote
        from .share.sync import setup as setup_remote
        from .vault.device import device_id

        setup_remote(root)  # union merges for fact files, should the vault ever sync
        if git and not (root / ".git").exists():
            if shutil.which("git") is None:
                raise InvalidInputError("--git", "git is not installed")
            # git's own files are private too, whatever the umask
            subprocess.run(
                ["git", "init", "-q", str(root)], check=True, preexec_fn=owner_only_umask
            )
        vault = cls(root, env=env)
        if has_remote(root):  # a clone of a synced vault: its logs carry this device's id
            device_id(root, vault.settings)
        if git:  # a repository with nothing in it would leave every file untracked
            vault.init_commit = first_commit(root)
        return vault

    # ----------------------------------------------------------------- lifecycle

    @property
    def index(self) -> Index:
        """The vault's index, opened on first use.

        In a vault that cannot be written (a read-only mount or permissions) the index is kept
        in memory, starting from the saved one, so reading works and nothing is written.
        """
        if self._index is None:
            path = self.root / STATE_DIR / INDEX_FILE
            self._index = Index(path) if _writable(path) else Index(None, seed=path)
        return self._index

    @property
    def teams(self) -> list[TeamVault]:
        """The team vaults ``sharedVaults`` lists: searched after this one, never written
        (:mod:`memoryclaw.share.teams`)."""
        if self._teams is None:
            writable = _writable(self.root / STATE_DIR / "shared" / INDEX_FILE)
            self._teams = team_vaults(self.root, self.settings.shared_vaults, writable)
        return self._teams

    def close(self) -> None:
        """Close the index connection (and an Ollama embedder's HTTP connection)."""
        if self._index is not None:
            self._index.close()
            self._index = None
        for team in self._teams or ():
            team.close()
        close = getattr(self._embedder, "close", None)
        if self._own_embedder and callable(close):
            close()  # a loaded sentence-transformers model has nothing to close: it stays

    def __enter__(self) -> Vault:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------- index

    def reindex(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        embed_progress: Progress | None = None,
    ) -> SyncReport:
        """Bring the index up to date; ``full`` deletes it and rebuilds from the files.

        With the vector fallback on, episodes without a current vector are embedded after
        (``embed_progress`` sees that); if the embedder fails the report says why and the
        keyword index is up to date all the same.
        """
        if full:
            self.close()
            state = self.root / STATE_DIR
            for name in (INDEX_FILE, INDEX_FILE + "-wal", INDEX_FILE + "-shm"):
                (state / name).unlink(missing_ok=True)
        report = sync(self.root, self.index, full=full, progress=progress)
        self._update_vectors(report, embed_progress)
        for team in self.teams:  # their indexes are derived too, and kept here
            if team.problem() is None:
                team.refresh(full=full)
        return report

    def reindex_paths(self, paths: Iterable[str]) -> SyncReport:
        """Sync just these vault-relative files (a watcher's changes); a full :meth:`reindex`
        when that cannot be trusted (a folder appeared, vanished or was renamed)."""
        report = None if self.index.rebuilt else sync_paths(self.root, self.index, paths)
        if report is None:
            self.index.rebuilt = False
            report = sync(self.root, self.index)
        self._update_vectors(report)
        return report

    def refresh(self) -> SyncReport | None:
        """Sync when the vault (or a team vault) changed since the last sync; the own vault's
        report, None when it was current."""
        report = None
        if self.index.rebuilt or is_stale(self.root, self.index):
            self.index.rebuilt = False
            report = sync(self.root, self.index)
        if report is not None or not self._vectors_checked:
            self._update_vectors(report)
        for team in self.teams:  # their indexes follow their files as this one's does
            if team.problem() is None:
                team.refresh()
        return report

    def _update_vectors(self, report: SyncReport | None, progress: Progress | None = None) -> None:
        """Embed what the last sync left without a vector (vector fallback only)."""
        if self.settings.retrieval.fallback != "vector":
            return
        self._vectors_checked = True
        name = self._embedder.name if self._embedder is not None else embedder_name(self.settings)
        try:
            embedded = update_vectors(self.index, name, self._get_embedder, progress)
        except EmbeddingError as exc:
            _log.warning("episode vectors not updated (keyword search unaffected): %s", exc)
            if report is not None:
                report.vector_error = str(exc)
            return
        if report is not None:
            report.embedded = embedded

    def _get_embedder(self) -> Embedder:
        """The vector fallback's embedder, built on first use and kept with its model loaded."""
        if self._embedder is None:
            self._embedder = embedder_for(self.settings)
        return self._embedder

    def _nearest(self, query: str, limit: int, also: Sequence[str]) -> list[VectorHit]:
        return nearest(self.index, self._get_embedder(), query, limit, also, self._queries)

    def _nearest_lines(self, query: str, limit: int, also: Sequence[int]) -> list[VectorHit]:
        return nearest_passages(self.index, self._get_embedder(), query, limit, also, self._queries)

    # --------------------------------------------------------------- retrieval

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        now: datetime | None = None,
        refresh: bool = True,
        context: RecallContext | None = None,
        explain_scope: bool = False,
        include_archived: bool = False,
    ) -> SearchResult:
        """Ranked, explained episodes and facts for ``query`` that ``context`` (who asks,
        from where; None: the owner at the terminal) may see; ``explain_scope`` also lists
        what the recall rules withheld, and why; ``include_archived`` also searches the
        episodes in ``episodes/archive/``."""
        if refresh:
            self.refresh()
        policy = self.policy(context)
        archived = include_archived
        result = self._search(
            query, limit=limit, now=now, vectors=True, policy=policy, archived=archived
        )
        result = self._with_teams(result, query, limit, now, policy, archived)
        if explain_scope:
            everything = self._search(
                query, limit=limit, now=now, vectors=True, policy=None, archived=archived
            )
            everything = self._with_teams(everything, query, limit, now, None, archived)
            result = dataclasses.replace(result, withheld=withheld_from(everything, policy))
        return result

    def _with_teams(
        self,
        own: SearchResult,
        query: str,
        limit: int | None,
        now: datetime | None,
        policy: Policy | None,
        archived: bool,
    ) -> SearchResult:
        """``own`` with the team vaults' results for ``query`` merged in (after it on ties)."""
        if not self.settings.shared_vaults:
            return own
        limit = self.settings.retrieval.max_results if limit is None else limit
        theirs = [
            team.search(
                query,
                limit=limit,
                now=now or now_utc(),
                policy=policy,
                archived=archived,
                recency=self.settings.retrieval.recency,
            )
            for team in readable(self.teams)
        ]
        return merge(own, theirs, limit)

    def policy(self, context: RecallContext | None = None) -> Policy:
        """The recall rules of this vault for a request from ``context``."""
        scopes = self.settings.scopes
        return Policy(context or RecallContext(), scopes.share_across_agents, scopes.owner_ids)

    def _search(
        self,
        query: str,
        *,
        limit: int | None,
        now: datetime | None,
        vectors: bool,
        policy: Policy | None = None,
        archived: bool = True,
    ) -> SearchResult:
        limit = self.settings.retrieval.max_results if limit is None else limit
        if limit < 0:
            raise InvalidInputError("limit", f"must be >= 0, got {limit}")
        settings = self.settings.retrieval
        fallback = None
        if vectors and settings.fallback == "vector":
            fallback = VectorFallback(
                self._nearest,
                settings.min_primary_results,
                settings.blend_strategy,
                lines=self._nearest_lines,
            )
        recalled: dict[str, datetime] = {}
        if effective_weight(settings.recency.weight, query) > 0:
            recalls = load_recalls(self.root)  # use reinforces: read only when recency ranks
            recalled = recalls.last if recalls is not None else {}
        return search(
            self.index,
            query,
            limit=limit,
            now=now or now_utc(),
            fallback=fallback,
            policy=policy,
            include_archived=archived,
            recency=settings.recency,
            recalled=recalled,
        )

    def retrieve(
        self,
        query: str,
        *,
        now: datetime | None = None,
        refresh: bool = True,
        context: RecallContext | None = None,
        working: Mapping[str, Any] | None = None,
    ) -> RetrievePayload:
        """The hook payload: a ``<memoryclaw>`` block within ``budgetTokens`` and working
        memory, of what ``context`` (None: the owner at the terminal) may see.  Archived
        episodes are left out; those in the block are noted as recalled (see :meth:`archive`).
        A trivial message (greetings, thanks, fillers, emoji: :mod:`memoryclaw.recall.trivial`)
        recalls nothing and runs no search: its payload is empty, ``skipped: "trivial"``.
        ``working`` is the live session's working memory: its active skill's steps lead the
        block (:mod:`memoryclaw.recall.working` keeps it).  A ``context`` that names its session is
        a host that sends the session's turns as history: those of its open log are not quoted."""
        from .recall.payload import render_payload
        from .recall.trivial import is_trivial

        budget = self.settings.retrieval.budget_tokens
        if is_trivial(query):
            skipped = _skipped(query, budget, "trivial")
            self._record(skipped, now or now_utc())
            return skipped
        result = self.search(query, now=now, refresh=refresh, context=context)
        if context is not None and context.session:
            result = _without_live_turns(self.root, result, context.session)
        from .consolidate.skills import active_skill

        skill = active_skill(self.root, result.plan.keywords)
        top = result.passages[:_NEIGHBOURS_OF]
        near = passage_neighbours(self.index, [p for p in top if p.vault is None])
        near.update(team_neighbours(self.teams, [p for p in top if p.vault is not None]))
        shown = {e.id for e in result.results}
        shown |= {p.episode_id for p in result.passages if p.via != "log"}
        handles = {i: h for i in shown if (h := episode_handle(i)) is not None}
        owners = _handle_owners(self.index, set(handles.values()))
        names = {i: h for i, h in handles.items() if owners.get(h) == i}
        min_score = self.settings.retrieval.min_score
        payload = render_payload(
            result, budget, skill, near, names, min_score=min_score, working=working
        )
        self._record(payload, now or now_utc())
        return payload

    def _record(self, payload: RetrievePayload, now: datetime) -> None:
        """Count the retrieve in the recall metrics (:mod:`memoryclaw.recall.metrics`) and note the
        episodes ``payload`` put before the model as recalled
        (:mod:`memoryclaw.consolidate.archive`),
        each once a day per process; one lock for both, never failing the recall."""
        if not _writable(self.root / recall_metrics.METRICS_FILE):
            return  # a vault that cannot be written
        # a team vault's memories are its own business: nothing of theirs is noted here
        quoted = (p.episode_id for p in payload.passages if p.via != "log" and p.vault is None)
        idents = recalled_ids((e.id for e in payload.episodes if e.vault is None), quoted)
        day = now.date().isoformat()
        fresh = [i for i in idents if self._noted.get(i, "") < day]
        counts = None
        if self.settings.metrics.keep_days > 0:
            stood_for = self.index.source_chars(idents) if idents else {}
            counts = recall_metrics.recall_counts(
                payload, stood_for, self.settings.retrieval.min_score
            )
        if recall_metrics.record(self.root, now, self.settings.metrics.keep_days, counts, fresh):
            self._noted.update((i, day) for i in fresh)

    def get(self, ident: str, *, context: RecallContext | None = None) -> dict[str, Any]:
        """An episode (with details) or a fact by id, if ``context`` may see it (to a
        requester who may not, it does not exist).  An episode may also be named by the short
        handle recall shows for it (``ep-d6b27f26``); a team vault's, by its qualified id
        (``team:ep-…``)."""
        policy = self.policy(context)
        found_in = owner_of(ident, self.teams)
        if found_in is not None:
            team, rest = found_in
            if team.problem() is not None:
                raise NotFoundError("memory", ident)
            team.refresh()
            memory = _lookup(team.index, rest, policy)
            if memory is None:
                raise NotFoundError("memory", ident)
            for key in ("id", "path", "source"):
                if memory.get(key):
                    memory[key] = qualify(team.name, memory[key])
            return {"vault": team.name, **memory}
        self.refresh()
        memory = _lookup(self.index, ident, policy)
        if memory is None:
            raise NotFoundError("memory", ident)
        return memory

    def read(
        self,
        path: str,
        start: int = 1,
        lines: int | None = None,
        *,
        context: RecallContext | None = None,
    ) -> dict[str, Any]:
        """Lines ``start``.. of a vault file (``lines`` of them, default up to 200), with paging.

        A requester other than the owner at the terminal reads only files whose every
        indexed memory it may see (to it, other files do not exist).  A team vault's file is
        named by its qualified path (``team:episodes/….md``)."""
        if start < 1 or (lines is not None and lines < 1):
            raise InvalidInputError("from" if start < 1 else "lines", "must be 1 or more")
        root, shown, rel, index = self.root, None, path, None
        found_in = owner_of(path, self.teams)
        if found_in is not None:
            team, rel = found_in
            if team.problem() is not None:
                raise NotFoundError("vault file", path)
            root, shown = team.root, team.name
        if not resolve_inside(root, rel).is_file():
            raise NotFoundError("vault file", path)
        if context is not None and not context.is_terminal:
            if found_in is not None:
                found_in[0].refresh()
                index = found_in[0].index
            else:
                self.refresh()
                index = self.index
            marks = index.memory_marks(safe_relpath(rel))
            policy = self.policy(context)
            if not marks or not all(policy.admit(a, s)[0] for a, s in marks):
                raise NotFoundError("vault file", path)
        text = read_text(root, rel)
        all_lines = text.splitlines()
        count = READ_DEFAULT_LINES if lines is None else lines
        chosen = all_lines[start - 1 : start - 1 + count]
        end = start - 1 + len(chosen)
        result: dict[str, Any] = {
            "path": safe_relpath(rel) if shown is None else qualify(shown, safe_relpath(rel)),
            "text": "\n".join(chosen),
            "from": start,
            "lines": len(chosen),
            "total_lines": len(all_lines),
            "truncated": end < len(all_lines),
        }
        if end < len(all_lines):
            result["next_from"] = end + 1
        return result

    def consolidate(
        self, *, all_logs: bool = False, now: datetime | None = None
    ) -> ConsolidationReport:
        """Turn closed raw logs (``all_logs``: every unprocessed one) into episodes and facts.

        With ``git.autoCommit`` in a git vault, what the run changed becomes one commit.
        """
        use_git = self.settings.git.auto_commit and is_repository(self.root)
        from .consolidate.pipeline import consolidate

        self._finish_interrupted_forget()
        report = consolidate(
            self.root, self.settings, self.index, all_logs=all_logs, now=now, auto_commit=use_git
        )
        self._update_vectors(None)
        return report

    def archive(self, *, dry_run: bool = False, now: datetime | None = None) -> ArchiveReport:
        """Move episodes unused for ``consolidation.archiveAfterDays`` days (not recalled, not
        edited, not dated within them; 0, the default, moves none) to ``episodes/archive/YYYY/``,
        out of automatic recall but searchable with ``include_archived``; ``dry_run`` only
        reports.  With ``git.autoCommit`` in a git vault the run is one commit."""
        use_git = not dry_run and self.settings.git.auto_commit and is_repository(self.root)
        from .consolidate.archive import run_archive

        report = run_archive(
            self.root,
            self.settings,
            self.index,
            now=now or now_utc(),
            dry_run=dry_run,
            auto_commit=use_git,
        )
        if report.moved and not dry_run:
            moved = recall_metrics.DayCounts(archived=len(report.moved))
            recall_metrics.record(
                self.root, now or now_utc(), self.settings.metrics.keep_days, moved
            )
        self._update_vectors(None)
        return report

    def restore(self, ident: str, *, now: datetime | None = None) -> ArchiveReport:
        """Move the archived episode ``ident`` back into recall (counted as recalled now, so
        it stays for another ``archiveAfterDays``); nothing to do when it is not archived."""
        refuse(self.teams, "archive --restore", ident)
        use_git = self.settings.git.auto_commit and is_repository(self.root)
        from .consolidate.archive import run_restore

        report = run_restore(
            self.root, self.settings, self.index, ident, now=now or now_utc(), auto_commit=use_git
        )
        self._noted.pop(ident, None)
        self._update_vectors(None)
        return report

    def history(self, path: str) -> list[Commit]:
        """The git commits that changed a vault file (a team vault's too), newest first."""
        found_in = owner_of(path, self.teams)
        root, rel = (found_in[0].root, found_in[1]) if found_in else (self.root, path)
        resolve_inside(root, rel)
        return file_history(root, rel)

    def pending(self) -> list[PendingFact]:
        """Facts waiting for review in ``semantic/_pending.md``."""
        from .vault.pending import pending_facts

        return pending_facts(self.root)

    def approve_pending(self, ident: str, *, now: datetime | None = None) -> PendingFact:
        """Accept a pending fact: into its semantic file.  A conflict supersedes the old value,
        which stays in its file marked (dated ``now``, default: the current time)."""
        refuse(self.teams, "pending approve", ident)
        from .consolidate.review import approve

        with file_lock(self.root, SEMANTIC_LOCK):  # the lines it marks stay where they were
            self.refresh()
            entry = next((p for p in self.pending() if p.id == ident), None)
            known: list[dict[str, Any]] = []
            if entry is not None and entry.mark == "CONFLICT":
                known = self._current_facts(entry.entity, entry.field)
            message = f"memoryclaw: approve {entry.entity} {entry.field}" if entry else ""
            with self._committing(message):
                done = approve(self.root, ident, known, _day(now))
        self.refresh()
        return done

    def _current_facts(self, entity: str, field: str) -> list[dict[str, Any]]:
        """Index rows of the current (not superseded) values of ``entity``'s ``field``."""
        return self.index.fact_rows(
            "lower(entity) = lower(?) AND lower(field) = lower(?) AND superseded = 0",
            [entity, field],
        )

    @contextmanager
    def _committing(self, message: str) -> Iterator[None]:
        """With ``git.autoCommit`` in a git vault, commit the memory files the block changed."""
        use_git = self.settings.git.auto_commit and is_repository(self.root)
        before = snapshot(self.root) if use_git else {}
        yield
        if use_git:
            commit_changes(self.root, before, message)

    def set_fact(
        self, entity: str, field: str, value: str, *, now: datetime | None = None
    ) -> SupersedeReport:
        """State ``entity``'s ``field`` as ``value``; its current values stay in their files,
        marked superseded by it on ``now``'s date (never deleted).  Setting the current value
        again writes nothing."""
        from .consolidate.review import replace_value
        from .consolidate.supersede import check_fact

        entity, field, value = check_fact(entity, field, value)
        if self.settings.privacy.redact_secrets:  # the same redactor every other writer passes
            from .vault.redact import redact

            entity, field, value = redact(entity), field, redact(f"{field}: {value}")
            value = value.partition(": ")[2]
        day = _day(now)
        with file_lock(self.root, SEMANTIC_LOCK):  # the lines it marks stay where they were
            self.refresh()
            known = self._current_facts(entity, field)
            first = known[0] if known else {}
            provenance = format_provenance(
                "user", day, "high", agent=first.get("agent"), scope=first.get("scope")
            )
            paths = [str(row["path"]) for row in known]
            with self._committing(f"memoryclaw: set {entity} {field}"):
                report = replace_value(self.root, paths, entity, field, value, provenance, day)
        self.refresh()
        return report

    def fact_history(
        self, entity: str, field: str | None = None, *, context: RecallContext | None = None
    ) -> dict[str, Any]:
        """Every value ``entity``'s ``field`` (every field, without one) has had, superseded
        ones first, with the git commits that changed those lines (a git vault)."""
        if not entity.strip():
            raise InvalidInputError("entity", "must not be empty")
        self.refresh()
        policy = self.policy(context)
        where, params = "lower(entity) = lower(?)", [entity.strip()]
        if field is not None and field.strip():
            where, params = f"{where} AND lower(field) = lower(?)", [*params, field.strip()]
        rows = [
            r
            for r in self.index.fact_rows(where, params)
            if policy.admit(r["agent"], r["scope"])[0]
        ]
        if not rows:
            raise NotFoundError("fact", f"{entity} {field or ''}".strip())
        from .consolidate.supersede import fact_chain

        chain = fact_chain(rows)
        git = is_repository(self.root)
        commits = (
            value_commits(self.root, sorted({c.path for c in chain}), [c.value for c in chain])
            if git
            else []
        )
        return {
            "entity": chain[0].entity,
            "field": field.strip().lower() if field else None,
            "chain": [c.as_dict() for c in chain],
            "git": git,
            "commits": [c.as_dict() for c in commits],
        }

    def reject_pending(self, ident: str) -> PendingFact:
        """Drop a pending fact."""
        refuse(self.teams, "pending reject", ident)
        from .consolidate.review import reject

        with file_lock(self.root, SEMANTIC_LOCK):
            return reject(self.root, ident)

    def sync_remote(self, *, setup: bool = False) -> RemoteSyncReport:
        """Sync the vault's git repository with ``sync.remote`` (commit, fetch, merge, push)
        and re-index the files the merge brought; ``setup`` first writes .gitattributes.

        Team vaults (``sharedVaults``) are pulled first, fast-forward only; one that cannot be
        pulled says why in ``shared`` and stops nothing.  A vault that is not a git repository
        but lists team vaults only pulls them (``remote`` is empty)."""
        from .share.sync import RemoteSyncReport, sync_remote
        from .share.sync import setup as setup_remote

        seconds = self.settings.sync.timeout_seconds
        shared = [team.pull(seconds).as_dict() for team in self.teams]
        if not is_repository(self.root):
            if shared:
                return RemoteSyncReport(remote="", shared=shared)
            raise ExternalToolError("git", f"{self.root} is not a git repository (git init)")
        if setup:
            setup_remote(self.root)
        self._finish_interrupted_forget()
        report = sync_remote(self.root, self.settings)
        report.shared = shared
        memory = [p for p in report.files_changed if p.endswith(".md")]
        if memory:
            self.reindex_paths(memory)
        if any(p.startswith("semantic/_forgotten/") for p in report.files_changed):
            self.refresh()  # a forget from elsewhere may have scrubbed raw logs too
            self.index.forget_deleted()
        from .share.purge import collect_owed

        collect_owed(self.root)  # a purge that followed another device's drops old objects
        return report

    def accept_config(self) -> list[str]:
        """Accept the ``memoryclaw.yaml`` keys a sync held: the values the file holds apply
        from the next load; the keys accepted."""
        from .vault.configfile import accept_held

        return accept_held(self.root)

    def export_archive(self, target: str | Path) -> int:
        """Write the vault's memory files to a ``.tar.gz``; how many files it holds."""
        from .share.transfer import export_archive

        return export_archive(self.root, Path(target))

    def import_archive(self, source: str | Path) -> RemoteSyncReport:
        """Merge an exported ``.tar.gz`` into this git vault by the rules of a sync."""
        if not is_repository(self.root):
            raise ExternalToolError("git", f"{self.root} is not a git repository (git init)")
        from .share.transfer import import_archive

        report = import_archive(self.root, Path(source))
        memory = [p for p in report.files_changed if p.endswith(".md")]
        if memory:
            self.reindex_paths(memory)
        return report

    # ----------------------------------------------------------------- logging

    def log_turn(
        self,
        session: str,
        role: str,
        text: str,
        *,
        name: str | None = None,
        channel: str | None = None,
        timestamp: datetime | str | None = None,
        tool: str | None = None,
        agent: str | None = None,
        kind: str | None = None,
        sender: str | None = None,
    ) -> LoggedTurn:
        """Append one turn to the session's raw log (secrets redacted when configured).

        ``kind`` (direct, group, thread, cron) is read from an OpenClaw session key when not
        given; ``sender`` is who wrote a user turn, which decides whether it is the owner's
        (see ``scopes.ownerIds``)."""
        moment = _as_timestamp(timestamp, "timestamp")
        turn = NewTurn(
            session,
            role,
            text,
            moment,
            name=name,
            channel=channel,
            tool=tool,
            agent=agent,
            kind=kind,
            sender=sender,
        )
        logged = append_turns(self.root, self.settings, [turn])[0]
        try:
            if index_logged_turn(self.root, self.index, logged) is None:
                self.reindex_paths([logged.path])
        except (MemoryclawError, sqlite3.Error, OSError) as exc:
            _log.warning("logged turn not indexed yet (the next sync will): %s", exc)
        return logged

    def _index_logs(self, paths: Sequence[str]) -> None:
        """Make just-logged turns recallable at once; the turns are on disk either way, so a
        failure here only delays them to the next sync."""
        try:
            self.reindex_paths(paths)
        except (MemoryclawError, sqlite3.Error, OSError) as exc:
            _log.warning("logged turns not indexed yet (the next sync will): %s", exc)

    def end_session(self, session: str) -> list[str]:
        """Close the session's open log so consolidation can take it."""
        return close_session(self.root, session)

    def ingest(
        self,
        records: Iterable[Mapping[str, Any]],
        *,
        source: str = "<input>",
        line_numbers: Sequence[int] | None = None,
    ) -> IngestReport:
        """Append many turns (``{session, role, content, timestamp?, name?, channel?, tool?}``,
        or ``{"messages": [...]}`` objects: OpenAI-style chats, see
        :func:`memoryclaw.importers.parsers.message_records`).

        Every record is checked before anything is written; each session's log is closed after.
        ``line_numbers`` (one per record) are used in error messages instead of positions.
        """
        turns: list[NewTurn] = []
        for position, record in enumerate(records):
            line = line_numbers[position] if line_numbers is not None else position + 1
            turns += _record_turns(record, source, line)
        if not turns:
            return IngestReport(0, ())
        logged = append_turns(self.root, self.settings, turns, close=True)
        logs = tuple(dict.fromkeys(t.path for t in logged))
        self._index_logs(logs)
        sessions = tuple(dict.fromkeys(t.session for t in logged))
        from .vault.scrub import FORGOTTEN

        blanked = sum(1 for t in logged if t.entry is not None and t.entry.content == FORGOTTEN)
        return IngestReport(len(logged), logs, sessions, forgotten=blanked)

    def ingest_file(
        self, file: str | Path | IO[bytes], *, source: str | None = None
    ) -> IngestReport:
        """:meth:`ingest` of a JSON-lines file (a path, or an open binary stream such as
        standard input; a ``.json`` path holds one chat or a list of them), in bounded memory:
        every line is checked before anything is written, then the turns are written in
        batches, and a run killed midway, run again, neither duplicates nor loses turns
        (:mod:`memoryclaw.importers.ingest`)."""
        from .importers.ingest import ingest_stream

        def to_turns(record: Mapping[str, Any], line: int, check: bool) -> list[NewTurn]:
            return _record_turns(record, name, line, check=check)

        if isinstance(file, (str, Path)):
            name = source or str(file)
            document = str(file).endswith(".json")
            with open(file, "rb") as handle:
                done = ingest_stream(
                    self.root, self.settings, handle, name, to_turns, document=document
                )
        else:
            name = source or "-"
            done = ingest_stream(self.root, self.settings, file, name, to_turns)
        logs = tuple(done.logs)
        self._index_logs(logs)
        return IngestReport(
            done.turns, logs, tuple(done.sessions), done.known, forgotten=done.forgotten
        )

    # ----------------------------------------------------------------- importing

    def import_openclaw(
        self,
        state: str | Path | None = None,
        *,
        agent: str | None = None,
        since: date | None = None,
        dry_run: bool = False,
    ) -> ImportReport:
        """Bring an OpenClaw install's memory in (its state folder ``state``, default
        ``$OPENCLAW_STATE_DIR`` or ``~/.openclaw``; one ``agent``, default all): MEMORY.md and
        USER.md items as facts and notes, daily notes as episodes, session transcripts as raw
        logs, then consolidated.  A second import adds nothing
        (:mod:`memoryclaw.importers.workspace`)."""
        where = Path(state).expanduser() if state is not None else None
        message = "memoryclaw: import from OpenClaw"
        use_git = self.settings.git.auto_commit and is_repository(self.root) and not dry_run
        with self._committing(message):
            from .importers.workspace import import_openclaw

            done = import_openclaw(
                self,
                state=where,
                agent=agent,
                since=since,
                dry_run=dry_run,
                note_writes=partial(journal, self.root) if use_git else None,
            )
            self._imported(message, use_git=use_git, dry_run=dry_run)
            return done

    def import_notes(
        self, folder: str | Path, *, since: date | None = None, dry_run: bool = False
    ) -> ImportReport:
        """Bring a folder of markdown notes in (an Obsidian vault, CLAUDE.md / AGENTS.md, memory
        folders): dated notes as episodes, memory files and lists as facts and notes."""
        from .vault.redact import redact  # a folder's name reaches the commit message

        message = f"memoryclaw: import notes from {redact(Path(folder).name)}"
        use_git = self.settings.git.auto_commit and is_repository(self.root) and not dry_run
        note_writes = partial(journal, self.root) if use_git else None
        with self._committing(message):
            from .importers.workspace import import_notes

            done = import_notes(
                self, Path(folder), since=since, dry_run=dry_run, note_writes=note_writes
            )
            self._imported(message, use_git=use_git, dry_run=dry_run)
            return done

    def _imported(self, message: str, *, use_git: bool, dry_run: bool) -> None:
        """After an import: scrub what it brought back that was forgotten, then commit what
        this run wrote and what a run killed before its commit wrote."""
        if not dry_run:
            self._keep_forgotten()
        if use_git:
            with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
                commit_journal(self.root, message)

    def _keep_forgotten(self) -> None:
        """After an import: take out again whatever it brought back that was forgotten
        (the tombstones in ``semantic/_forgotten/``), from the files and the index."""
        from .share import forget as forgetting

        with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
            if forgetting.reapply(self.root, forgetting.memory_files(self.root)):
                self.refresh()
                self.index.forget_deleted()

    # ----------------------------------------------------------------- review

    def audit(self, *, days: int = 7, now: datetime | None = None) -> dict[str, Any]:
        """Episodes and machine-written facts added in the last ``days`` days, for review."""
        if not 0 <= days <= recall_metrics.MAX_WINDOW_DAYS:  # a billion days overflowed
            limit = recall_metrics.MAX_WINDOW_DAYS
            raise InvalidInputError("days", f"must be from 0 to {limit}, got {days}")
        self.refresh()
        moment = now or now_utc()
        since = moment - timedelta(days=days)
        episodes = self.index.episode_rows("ts_epoch >= ?", [int(since.timestamp())])
        facts = self.index.fact_rows(
            "source != 'hand' AND updated >= ?", [since.strftime("%Y-%m-%d")]
        )
        return {
            "since": utc_iso(since),
            "episodes": [
                {
                    "id": r["id"],
                    "path": r["path"],
                    "timestamp": r["timestamp"],
                    "summary": r["summary"],
                    "confidence": r["confidence"],
                    "source": r["source"],
                }
                for r in episodes
            ],
            "facts": [
                {
                    "id": r["id"],
                    "entity": r["entity"],
                    "field": r["field"],
                    "value": r["value"],
                    "path": r["path"],
                    "line": r["line"],
                    "source": r["source"],
                    "updated": r["updated"],
                    "confidence": r["confidence"],
                }
                for r in facts
            ],
            "errors": [
                {"path": p.path, "reason": p.reason, "line": p.line} for p in self.problems()
            ],
        }

    def forget(
        self,
        query: str | None = None,
        *,
        episode_id: str | None = None,
        fact_id: str | None = None,
        dry_run: bool = False,
    ) -> ForgetReport:
        """Remove memories from the vault and the index: by id, or every line, turn and fact
        that holds all the words of ``query`` (raw logs included)."""
        chosen = [x for x in (query, episode_id, fact_id) if x is not None]
        if len(chosen) != 1:
            raise InvalidInputError(
                "forget", "give exactly one of a query, an episode id or a fact id"
            )
        refuse(self.teams, "forget", episode_id, fact_id)
        self.refresh()
        if dry_run:
            return self._forget(query, episode_id, fact_id, dry_run=True)
        # alone with consolidation and sync: they write (and commit) the same files
        with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
            self._finish_forget()
            return self._forget(query, episode_id, fact_id, dry_run=False)

    def _forget(
        self, query: str | None, episode_id: str | None, fact_id: str | None, *, dry_run: bool
    ) -> ForgetReport:
        from .share import forget as forgetting

        if episode_id is not None:
            episode_rows = self.index.episode_rows("id = ?", [episode_id])
            if not episode_rows:
                self._refuse_unqualified(episode_id, "forget", "episode")
                raise NotFoundError("episode", episode_id)
            todo = forgetting.plan_ids(self.root, self.index, episode_rows)
        elif fact_id is not None:
            fact_rows = self.index.fact_rows("id = ?", [fact_id])
            if not fact_rows:
                self._refuse_unqualified(fact_id, "forget", "fact")
                raise NotFoundError("fact", fact_id)
            fact_rows += self._history_of(fact_rows)
            todo = forgetting.plan_facts(self.root, self.index, fact_rows)
        else:
            assert query is not None
            from .vault.words import extract_keywords

            # Keywords only: forgetting must never reach what merely resembles the query.
            todo = forgetting.plan_query(self.root, self.index, extract_keywords(query))
        commit = stone = None
        if not dry_run and todo.edits:
            use_git = self.settings.git.auto_commit and is_repository(self.root)
            note = partial(journal, self.root) if use_git else None
            stone = forgetting.apply(self.root, todo, note)
            commit = self._forget_committed(use_git, self._forget_message(todo))
        turns = sum(len(e.turns) for e in todo.edits)
        return ForgetReport(
            episodes=tuple(todo.episodes[p] for p in sorted(todo.episodes)),
            facts=tuple(todo.fact_ids),
            files_deleted=tuple(todo.deleted()),
            files_edited=tuple(todo.edited()),
            dry_run=dry_run,
            commit=commit,
            in_history=is_repository(self.root),
            changes=tuple(e.as_dict() for e in todo.edits),
            removed=todo.count(),
            turns=turns,
            tombstones=stone,
        )

    @staticmethod
    def _forget_message(todo: Any) -> str:
        """A commit message that names no forgotten file (a file name can tell what it held)."""
        whole = sum(1 for e in todo.edits if e.whole)
        facts = plural(len(todo.fact_ids), "fact")
        head = f"memoryclaw: forget {plural(whole, 'episode')} and {facts}"
        edited = [f"edited {p}" for p in todo.edited() if p.startswith(("semantic/", "logs/"))]
        removed = plural(todo.count(), "line, turn and fact", "lines, turns and facts")
        return "\n".join([head, "", removed, *edited])

    def _forget_committed(self, use_git: bool, message: str) -> str | None:
        """Bring the index up to date with a forget (its deleted words gone from the index
        file's bytes too), commit it, and drop its journal; the commit's sha."""
        from .share import forget as forgetting

        self._update_vectors(sync(self.root, self.index))
        self.index.forget_deleted()
        commit = commit_journal(self.root, message) if use_git else None
        forgetting.done(self.root)
        return commit

    def _finish_interrupted_forget(self) -> None:
        """Before a consolidation or sync: finish a forget (or a history purge) that was
        killed on its way."""
        from .share import forget as forgetting
        from .share.purge import PURGING

        if forgetting.interrupted(self.root) is not None or (self.root / PURGING).exists():
            with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
                self._finish_forget()

    def _finish_forget(self) -> str | None:
        """Finish (or roll back) a forget that was killed on its way; its commit's sha.
        Called with the consolidation lock held."""
        from .share import forget as forgetting
        from .share.purge import recover

        if is_repository(self.root):
            recover(self.root)  # a killed rewrite left the index at the old history
        if forgetting.interrupted(self.root) is None:
            return None
        use_git = self.settings.git.auto_commit and is_repository(self.root)
        forgetting.finish(self.root, partial(journal, self.root) if use_git else None)
        message = "memoryclaw: forget (finished after an interruption)"
        return self._forget_committed(use_git, message)

    def _refuse_unqualified(self, ident: str, action: str, kind: str) -> None:
        """Refuse ``action`` on ``ident`` when not this vault but a team vault holds it."""
        table = {"episode": "episode_rows", "fact": "fact_rows"}[kind]
        team = holder_of(
            self.teams, lambda index, i: bool(getattr(index, table)("id = ?", [i])), ident
        )
        if team is not None:
            raise ReadOnlyVaultError(team.name, team.root, qualify(team.name, ident), action)

    def _history_of(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The superseded values of the facts in ``rows`` (forgetting a fact forgets what it
        replaced: search finds only current values)."""
        ids = {row["id"] for row in rows}
        out: list[dict[str, Any]] = []
        for entity, name in sorted({(row["entity"], row["field"]) for row in rows}):
            for row in self.index.fact_rows(
                "lower(entity) = lower(?) AND field = ? AND superseded = 1", [entity, name]
            ):
                if row["id"] not in ids:
                    ids.add(row["id"])
                    out.append(row)
        return out

    def purge_history(
        self, paths: Iterable[str], *, report: bool = False, query: str | None = None
    ) -> Any:
        """Rewrite the vault's git history so these files hold only what they hold now
        (deleted ones vanish from every commit), with every other file some commit of which
        holds forgotten text (the tombstones, and ``query``'s words); push it to the sync
        remote.  The number of files rewritten, or with ``report`` the
        :class:`memoryclaw.share.purge.PurgeReport`."""
        paths = list(paths)
        refuse(self.teams, "purge-history", *paths)
        if not is_repository(self.root):
            raise ExternalToolError("git", f"{self.root} is not a git repository")
        from .share.forget import matcher_for
        from .share.purge import purge
        from .vault.words import extract_keywords

        keywords = extract_keywords(query) if query else []
        match, terms = matcher_for(self.root, keywords)
        remote = self.settings.sync.remote or None
        with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
            done = purge(
                self.root,
                [safe_relpath(p) for p in paths],
                match,
                terms=terms,
                remote=remote,
                seconds=self.settings.sync.timeout_seconds,
            )
        return done if report else done.files

    def purge_blockers(self) -> list[str]:
        """Tracked files with uncommitted changes, which keep a history purge from running
        (after finishing a forget or a purge that was killed on its way)."""
        from .share.purge import blockers

        if not is_repository(self.root):
            return []
        self._finish_interrupted_forget()
        with file_lock(self.root, CONSOLIDATE_LOCK, timeout=_FORGET_WAIT_SECONDS):
            return blockers(self.root)

    def skills(self) -> list[SkillInfo]:
        """Every skill under ``skills/`` with its status; unreadable ones have status invalid."""
        from .consolidate.skills import list_skills

        return list_skills(self.root)

    def approve_skill(self, name: str) -> SkillInfo:
        """Mark the skill approved; ``todos`` says how many TODO markers it still holds."""
        refuse(self.teams, "skills approve", name)
        from .consolidate.skills import approve_skill

        return approve_skill(self.root, name)

    def reject_skill(self, name: str) -> SkillInfo:
        """Mark the skill rejected: never active, and never suggested again."""
        refuse(self.teams, "skills reject", name)
        from .consolidate.skills import reject_skill

        return reject_skill(self.root, name)

    # ---------------------------------------------------------------- health

    def problems(self) -> list[Skipped]:
        """Every vault file memoryclaw cannot use, with the reason (and line where known)."""
        self.refresh()
        skipped = scan(self.root).skipped
        found = [Skipped(path, reason, line) for path, reason, line in self.index.errors()]
        reported = {s.path for s in found}  # a raw log is indexed too: report it once
        found += [s for s in held_back_logs(self.root) if s.path not in reported]
        found += self._duplicate_ids()
        return sorted([*found, *skipped], key=lambda s: (s.path, s.line or 0))

    def _duplicate_ids(self) -> list[Skipped]:
        """Episodes that share an id with another file (``forget --episode`` takes them all)."""
        rows = self.index.execute(
            "SELECT id, group_concat(path, char(10)) FROM episodes GROUP BY id HAVING count(*) > 1"
        ).fetchall()
        return [
            Skipped(
                path, f"episode id {ident} is also used by {', '.join(sorted(set(paths) - {path}))}"
            )
            for ident, joined in rows
            for paths in [joined.split("\n")]
            for path in paths
        ]

    def metrics(
        self,
        *,
        days: int | None = None,
        since: date | str | None = None,
        now: datetime | None = None,
    ) -> recall_metrics.Metrics:
        """Recall metrics (:mod:`memoryclaw.recall.metrics`) over the last ``days`` UTC days, today
        included (default 7), or from the day ``since`` to today; with the facts pending
        review, the conflicts among them and the episodes archived, as they are now."""
        first, last = recall_metrics.window(recall_metrics.day_of(now or now_utc()), days, since)
        self.refresh()
        recorded = recall_metrics.read_days(self.root)
        from .vault.pending import pending_facts

        pending = pending_facts(self.root)
        lowest, highest = ARCHIVE_DIR + "/", ARCHIVE_DIR + "0"
        archived = self.index.episode_rows("path >= ? AND path < ?", [lowest, highest], "path")
        return recall_metrics.Metrics(
            since=first,
            until=last,
            counts=recall_metrics.summed(recorded, first, last),
            recorded_since=min(recorded) if recorded else None,
            pending=len(pending),
            conflicts=sum(1 for p in pending if p.mark == "CONFLICT"),
            episodes_archived=len({row["id"] for row in archived}),
        )

    def stats(
        self,
        *,
        days: int | None = None,
        since: date | str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Counts and sizes of the vault and its index, and the recall metrics over a window
        (see :meth:`metrics`) as ``metrics``."""
        metrics = self.metrics(days=days, since=since, now=now)
        counts = self.index.counts()
        db = self.root / STATE_DIR / INDEX_FILE
        index_bytes = sum(
            p.stat().st_size for p in (db, db.with_name(INDEX_FILE + "-wal")) if p.exists()
        )
        vault_bytes = disk_usage(self.root, frozenset({STATE_DIR, ".git"}))
        logs = unprocessed_logs(self.root)
        return {
            "vault": str(self.root),
            "episodes": counts["episodes"],
            "facts": counts["facts"],
            "aliases": counts["aliases"],
            "tags": counts["distinct_tags"],
            "files_indexed": counts["files"] - counts["errors"],
            "files_with_errors": counts["errors"],
            "logs_unprocessed": len(logs),
            "logs_open": sum(1 for log in logs if not log.meta.get("closed")),
            "logs_held_back": len(held_back_logs(self.root)),
            "skills": len(list((self.root / "skills").glob("*/SKILL.md"))),
            "top_tags": [{"tag": t, "count": n} for t, n in self.index.top_tags(10)],
            "vault_bytes": vault_bytes,
            "index_bytes": index_bytes,
            "metrics": metrics.as_dict(),
        }

    def doctor(self) -> list[dict[str, str]]:
        """Configuration, dependency and index health checks: ``{check, status, detail}``."""
        checks: list[dict[str, str]] = []

        def add(check: str, status: str, detail: str) -> None:
            checks.append({"check": check, "status": status, "detail": detail})

        add("version", "ok", f"memoryclaw {__version__}")
        from .vault.configfile import LAST_VALID_FILE, config_file_problem

        bad_config = config_file_problem(self.root)
        add(
            "config",
            "error" if bad_config else "ok",
            f"{bad_config} (commands use the last valid copy, {LAST_VALID_FILE}, until fixed)"
            if bad_config
            else f"{self.root / CONFIG_FILE} valid"
            if (self.root / CONFIG_FILE).exists()
            else "no memoryclaw.yaml; defaults apply",
        )
        from .vault.configfile import held_config

        for key, pair in sorted(held_config(self.root).items()):
            add(
                "config held",
                "warn",
                f"{key}: a sync brought {pair['incoming']!r}; this device keeps"
                f" {pair['trusted']!r} until `memoryclaw sync --accept-config`",
            )
        missing = [f for f in VAULT_FOLDERS if not (self.root / f).is_dir()]
        add(
            "folders",
            "warn" if missing else "ok",
            f"missing: {', '.join(missing)}" if missing else "all present",
        )
        for team in self.teams:
            why = team.problem()
            if why is None:
                team.refresh()
                count = team.index.episode_count()
                episodes = plural(count, "episode")
                add(f"team vault {team.name}", "ok", f"{team.root}: {episodes}, read-only")
            else:
                add(f"team vault {team.name}", "warn", f"not searched: {why}")
        add(
            "sqlite",
            "ok",
            f"SQLite {sqlite3.sqlite_version} with FTS5" if _has_fts5() else "FTS5 missing",
        )
        try:
            report = self.refresh()
            problems = self.index.integrity_problems()
            add(
                "index",
                "error" if problems else "ok",
                "; ".join(problems)
                or f"{plural(self.index.counts()['episodes'], 'episode')} indexed",
            )
            if report is not None:
                add(
                    "sync",
                    "ok",
                    "index was stale; synced"
                    f" {plural(len(report.added) + len(report.changed), 'file')}",
                )
            if self.index.path is None:
                add("index", "warn", READ_ONLY_NOTE)
        except (MemoryclawError, sqlite3.DatabaseError) as exc:
            add("index", "error", f"{exc} (run `memoryclaw reindex --full`)")
            return checks
        for problem in self.problems():
            line = f":{problem.line}" if problem.line else ""
            add("file", "warn", f"{problem.path}{line}: {problem.reason}")
        unscoped = self.index.unscoped_counts()
        add(
            "scopes",
            "info" if any(unscoped.values()) else "ok",
            f"{plural(unscoped['episodes'], 'episode')} and {plural(unscoped['facts'], 'fact')}"
            " without a scope:"
            " owner-level, recalled in the owner's direct conversations of every agent"
            if any(unscoped.values())
            else "every episode and fact has a scope",
        )
        extras = {
            "daemon": ("apscheduler", "watchdog"),
            "ollama": ("ollama",),
            "local-embeddings": ("sentence_transformers", "numpy"),
            "mcp": ("mcp",),
        }
        for extra, modules in extras.items():
            have = all(importlib.util.find_spec(m) is not None for m in modules)
            add(
                f"extra:{extra}",
                "ok" if have else "info",
                "installed" if have else f"not installed (pip install 'memoryclaw[{extra}]')",
            )
        if self.settings.llm.provider == "ollama":
            from .consolidate.llm import ollama_status

            add("llm", *ollama_status(self.settings.llm))
        for status, detail in self._vector_checks():
            add("vector", status, detail)
        git_dir = (self.root / ".git").exists()
        add(
            "git",
            "ok" if git_dir else "info",
            "vault is a git repository"
            if git_dir
            else "not a git repository (memoryclaw init --git)",
        )
        if git_dir:
            from .share.gitrules import ignored_memory_folders, local_problems

            hidden = ignored_memory_folders(self.root)
            if hidden:
                why = "git ignores memory files there: they are neither committed nor synced"
                add("git ignore", "error", f"{', '.join(hidden)}: {why} (see .gitignore)")
            for name, line, why in local_problems(self.root):
                add("git files", "error", f"{name}: {line!r} {why} (the next sync removes it)")
        return checks

    def _vector_checks(self) -> list[tuple[str, str]]:
        """``doctor``'s lines on the vector fallback: off, or extra, embedder and coverage."""
        if self.settings.retrieval.fallback != "vector":
            return [
                (
                    "info",
                    "vector fallback off: keyword retrieval only (to enable set "
                    "retrieval.fallback: vector and install pip install "
                    "'memoryclaw[local-embeddings]' for embeddings.provider: "
                    "sentence-transformers, or 'memoryclaw[ollama]' for ollama)",
                )
            ]
        provider = self.settings.embeddings.provider
        extra = "ollama" if provider == "ollama" else "local-embeddings"
        modules = ("ollama" if provider == "ollama" else "sentence_transformers", "numpy")
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing and self._embedder is None:
            fix = f"pip install 'memoryclaw[{extra}]'"
            return [("warn", f"fallback on but {', '.join(missing)} missing ({fix})")]
        lines: list[tuple[str, str]] = []
        try:
            embedder = self._get_embedder()
            dims = embedder.embed(["memoryclaw doctor"]).shape[1]
            lines.append(("ok", f"embedder {embedder.name} answers ({dims} dimensions)"))
        except EmbeddingError as exc:
            lines.append(("warn", f"{exc} (keyword search still works)"))
        name = self._embedder.name if self._embedder is not None else embedder_name(self.settings)
        have, total = self.index.vector_coverage(name)
        fix = "" if have == total else " (run `memoryclaw reindex` once the embedder answers)"
        status = "ok" if have == total else "warn"
        lines.append((status, f"{have} of {total} episodes have current vectors from {name}{fix}"))
        return lines


def _day(now: datetime | None) -> str:
    """``now``'s UTC date (default: today's), as a fact's dates are written."""
    moment = now or now_utc()
    return (
        (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc))
        .astimezone(timezone.utc)
        .date()
        .isoformat()
    )


def _without_live_turns(root: Path, result: SearchResult, session: str) -> SearchResult:
    """``result`` without the turns of ``session``'s open log: a host that names its session
    sends those turns as the conversation's history, and quoted again they only take room.
    The session's earlier logs (closed, not yet consolidated) stay: its history is new."""
    logs = {
        p.path
        for p in result.passages
        if p.via == "log" and p.vault is None and p.session == session
    }
    live = {rel for rel in logs if is_open_log(root, rel)}
    if not live:
        return result
    kept = tuple(p for p in result.passages if p.vault is not None or p.path not in live)
    return dataclasses.replace(result, passages=kept)


def _skipped(query: str, budget: int, reason: str) -> RetrievePayload:
    """The payload of a query recall did not run for: nothing to inject, and why."""
    from .recall.payload import RetrievePayload

    memory = {"goal": query, "plan": [], "facts": {}, "recent_observations": []}
    return RetrievePayload(
        query=query,
        context="",
        working_memory={**memory, "active_skill": None},
        tokens=0,
        budget=budget,
        episodes=(),
        facts=(),
        skipped=reason,
    )


def _handle_owners(index: Index, handles: Collection[str]) -> dict[str, str]:
    """The episode id each of ``handles`` names: only a handle that exactly one indexed
    episode has, and that no memory has as its own id, names one (recall shows the full id
    of any other, so a handle it shows always reads back the same episode)."""
    if not handles:
        return {}
    tails = {h: "-" + h.removeprefix("ep-") for h in handles}
    ids = index.episode_ids_ending(set(tails.values()))
    marks = ", ".join("?" * len(tails))
    literal = {f["id"] for f in index.fact_rows(f"id IN ({marks})", list(tails))}
    owners = {}
    for handle, tail in tails.items():
        named = [i for i in ids if i.endswith(tail)]
        if len(named) == 1 and episode_handle(named[0]) == handle and handle not in literal:
            owners[handle] = named[0]
    return owners


def _lookup(index: Index, ident: str, policy: Policy) -> dict[str, Any] | None:
    """The episode or fact ``ident`` (or an episode's short handle) in ``index``, if
    ``policy`` lets the requester see it."""
    found = index.episode_rows("id = ?", [ident])
    if not found and is_episode_handle(ident):
        owner = _handle_owners(index, {ident}).get(ident)
        found = index.episode_rows("id = ?", [owner]) if owner else []
    rows = [r for r in found if policy.admit(r["agent"], r["scope"])[0]]
    if rows:
        row = rows[0]
        return {
            "kind": "episode",
            "id": row["id"],
            "path": row["path"],
            "timestamp": row["timestamp"],
            "summary": row["summary"],
            "tags": json.loads(row["tags"]),
            "entities": json.loads(row["entities"]),
            "details": row["details"],
            "source": row["source"],
            "source_turns": [row["turn_first"], row["turn_last"]] if row["turn_first"] else None,
            "session": row["session"],
            "confidence": row["confidence"],
            "agent": row["agent"],
            "scope": row["scope"] or OWNER,
        }
    facts = [
        f for f in index.fact_rows("id = ?", [ident]) if policy.admit(f["agent"], f["scope"])[0]
    ]
    if facts:
        fact = facts[0]
        return {"kind": "fact", **{k: fact[k] for k in fact if k != "rowid"}}
    return None


def _has_fts5() -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _as_timestamp(value: datetime | str | None, key: str) -> datetime:
    if value is None:
        return now_utc()
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(key, f"not an ISO timestamp: {value!r} ({exc})") from None


_RECORD_KEYS = {
    "session",
    "role",
    "content",
    "timestamp",
    "name",
    "channel",
    "tool",
    "agent",
    "kind",
    "sender",
}


def _record_turns(
    record: Mapping[str, Any], source: str, line: int, *, check: bool = True
) -> list[NewTurn]:
    """The turns of one ingest record: a turn, or an OpenAI-style chat's turns; each turn
    checked as the vault will store it unless ``check`` is false (already checked)."""
    from .importers.parsers import conversation_records

    if isinstance(record, Mapping) and "messages" in record:
        expanded = conversation_records(record, source=source, line=line)
        return [_turn_from_record(r, source, line, check=check) for r in expanded]
    return [_turn_from_record(record, source, line, check=check)]


def _turn_from_record(
    record: Mapping[str, Any], source: str, line: int, *, check: bool = True
) -> NewTurn:
    if not isinstance(record, Mapping):
        raise InvalidInputError(
            "record",
            f"expected a JSON object, got {type(record).__name__}",
            source=source,
            line=line,
        )
    unknown = sorted(set(record) - _RECORD_KEYS)
    if unknown:
        raise InvalidInputError(
            unknown[0],
            f"unknown key (known: {', '.join(sorted(_RECORD_KEYS))})",
            source=source,
            line=line,
        )
    for key in ("session", "role", "content"):
        if not isinstance(record.get(key), str):
            raise InvalidInputError(key, "required, and must be a string", source=source, line=line)
    for key in ("name", "channel", "tool", "agent", "kind", "sender"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise InvalidInputError(key, "must be a string", source=source, line=line)
    try:
        moment = _as_timestamp(record.get("timestamp"), "timestamp")
    except InvalidInputError as exc:
        raise InvalidInputError("timestamp", exc.problem, source=source, line=line) from None
    turn = NewTurn(
        session=record["session"],
        role=record["role"],
        content=record["content"],
        timestamp=moment,
        name=record.get("name"),
        channel=record.get("channel"),
        tool=record.get("tool"),
        agent=record.get("agent"),
        kind=record.get("kind"),
        sender=record.get("sender"),
    )
    if check:
        validate_turn(turn, source=source, line=line)
    return turn
