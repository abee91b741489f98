"""Team vaults: other vaults this one searches after its own, and never writes.

``sharedVaults`` in ``memoryclaw.yaml`` lists them, typically clones of a team's repository.
Each has a derived index kept in *this* vault (``.memoryclaw/shared/<name>.db``, with its
lock beside it), brought up to date from the team vault's files as the own index is; nothing
is ever written into a team vault: no index, lock, recall note or metric.

Their results carry ``vault: <name>``, and ids and paths qualified by the name
(``team:ep-20250408-…``, ``team:episodes/….md``): a result says where it came from, and
reading it back (``get``, ``read``) goes to the right vault.  A command that would change a
team memory is refused with :class:`~memoryclaw.errors.ReadOnlyVaultError`.  ``sync`` pulls
them, fast-forward only: a team vault changes through its own repository alone.

Each vault ranks its own memories (a relevance of 1 is that vault's best match); the lists
are interleaved by relevance, each keeping its order, the own vault first on ties, then the
team vaults in the order listed.  The recall rules (``scopes``) apply to team memories as to
one's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError, ReadOnlyVaultError, warn
from ..index.store import Index
from ..index.update import SyncReport, is_stale, sync, sync_paths
from ..recall.results import EpisodeResult, FactResult, PassageHit, SearchResult, Withheld
from ..recall.retrieval import passage_neighbours, search
from ..vault.config import RecencySettings, SharedVault
from ..vault.files import STATE_DIR
from ..vault.scopes import Policy

if TYPE_CHECKING:
    import subprocess

SHARED_DIR = f"{STATE_DIR}/shared"
SEPARATOR = ":"
_PULL_SECONDS = 120

T = TypeVar("T")


def qualify(name: str, ident: str) -> str:
    """``team:ep-…``: an id or path of the team vault ``name`` as this vault shows it."""
    return f"{name}{SEPARATOR}{ident}"


@dataclass
class TeamPull:
    """What ``sync`` did to one team vault."""

    name: str
    pulled: int = 0
    files_changed: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "vault": self.name,
            "pulled": self.pulled,
            "files_changed": self.files_changed,
            "error": self.error,
        }


@dataclass
class TeamVault:
    """One team vault, read through an index this vault keeps for it."""

    name: str
    root: Path
    index_path: Path
    writable: bool  # whether this vault can be written (else the index lives in memory)
    _index: Index | None = field(default=None, repr=False)

    @property
    def index(self) -> Index:
        """The derived index, opened on first use."""
        if self._index is None:
            self._index = Index(self.index_path) if self.writable else Index(None, seed=None)
        return self._index

    def problem(self) -> str | None:
        """Why the team vault cannot be read now (not there, not a folder), else None."""
        if not self.root.exists():
            return f"{self.root} does not exist (clone the team repository there)"
        if not self.root.is_dir():
            return f"{self.root} is not a folder"
        return None

    def close(self) -> None:
        """Close the derived index."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def refresh(self, *, full: bool = False) -> SyncReport | None:
        """Bring the derived index up to date with the team vault's files (None: current)."""
        if full:
            self.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.index_path}{suffix}").unlink(missing_ok=True)
        index = self.index
        if full or index.rebuilt or is_stale(self.root, index):
            index.rebuilt = False
            return sync(self.root, index, full=full)
        return None

    def search(
        self,
        query: str,
        *,
        limit: int,
        now: datetime,
        policy: Policy | None,
        archived: bool,
        recency: RecencySettings,
    ) -> SearchResult:
        """Ranked memories of the team vault, labelled as its own (see the module doc)."""
        found = search(
            self.index,
            query,
            limit=limit,
            now=now,
            policy=policy,
            include_archived=archived,
            recency=recency,
            own_vault=False,
        )
        return label(found, self.name)

    def pull(self, seconds: float = _PULL_SECONDS) -> TeamPull:
        """Fast-forward the team vault's git clone to its upstream, then re-index what moved.

        Never merges, commits or pushes: a clone with local commits or no upstream is left as
        it is, and the report says why; so is one whose remote does not answer in time."""
        report = TeamPull(self.name)
        missing = self.problem()
        if missing is not None:
            report.error = missing
            return report
        if not (self.root / ".git").exists():
            report.error = "not a git repository: nothing to pull"
            return report
        if not _git(self.root, "rev-parse", "--abbrev-ref", "@{upstream}"):
            report.error = "its branch has no upstream to pull from (clone the team repository)"
            return report
        from .git import network_git  # a recall, which loads this module, runs no git

        before = _git(self.root, "rev-parse", "HEAD")
        done = network_git(self.root, seconds, "pull", "--ff-only", "--quiet", "--no-rebase")
        if done is None:
            report.error = f"its remote gave no answer within {seconds:g} s (sync.timeoutSeconds)"
            return report
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            reasons = [line for line in said if not line.startswith("hint:")] or said
            report.error = reasons[0] if reasons else f"git pull exited {done.returncode}"
            return report
        after = _git(self.root, "rev-parse", "HEAD")
        if before and after and before != after:
            report.pulled = int(_git(self.root, "rev-list", "--count", f"{before}..{after}") or 0)
            names = _git(self.root, "diff", "--name-only", "-z", before, after).split("\0")
            changed = [n for n in names if n]
            report.files_changed = len(changed)
            if sync_paths(self.root, self.index, changed) is None:
                sync(self.root, self.index)
        else:
            self.refresh()
        return report


