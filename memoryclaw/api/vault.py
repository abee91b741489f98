"""``memoryclaw.Vault``: the one API the CLI, the servers and the plugins are layers over; each
verb delegates to the module of its concern in this package or to its stage."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from ..index.embeddings import Embedder, embedder_for
from ..index.store import Index
from ..index.vectors import QueryMemo, VectorHit, nearest, nearest_passages
from ..vault.config import Settings, resolve_vault_path
from ..vault.configfile import load_settings
from ..vault.files import STATE_DIR, Skipped, require_vault, resolve_inside
from ..vault.scopes import Policy, RecallContext
from .curating import CuratingVerbs
from .opening import INDEX_FILE, create_files, writable

# The verbs' modules (``recalling``, ``indexing``, ``importing`` ...) and the stages only some
# verbs use are imported in the verb: an agent's host starts a process for each turn's
# ``retrieve`` and ``log``, and each should load only what it runs.
if TYPE_CHECKING:
    from ..consolidate.archive import ArchiveReport
    from ..consolidate.report import ConsolidationReport
    from ..importers.workspace import ImportReport
    from ..index.update import Progress, SyncReport
    from ..recall.metrics import Metrics
    from ..recall.payload import RetrievePayload
    from ..recall.results import SearchResult
    from ..share.history import Commit
    from ..share.sync import RemoteSyncReport
    from ..share.teams import TeamVault
    from ..vault.rawlogs import LoggedTurn
    from ..vault.tombstones import Tombstones
    from .forgetting import ForgetReport
    from .importing import IngestReport


class Vault(CuratingVerbs):
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
        # the tombstones as last read, with the names of the files they were read from
        self._forgotten: tuple[frozenset[str], Tombstones] | None = None
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
        create_files(root, git=git)
        from ..share.history import first_commit
        from ..share.sync import has_remote
        from ..vault.device import device_id

        vault = cls(root, env=env)
        if has_remote(root):  # a clone of a synced vault: its logs carry this device's id
            device_id(root, vault.settings)
        if git:  # a repository with nothing in it would leave every file untracked
            vault.init_commit = first_commit(root)
        return vault

    @property
    def index(self) -> Index:
        """The vault's index, opened on first use.

        In a vault that cannot be written (a read-only mount or permissions) the index is kept
        in memory, starting from the saved one, so reading works and nothing is written.
        """
        if self._index is None:
            path = self.root / STATE_DIR / INDEX_FILE
            self._index = Index(path) if writable(path) else Index(None, seed=path)
        return self._index

    @property
    def teams(self) -> list[TeamVault]:
        """The team vaults ``sharedVaults`` lists: searched after this one, never written
        (:mod:`memoryclaw.share.teams`)."""
        if self._teams is None:
            from ..share.teams import team_vaults

            can_write = writable(self.root / STATE_DIR / "shared" / INDEX_FILE)
            self._teams = team_vaults(self.root, self.settings.shared_vaults, can_write)
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
        from . import indexing

        return indexing.reindex(self, full=full, progress=progress, embed_progress=embed_progress)

    def reindex_paths(self, paths: Iterable[str]) -> SyncReport:
        """Sync just these vault-relative files (a watcher's changes); a full :meth:`reindex`
        when that cannot be trusted (a folder appeared, vanished or was renamed)."""
        from . import indexing

        return indexing.reindex_paths(self, paths)

    def refresh(self) -> SyncReport | None:
        """Sync when the vault (or a team vault) changed since the last sync; the own vault's
        report, None when it was current."""
        from . import indexing

        return indexing.refresh(self)

    def _get_embedder(self) -> Embedder:
        """The vector fallback's embedder, built on first use and kept with its model loaded."""
        if self._embedder is None:
            self._embedder = embedder_for(self.settings)
        return self._embedder

    def _nearest(self, query: str, limit: int, also: Sequence[str]) -> list[VectorHit]:
        return nearest(self.index, self._get_embedder(), query, limit, also, self._queries)

    def _nearest_lines(self, query: str, limit: int, also: Sequence[int]) -> list[VectorHit]:
        return nearest_passages(self.index, self._get_embedder(), query, limit, also, self._queries)

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
        from . import recalling

        return recalling.search_with_teams(
            self,
            query,
            limit=limit,
            now=now,
            refresh=refresh,
            context=context,
            explain_scope=explain_scope,
            include_archived=include_archived,
        )

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
        from . import recalling

        return recalling.search_index(
            self, query, limit=limit, now=now, vectors=vectors, policy=policy, archived=archived
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
        from . import recalling

        return recalling.retrieve(
            self, query, now=now, refresh=refresh, context=context, working=working
        )

    def get(self, ident: str, *, context: RecallContext | None = None) -> dict[str, Any]:
        """An episode (with details) or a fact by id, if ``context`` may see it (to a
        requester who may not, it does not exist).  An episode may also be named by the short
        handle recall shows for it (``ep-d6b27f26``); a team vault's, by its qualified id
        (``team:ep-…``)."""
        from . import recalling

        return recalling.get(self, ident, context=context)

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
        from . import recalling

        return recalling.read(self, path, start, lines, context=context)

    def consolidate(
        self, *, all_logs: bool = False, now: datetime | None = None
    ) -> ConsolidationReport:
        """Turn closed raw logs (``all_logs``: every unprocessed one) into episodes and facts.

        With ``git.autoCommit`` in a git vault, what the run changed becomes one commit.
        """
        from . import consolidating

        return consolidating.consolidate(self, all_logs=all_logs, now=now)

    def archive(self, *, dry_run: bool = False, now: datetime | None = None) -> ArchiveReport:
        """Move episodes unused for ``consolidation.archiveAfterDays`` days (not recalled, not
        edited, not dated within them; 0, the default, moves none) to ``episodes/archive/YYYY/``,
        out of automatic recall but searchable with ``include_archived``; ``dry_run`` only
        reports.  With ``git.autoCommit`` in a git vault the run is one commit."""
        from . import consolidating

        return consolidating.archive(self, dry_run=dry_run, now=now)

    def restore(self, ident: str, *, now: datetime | None = None) -> ArchiveReport:
        """Move the archived episode ``ident`` back into recall (counted as recalled now, so
        it stays for another ``archiveAfterDays``); nothing to do when it is not archived."""
        from . import consolidating

        return consolidating.restore(self, ident, now=now)

    def history(self, path: str) -> list[Commit]:
        """The git commits that changed a vault file (a team vault's too), newest first."""
        from ..share.history import file_history
        from ..share.teams import owner_of

        found_in = owner_of(path, self.teams)
        root, rel = (found_in[0].root, found_in[1]) if found_in else (self.root, path)
        resolve_inside(root, rel)
        return file_history(root, rel)

    @contextmanager
    def _committing(self, message: str) -> Iterator[None]:
        """With ``git.autoCommit`` in a git vault, commit the memory files the block changed."""
        from ..share.history import commit_changes, is_repository, snapshot

        use_git = self.settings.git.auto_commit and is_repository(self.root)
        before = snapshot(self.root) if use_git else {}
        yield
        if use_git:
            commit_changes(self.root, before, message)

    def sync_remote(self, *, setup: bool = False) -> RemoteSyncReport:
        """Sync the vault's git repository with ``sync.remote`` (commit, fetch, merge, push)
        and re-index the files the merge brought; ``setup`` first writes .gitattributes.

        Team vaults (``sharedVaults``) are pulled first, fast-forward only; one that cannot be
        pulled says why in ``shared`` and stops nothing.  A vault that is not a git repository
        but lists team vaults only pulls them (``remote`` is empty)."""
        from . import syncing

        return syncing.sync_remote(self, setup=setup)

    def accept_config(self) -> list[str]:
        """Accept the ``memoryclaw.yaml`` keys a sync held: the values the file holds apply
        from the next load; the keys accepted."""
        from ..vault.configfile import accept_held

        return accept_held(self.root)

    def export_archive(self, target: str | Path) -> int:
        """Write the vault's memory files to a ``.tar.gz``; how many files it holds."""
        from ..share.transfer import export_archive

        return export_archive(self.root, Path(target))

    def import_archive(self, source: str | Path) -> RemoteSyncReport:
        """Merge an exported ``.tar.gz`` into this git vault by the rules of a sync."""
        from . import syncing

        return syncing.import_archive(self, source)

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
        from . import importing

        return importing.log_turn(
            self,
            session,
            role,
            text,
            name=name,
            channel=channel,
            timestamp=timestamp,
            tool=tool,
            agent=agent,
            kind=kind,
            sender=sender,
        )

    def end_session(self, session: str) -> list[str]:
        """Close the session's open log so consolidation can take it."""
        from ..vault.rawlogs import close_session

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
        from . import importing

        return importing.ingest(self, records, source=source, line_numbers=line_numbers)

    def ingest_file(
        self, file: str | Path | IO[bytes], *, source: str | None = None
    ) -> IngestReport:
        """:meth:`ingest` of a JSON-lines file (a path, or an open binary stream such as
        standard input; a ``.json`` path holds one chat or a list of them), in bounded memory:
        every line is checked before anything is written, then the turns are written in
        batches, and a run killed midway, run again, neither duplicates nor loses turns
        (:mod:`memoryclaw.importers.ingest`)."""
        from . import importing

        return importing.ingest_file(self, file, source=source)

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
        from . import importing

        return importing.import_openclaw(self, state, agent=agent, since=since, dry_run=dry_run)

    def import_notes(
        self, folder: str | Path, *, since: date | None = None, dry_run: bool = False
    ) -> ImportReport:
        """Bring a folder of markdown notes in (an Obsidian vault, CLAUDE.md / AGENTS.md, memory
        folders): dated notes as episodes, memory files and lists as facts and notes."""
        from . import importing

        return importing.import_notes(self, folder, since=since, dry_run=dry_run)

    def audit(self, *, days: int = 7, now: datetime | None = None) -> dict[str, Any]:
        """Episodes and machine-written facts added in the last ``days`` days, for review."""
        from . import health

        return health.audit(self, days=days, now=now)

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
        from . import forgetting

        return forgetting.forget(
            self, query, episode_id=episode_id, fact_id=fact_id, dry_run=dry_run
        )

    def purge_history(
        self, paths: Iterable[str], *, report: bool = False, query: str | None = None
    ) -> Any:
        """Rewrite the vault's git history so these files hold only what they hold now
        (deleted ones vanish from every commit), with every other file some commit of which
        holds forgotten text (the tombstones, and ``query``'s words); push it to the sync
        remote.  The number of files rewritten, or with ``report`` the
        :class:`memoryclaw.share.purge.PurgeReport`."""
        from . import forgetting

        return forgetting.purge_history(self, paths, report=report, query=query)

    def purge_blockers(self) -> list[str]:
        """Tracked files with uncommitted changes, which keep a history purge from running
        (after finishing a forget or a purge that was killed on its way)."""
        from . import forgetting

        return forgetting.purge_blockers(self)

    def problems(self) -> list[Skipped]:
        """Every vault file memoryclaw cannot use, with the reason (and line where known)."""
        from . import health

        return health.problems(self)

    def metrics(
        self,
        *,
        days: int | None = None,
        since: date | str | None = None,
        now: datetime | None = None,
    ) -> Metrics:
        """Recall metrics (:mod:`memoryclaw.recall.metrics`) over the last ``days`` UTC days, today
        included (default 7), or from the day ``since`` to today; with the facts pending
        review, the conflicts among them and the episodes archived, as they are now."""
        from . import health

        return health.metrics(self, days=days, since=since, now=now)

    def stats(
        self,
        *,
        days: int | None = None,
        since: date | str | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Counts and sizes of the vault and its index, and the recall metrics over a window
        (see :meth:`metrics`) as ``metrics``."""
        from . import health

        return health.stats(self, days=days, since=since, now=now)

    def doctor(self) -> list[dict[str, str]]:
        """Configuration, dependency and index health checks: ``{check, status, detail}``."""
        from . import health

        return health.doctor(self)
