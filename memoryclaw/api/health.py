"""The vault's health through the facade: audit, problems, recall metrics, stats and the
doctor's checks."""

from __future__ import annotations

import importlib.util
import sqlite3
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import EmbeddingError, InvalidInputError, MemoryclawError
from ..index.embeddings import embedder_name
from ..recall import metrics as recall_metrics
from ..vault.config import CONFIG_FILE
from ..vault.files import ARCHIVE_DIR, STATE_DIR, VAULT_FOLDERS, Skipped, daemon_running
from ..vault.naming import plural
from ..vault.rawlogs import held_back_logs, unprocessed_logs
from ..vault.scanning import disk_usage, scan
from ..vault.timestamps import now_utc, utc_iso
from .opening import INDEX_FILE

if TYPE_CHECKING:
    from .vault import Vault


READ_ONLY_NOTE = (
    "the vault cannot be written: each command keeps the index in memory, brought up to date "
    "from the files; reading works, logging and consolidation need write access"
)


def _has_fts5() -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def audit(vault: Vault, *, days: int = 7, now: datetime | None = None) -> dict[str, Any]:
    """Episodes and machine-written facts added in the last ``days`` days, for review."""
    if not 0 <= days <= recall_metrics.MAX_WINDOW_DAYS:  # a billion days overflowed
        limit = recall_metrics.MAX_WINDOW_DAYS
        raise InvalidInputError("days", f"must be from 0 to {limit}, got {days}")
    vault.refresh()
    moment = now or now_utc()
    since = moment - timedelta(days=days)
    episodes = vault.index.episode_rows("ts_epoch >= ?", [int(since.timestamp())])
    facts = vault.index.fact_rows("source != 'hand' AND updated >= ?", [since.strftime("%Y-%m-%d")])
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
        "errors": [{"path": p.path, "reason": p.reason, "line": p.line} for p in vault.problems()],
    }


def problems(vault: Vault) -> list[Skipped]:
    """Every vault file memoryclaw cannot use, with the reason (and line where known)."""
    vault.refresh()
    skipped = scan(vault.root).skipped
    found = [Skipped(path, reason, line) for path, reason, line in vault.index.errors()]
    reported = {s.path for s in found}  # a raw log is indexed too: report it once
    found += [s for s in held_back_logs(vault.root) if s.path not in reported]
    found += _duplicate_ids(vault)
    return sorted([*found, *skipped], key=lambda s: (s.path, s.line or 0))


