"""Forgetting through the facade: memories taken out of the files and the index, a killed forget
finished, and the git history purged of what was forgotten."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import ExternalToolError, InvalidInputError, NotFoundError, ReadOnlyVaultError
from ..index.update import sync
from ..share.history import commit_journal, is_repository, journal
from ..share.teams import holder_of, qualify, refuse
from ..vault.files import CONSOLIDATE_LOCK, file_lock, safe_relpath
from ..vault.naming import plural
from . import indexing

if TYPE_CHECKING:
    from .vault import Vault


FORGET_WAIT_SECONDS = 120.0  # a consolidation or sync under way finishes first


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
    # team vaults (read-only here) holding what a query matches: each one's name, folder,
    # count and files; recall still finds those memories until they are forgotten there
    elsewhere: tuple[dict[str, Any], ...] = ()

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
            "elsewhere": list(self.elsewhere),
        }


def forget(
    vault: Vault,
    query: str | None = None,
    *,
    episode_id: str | None = None,
    fact_id: str | None = None,
    dry_run: bool = False,
) -> ForgetReport:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.forget`."""
    chosen = [x for x in (query, episode_id, fact_id) if x is not None]
    if len(chosen) != 1:
        raise InvalidInputError("forget", "give exactly one of a query, an episode id or a fact id")
    refuse(vault.teams, "forget", episode_id, fact_id)
    vault.refresh()
    if dry_run:
        return _forget(vault, query, episode_id, fact_id, dry_run=True)
    # alone with consolidation and sync: they write (and commit) the same files
    with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=FORGET_WAIT_SECONDS):
        _finish_forget(vault)
        return _forget(vault, query, episode_id, fact_id, dry_run=False)


def _forget(
    vault: Vault, query: str | None, episode_id: str | None, fact_id: str | None, *, dry_run: bool
) -> ForgetReport:
    from ..share import forget as share_forget

    elsewhere: tuple[dict[str, Any], ...] = ()
    if episode_id is not None:
        episode_rows = vault.index.episode_rows("id = ?", [episode_id])
        if not episode_rows:
            _refuse_unqualified(vault, episode_id, "forget", "episode")
            raise NotFoundError("episode", episode_id)
        todo = share_forget.plan_ids(vault.root, vault.index, episode_rows)
    elif fact_id is not None:
        fact_rows = vault.index.fact_rows("id = ?", [fact_id])
        if not fact_rows:
            _refuse_unqualified(vault, fact_id, "forget", "fact")
            raise NotFoundError("fact", fact_id)
        fact_rows += _history_of(vault, fact_rows)
        todo = share_forget.plan_facts(vault.root, vault.index, fact_rows)
    else:
        assert query is not None
        from ..vault.words import extract_keywords

        # Keywords only: forgetting must never reach what merely resembles the query.
        keywords = extract_keywords(query)
        todo = share_forget.plan_query(vault.root, vault.index, keywords)
        elsewhere = _in_team_vaults(vault, keywords)
    commit = stone = None
    if not dry_run and todo.edits:
        use_git = vault.settings.git.auto_commit and is_repository(vault.root)
        note = partial(journal, vault.root) if use_git else None
        stone = share_forget.apply(vault.root, todo, note)
        commit = _forget_committed(vault, use_git, _forget_message(todo))
    turns = sum(len(e.turns) for e in todo.edits)
    return ForgetReport(
        episodes=tuple(todo.episodes[p] for p in sorted(todo.episodes)),
        facts=tuple(todo.fact_ids),
        files_deleted=tuple(todo.deleted()),
        files_edited=tuple(todo.edited()),
        dry_run=dry_run,
        commit=commit,
        in_history=is_repository(vault.root),
        changes=tuple(e.as_dict() for e in todo.edits),
        removed=todo.count(),
        turns=turns,
        tombstones=stone,
        elsewhere=elsewhere,
    )