def _git_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        timeout=_PULL_SECONDS,
        check=False,
    )


def _git(root: Path, *args: str) -> str:
    done = _git_run(root, *args)
    return done.stdout.strip() if done.returncode == 0 else ""


def team_vaults(root: Path, shared: Sequence[SharedVault], writable: bool) -> list[TeamVault]:
    """The team vaults ``sharedVaults`` lists for the vault at ``root``."""
    teams: list[TeamVault] = []
    own = root.resolve()
    for n, item in enumerate(shared):
        where = item.root(root)
        if where == own or own in where.parents or where in own.parents:
            raise ConfigError(
                root / "memoryclaw.yaml",
                f"sharedVaults[{n}].path",
                f"{where} is this vault, or holds it or lies in it: a team vault is another one",
            )
        index_path = root / SHARED_DIR / f"{item.name}.db"
        teams.append(TeamVault(item.name, where, index_path, writable))
    return teams


def owner_of(ident: str, teams: Sequence[TeamVault]) -> tuple[TeamVault, str] | None:
    """The team vault a qualified id or path (``team:…``) names, and the rest of it."""
    name, sep, rest = ident.partition(SEPARATOR)
    if not sep:
        return None
    for team in teams:
        if team.name == name:
            return team, rest
    return None


def refuse(teams: Sequence[TeamVault], action: str, *idents: str | None) -> None:
    """Raise :class:`ReadOnlyVaultError` when any of ``idents`` names a team memory."""
    for ident in idents:
        found = owner_of(ident, teams) if ident else None
        if found is not None:
            raise ReadOnlyVaultError(found[0].name, found[0].root, ident or "", action)


def holder_of(
    teams: Sequence[TeamVault], has: Callable[[Index, str], bool], ident: str
) -> TeamVault | None:
    """The first readable team vault whose index holds ``ident`` (an unqualified id)."""
    for team in readable(teams):
        if has(team.index, ident):
            return team
    return None


def readable(teams: Sequence[TeamVault]) -> Iterator[TeamVault]:
    """The team vaults that can be read now, each with an index (built on first use: kept
    current by :meth:`TeamVault.refresh`, which the own vault's refresh calls); the others
    are skipped with a warning (``doctor`` says why)."""
    for team in teams:
        problem = team.problem()
        if problem is not None:
            warn("memoryclaw.teams", "team vault %s skipped: %s", team.name, problem)
            continue
        if team.index.rebuilt:
            team.refresh()
        yield team


# ------------------------------------------------------------------ labels and merging