def _duplicate_ids(vault: Vault) -> list[Skipped]:
    """Episodes that share an id with another file (``forget --episode`` takes them all)."""
    rows = vault.index.execute(
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
    vault: Vault,
    *,
    days: int | None = None,
    since: date | str | None = None,
    now: datetime | None = None,
) -> recall_metrics.Metrics:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.metrics`."""
    first, last = recall_metrics.window(recall_metrics.day_of(now or now_utc()), days, since)
    vault.refresh()
    recorded = recall_metrics.read_days(vault.root)
    from ..vault.pending import pending_facts

    pending = pending_facts(vault.root)
    lowest, highest = ARCHIVE_DIR + "/", ARCHIVE_DIR + "0"
    archived = vault.index.episode_rows("path >= ? AND path < ?", [lowest, highest], "path")
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
    vault: Vault,
    *,
    days: int | None = None,
    since: date | str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """``vault``'s :meth:`~memoryclaw.api.vault.Vault.stats`."""
    metrics = vault.metrics(days=days, since=since, now=now)
    counts = vault.index.counts()
    db = vault.root / STATE_DIR / INDEX_FILE
    index_bytes = sum(
        p.stat().st_size for p in (db, db.with_name(INDEX_FILE + "-wal")) if p.exists()
    )
    vault_bytes = disk_usage(vault.root, frozenset({STATE_DIR, ".git"}))
    logs = unprocessed_logs(vault.root)
    return {
        "vault": str(vault.root),
        "episodes": counts["episodes"],
        "facts": counts["facts"],
        "aliases": counts["aliases"],
        "tags": counts["distinct_tags"],
        "files_indexed": counts["files"] - counts["errors"],
        "files_with_errors": counts["errors"],
        "logs_unprocessed": len(logs),
        "logs_open": sum(1 for log in logs if not log.meta.get("closed")),
        "logs_held_back": len(held_back_logs(vault.root)),
        "skills": len(list((vault.root / "skills").glob("*/SKILL.md"))),
        "top_tags": [{"tag": t, "count": n} for t, n in vault.index.top_tags(10)],
        "vault_bytes": vault_bytes,
        "index_bytes": index_bytes,
        "metrics": metrics.as_dict(),
    }


def doctor(vault: Vault) -> list[dict[str, str]]:
    """Configuration, dependency and index health checks: ``{check, status, detail}``."""
    checks: list[dict[str, str]] = []

    def add(check: str, status: str, detail: str) -> None:
        checks.append({"check": check, "status": status, "detail": detail})

    add("version", "ok", f"memoryclaw {__version__}")
    from ..vault.configfile import LAST_VALID_FILE, config_file_problem

    bad_config = config_file_problem(vault.root)
    add(
        "config",
        "error" if bad_config else "ok",
        f"{bad_config} (commands use the last valid copy, {LAST_VALID_FILE}, until fixed)"
        if bad_config
        else f"{vault.root / CONFIG_FILE} valid"
        if (vault.root / CONFIG_FILE).exists()
        else "no memoryclaw.yaml; defaults apply",
    )
    from ..vault.configfile import held_config

    for key, pair in sorted(held_config(vault.root).items()):
        add(
            "config held",
            "warn",
            f"{key}: a sync brought {pair['incoming']!r}; this device keeps"
            f" {pair['trusted']!r} until `memoryclaw sync --accept-config`",
        )
    missing = [f for f in VAULT_FOLDERS if not (vault.root / f).is_dir()]
    add(
        "folders",
        "warn" if missing else "ok",
        f"missing: {', '.join(missing)}" if missing else "all present",
    )
    for team in vault.teams:
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
        report = vault.refresh()
        problems = vault.index.integrity_problems()
        add(
            "index",
            "error" if problems else "ok",
            "; ".join(problems) or f"{plural(vault.index.counts()['episodes'], 'episode')} indexed",
        )
        if report is not None:
            add(
                "sync",
                "ok",
                "index was stale; synced"
                f" {plural(len(report.added) + len(report.changed), 'file')}",
            )
        if vault.index.path is None:
            add("index", "warn", READ_ONLY_NOTE)
    except (MemoryclawError, sqlite3.DatabaseError) as exc:
        add("index", "error", f"{exc} (run `memoryclaw reindex --full`)")
        return checks
    for problem in vault.problems():
        line = f":{problem.line}" if problem.line else ""
        add("file", "warn", f"{problem.path}{line}: {problem.reason}")
    add("consolidation", *_consolidation_check(vault))
    unscoped = vault.index.unscoped_counts()
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
    if vault.settings.llm.provider == "ollama":
        from ..consolidate.llm import ollama_status

        add("llm", *ollama_status(vault.settings.llm))
    for status, detail in _vector_checks(vault):
        add("vector", status, detail)
    git_dir = (vault.root / ".git").exists()
    add(
        "git",
        "ok" if git_dir else "info",
        "vault is a git repository" if git_dir else "not a git repository (memoryclaw init --git)",
    )
    if git_dir:
        from ..share.gitrules import ignored_memory_folders, local_problems

        hidden = ignored_memory_folders(vault.root)
        if hidden:
            why = "git ignores memory files there: they are neither committed nor synced"
            add("git ignore", "error", f"{', '.join(hidden)}: {why} (see .gitignore)")
        for name, line, why in local_problems(vault.root):
            add("git files", "error", f"{name}: {line!r} {why} (the next sync removes it)")
    return checks


def _consolidation_check(vault: Vault) -> tuple[str, str]:
    """``doctor``'s line on consolidation: whether a daemon runs, and what waits for it.
    Without one nothing turns the logs into episodes and facts: they stay searchable as
    recent turns, but no fact, standing instruction or preference is filed from them."""
    from ..consolidate.pipeline import is_closed

    idle = timedelta(minutes=vault.settings.consolidation.session_idle_minutes)
    now = now_utc()
    waiting = sum(1 for log in unprocessed_logs(vault.root) if is_closed(log, idle, now))
    if daemon_running(vault.root):
        return "ok", f"daemon running; {plural(waiting, 'closed log')} waiting"
    if waiting:
        return (
            "warn",
            f"{plural(waiting, 'closed log')} waiting and no daemon running: start"
            " `memoryclaw daemon` (or run `memoryclaw consolidate`); until then no episode,"
            " fact or standing instruction is made from them",
        )
    return "info", "no daemon running: logs are consolidated by `memoryclaw consolidate` only"


def _vector_checks(vault: Vault) -> list[tuple[str, str]]:
    """``doctor``'s lines on the vector fallback: off, or extra, embedder and coverage."""
    if vault.settings.retrieval.fallback != "vector":
        return [
            (
                "info",
                "vector fallback off: keyword retrieval only (to enable set "
                "retrieval.fallback: vector and install pip install "
                "'memoryclaw[local-embeddings]' for embeddings.provider: "
                "sentence-transformers, or 'memoryclaw[ollama]' for ollama)",
            )
        ]
    provider = vault.settings.embeddings.provider
    extra = "ollama" if provider == "ollama" else "local-embeddings"
    modules = ("ollama" if provider == "ollama" else "sentence_transformers", "numpy")
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing and vault._embedder is None:
        fix = f"pip install 'memoryclaw[{extra}]'"
        return [("warn", f"fallback on but {', '.join(missing)} missing ({fix})")]
    lines: list[tuple[str, str]] = []
    try:
        embedder = vault._get_embedder()
        dims = embedder.embed(["memoryclaw doctor"]).shape[1]
        lines.append(("ok", f"embedder {embedder.name} answers ({dims} dimensions)"))
    except EmbeddingError as exc:
        lines.append(("warn", f"{exc} (keyword search still works)"))
    name = vault._embedder.name if vault._embedder is not None else embedder_name(vault.settings)
    have, total = vault.index.vector_coverage(name)
    fix = "" if have == total else " (run `memoryclaw reindex` once the embedder answers)"
    status = "ok" if have == total else "warn"
    lines.append((status, f"{have} of {total} episodes have current vectors from {name}{fix}"))
    return lines