def _in_team_vaults(vault: Vault, keywords: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """What of ``keywords`` each readable team vault holds: a forget changes only this
    vault, so the user is told where the rest still is (nothing there is written)."""
    from ..share import forget as share_forget
    from ..share.teams import readable

    found = []
    for team in readable(vault.teams):
        there = share_forget.plan_query(team.root, team.index, keywords)
        if count := there.count():
            files = sorted({*there.deleted(), *there.edited()})
            found.append(
                {"vault": team.name, "root": str(team.root), "count": count, "files": files}
            )
    return tuple(found)


def _forget_message(todo: Any) -> str:
    """A commit message that names no forgotten file (a file name can tell what it held)."""
    whole = sum(1 for e in todo.edits if e.whole)
    facts = plural(len(todo.fact_ids), "fact")
    head = f"memoryclaw: forget {plural(whole, 'episode')} and {facts}"
    edited = [f"edited {p}" for p in todo.edited() if p.startswith(("semantic/", "logs/"))]
    removed = plural(todo.count(), "line, turn and fact", "lines, turns and facts")
    return "\n".join([head, "", removed, *edited])


def _forget_committed(vault: Vault, use_git: bool, message: str) -> str | None:
    """Bring the index up to date with a forget (its deleted words gone from the index
    file's bytes too), commit it, and drop its journal; the commit's sha."""
    from ..share import forget as share_forget

    indexing.update_episode_vectors(vault, sync(vault.root, vault.index))
    vault.index.forget_deleted()
    commit = commit_journal(vault.root, message) if use_git else None
    share_forget.done(vault.root)
    return commit


def finish_interrupted_forget(vault: Vault) -> None:
    """Before a consolidation or sync: finish a forget (or a history purge) that was
    killed on its way."""
    from ..share import forget as share_forget
    from ..share.purge import PURGING

    if share_forget.interrupted(vault.root) is not None or (vault.root / PURGING).exists():
        with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=FORGET_WAIT_SECONDS):
            _finish_forget(vault)


def _finish_forget(vault: Vault) -> str | None:
    """Finish (or roll back) a forget that was killed on its way; its commit's sha.
    Called with the consolidation lock held."""
    from ..share import forget as share_forget
    from ..share.purge import recover

    if is_repository(vault.root):
        recover(vault.root)  # a killed rewrite left the index at the old history
    if share_forget.interrupted(vault.root) is None:
        return None
    use_git = vault.settings.git.auto_commit and is_repository(vault.root)
    share_forget.finish(vault.root, partial(journal, vault.root) if use_git else None)
    message = "memoryclaw: forget (finished after an interruption)"
    return _forget_committed(vault, use_git, message)


def _refuse_unqualified(vault: Vault, ident: str, action: str, kind: str) -> None:
    """Refuse ``action`` on ``ident`` when not this vault but a team vault holds it."""
    table = {"episode": "episode_rows", "fact": "fact_rows"}[kind]
    team = holder_of(
        vault.teams, lambda index, i: bool(getattr(index, table)("id = ?", [i])), ident
    )
    if team is not None:
        raise ReadOnlyVaultError(team.name, team.root, qualify(team.name, ident), action)


def _history_of(vault: Vault, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The superseded values of the facts in ``rows`` (forgetting a fact forgets what it
    replaced: search finds only current values)."""
    ids = {row["id"] for row in rows}
    out: list[dict[str, Any]] = []
    for entity, name in sorted({(row["entity"], row["field"]) for row in rows}):
        for row in vault.index.fact_rows(
            "lower(entity) = lower(?) AND field = ? AND superseded = 1", [entity, name]
        ):
            if row["id"] not in ids:
                ids.add(row["id"])
                out.append(row)
    return out


def purge_history(
    vault: Vault, paths: Iterable[str], *, report: bool = False, query: str | None = None
) -> Any:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.purge_history`."""
    paths = list(paths)
    refuse(vault.teams, "purge-history", *paths)
    if not is_repository(vault.root):
        raise ExternalToolError("git", f"{vault.root} is not a git repository")
    from ..share.forget import matcher_for
    from ..share.purge import purge
    from ..vault.words import extract_keywords

    keywords = extract_keywords(query) if query else []
    match, terms = matcher_for(vault.root, keywords)
    remote = vault.settings.sync.remote or None
    with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=FORGET_WAIT_SECONDS):
        done = purge(
            vault.root,
            [safe_relpath(p) for p in paths],
            match,
            terms=terms,
            remote=remote,
            seconds=vault.settings.sync.timeout_seconds,
        )
    return done if report else done.files


def purge_blockers(vault: Vault) -> list[str]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.purge_blockers`."""
    from ..share.purge import blockers

    if not is_repository(vault.root):
        return []
    finish_interrupted_forget(vault)
    with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=FORGET_WAIT_SECONDS):
        return blockers(vault.root)


def keep_forgotten(vault: Vault) -> None:
    """After an import: take out again whatever it brought back that was forgotten
    (the tombstones in ``semantic/_forgotten/``), from the files and the index."""
    from ..share import forget as share_forget

    with file_lock(vault.root, CONSOLIDATE_LOCK, timeout=FORGET_WAIT_SECONDS):
        if share_forget.reapply(vault.root, share_forget.memory_files(vault.root)):
            vault.refresh()
            vault.index.forget_deleted()