def label(result: SearchResult, name: str) -> SearchResult:
    """``result`` of the team vault ``name`` with every id and path qualified by the name."""
    return replace(
        result,
        results=tuple(_episode(e, name) for e in result.results),
        passages=tuple(label_passage(p, name) for p in result.passages),
        facts=tuple(
            replace(f, id=qualify(name, f.id), path=qualify(name, f.path), vault=name)
            for f in result.facts
        ),
        withheld=None
        if result.withheld is None
        else tuple(_withheld(w, name) for w in result.withheld),
    )


def _episode(episode: EpisodeResult, name: str) -> EpisodeResult:
    source = qualify(name, episode.source) if episode.source else episode.source
    return replace(
        episode,
        id=qualify(name, episode.id),
        path=qualify(name, episode.path),
        source=source,
        vault=name,
    )


def label_passage(passage: PassageHit, name: str) -> PassageHit:
    """A team vault's passage with its path and episode id qualified by the vault's name."""
    return replace(
        passage,
        path=qualify(name, passage.path),
        episode_id=qualify(name, passage.episode_id),
        vault=name,
    )


def unlabel_passage(passage: PassageHit) -> PassageHit:
    """The passage as the team vault's own index knows it."""
    if passage.vault is None:
        return passage
    cut = len(passage.vault) + len(SEPARATOR)
    return replace(
        passage, path=passage.path[cut:], episode_id=passage.episode_id[cut:], vault=None
    )


def team_neighbours(
    teams: Sequence[TeamVault], passages: Sequence[PassageHit]
) -> dict[tuple[str, int], list[PassageHit]]:
    """:func:`~memoryclaw.recall.retrieval.passage_neighbours` of team vault passages, each read
    from its own vault's index and labelled as it."""
    out: dict[tuple[str, int], list[PassageHit]] = {}
    by_name = {team.name: team for team in teams}
    for passage in passages:
        team = by_name.get(passage.vault or "")
        if team is None:
            continue
        for (path, line), near in passage_neighbours(
            team.index, [unlabel_passage(passage)]
        ).items():
            out[(qualify(team.name, path), line)] = [label_passage(p, team.name) for p in near]
    return out


def _withheld(item: Withheld, name: str) -> Withheld:
    return replace(item, id=qualify(name, item.id), path=qualify(name, item.path), vault=name)


def merge(own: SearchResult, teams: Sequence[SearchResult], limit: int) -> SearchResult:
    """One result of the own vault's and the team vaults' (see the module doc)."""
    if not teams:
        return own
    every = [own, *teams]
    facts = _interleave([r.facts for r in every], lambda f: f.relevance)
    seen: set[tuple[str, str, str]] = set()
    unique: list[FactResult] = []
    for fact in facts:  # the same value in two vaults is shown once: the first vault's
        key = (fact.entity.lower(), fact.field.lower(), fact.value)
        if key not in seen:
            seen.add(key)
            unique.append(fact)
    withheld = None
    if own.withheld is not None:
        withheld = tuple(w for r in every for w in (r.withheld or ()))
    return replace(
        own,
        results=tuple(_interleave([r.results for r in every], lambda e: e.relevance)[:limit]),
        facts=tuple(unique[: max(len(own.facts), limit * 2)]),
        passages=tuple(_interleave([r.passages for r in every], lambda p: p.relevance)),
        took_ms=sum(r.took_ms for r in every),
        withheld=withheld,
    )


def _interleave(lists: Sequence[Sequence[T]], key: Callable[[T], float]) -> list[T]:
    """Merge lists each already in its own order: the head of highest ``key`` next, the
    earlier list on ties; no list's order changes."""
    heads = [0] * len(lists)
    out: list[T] = []
    while True:
        best: tuple[float, int] | None = None
        for n, items in enumerate(lists):
            if heads[n] < len(items):
                value = key(items[heads[n]])
                if best is None or value > best[0]:
                    best = (value, n)
        if best is None:
            return out
        chosen = best[1]
        out.append(lists[chosen][heads[chosen]])
        heads[chosen] += 1
