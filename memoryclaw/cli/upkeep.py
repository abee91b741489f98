"""Keeping a vault in shape: ``init``, ``consolidate``, ``archive``, ``reindex``, ``stats``,
``doctor``, ``audit`` and ``daemon``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..api import Vault
from ..vault.config import resolve_vault_path
from ..vault.naming import plural
from ..vault.timestamps import now_utc, utc_iso
from ._common import _emit, _one_line, _step, _vault

if TYPE_CHECKING:
    from ..consolidate.archive import ArchiveReport
    from ..consolidate.report import ConsolidationReport


@click.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--git", is_flag=True, help="Also make the vault a git repository.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def init(ctx: click.Context, path: Path | None, git: bool, as_json: bool) -> None:
    """Create a vault (folders, memoryclaw.yaml, .gitignore)."""
    target = path or resolve_vault_path(ctx.find_root().obj)
    with Vault.init(target, git=git) as vault:
        if as_json:
            repository = (vault.root / ".git").exists()
            _emit({"vault": str(vault.root), "git": repository, "commit": vault.init_commit})
            return
        click.echo(f"vault ready at {vault.root}")
        if vault.init_commit:
            first = vault.init_commit[:10]
            click.echo(f"committed the vault's files as {first} (the first commit)")


@click.command()
@click.option("--all", "all_logs", is_flag=True, help="Every unprocessed log, closed or not.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def consolidate(ctx: click.Context, all_logs: bool, as_json: bool) -> None:
    """Turn closed raw logs into episodes and facts; print what changed."""
    vault = _vault(ctx)
    which = "every unprocessed log" if all_logs else "closed logs"
    with _step(f"consolidating {which}", as_json):
        report = vault.consolidate(all_logs=all_logs)
    if as_json:
        _emit(report.as_dict())
        return
    _print_consolidation(report, vault.settings.consolidation.session_idle_minutes)


def _print_consolidation(report: ConsolidationReport, idle_minutes: int) -> None:
    click.echo(
        f"{plural(report.logs_read, 'log')} -> {plural(len(report.episodes), 'episode')}, "
        f"{plural(report.facts_added, 'fact')} added ({report.facts_refreshed} refreshed), "
        f"{report.pending} pending, {plural(report.conflicts, 'conflict')}, "
        f"{plural(len(report.skills_suggested), 'skill')} suggested,"
        f" in {report.took_ms / 1000:.2f}s"
    )
    for path in report.episodes:
        click.echo(f"  + {path}")
    for skip in report.skipped:
        at = f":{skip.line}" if skip.line else ""
        click.echo(_one_line(f"  skipped {skip.path}{at}: {skip.reason}"))
    if report.commit:
        click.echo(f"committed {report.commit[:10]}")
    if report.logs_deleted:
        click.echo(f"deleted {plural(len(report.logs_deleted), 'processed log')} past retention")
    if report.left_open:
        click.echo(
            f"{plural(len(report.left_open), 'log')} left open: sessions active in the last"
            f" {plural(idle_minutes, 'minute')} (consolidation.sessionIdleMinutes);"
            " `consolidate --all` takes them now"
        )


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would move, move nothing.")
@click.option("--restore", "ident", metavar="ID", help="Move this archived episode back.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def archive(ctx: click.Context, dry_run: bool, ident: str | None, as_json: bool) -> None:
    """Move episodes unused for consolidation.archiveAfterDays to episodes/archive/YYYY/."""
    if ident is not None and dry_run:
        raise click.UsageError("--restore moves one episode back: it has no --dry-run")
    vault = _vault(ctx)
    report = vault.restore(ident) if ident is not None else vault.archive(dry_run=dry_run)
    if as_json:
        _emit(report.as_dict())
        return
    _print_archive(report)


def _print_archive(report: ArchiveReport) -> None:
    if report.action == "restore":
        done = f"restored {report.moved[0].id}" if report.moved else "not archived: nothing to do"
        click.echo(done)
    elif report.after_days == 0:
        click.echo("archiving is off (consolidation.archiveAfterDays: 0): no episode moves")
    else:
        verb = "would archive" if report.dry_run else "archived"
        click.echo(
            f"{verb} {plural(len(report.moved), 'episode')} unused for"
            f" {plural(report.after_days, 'day')}"
            " (not recalled, edited or dated since)"
        )
        if report.unused_from and report.unused_from > utc_iso(now_utc()):
            click.echo(
                f"  nothing counts as unused before {report.unused_from[:10]},"
                f" {plural(report.after_days, 'day')} after recalls began to be noted"
            )
    for move in report.moved:
        click.echo(f"  {move.source} -> {move.target}")
    for path in report.settled:
        verb = "would remove" if report.dry_run else "removed"
        click.echo(f"  {verb} {path}: a copy of its active episode (an interrupted run)")
    for conflict in report.conflicts:
        click.echo(_one_line(f"  left {conflict.path}: {conflict.reason}"), err=True)
    if report.commit:
        click.echo(f"committed {report.commit[:10]}")


@click.command()
@click.option("--full", is_flag=True, help="Delete the index and rebuild it from the files.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def reindex(ctx: click.Context, full: bool, as_json: bool) -> None:
    """Bring the index up to date with the vault."""
    vault = _vault(ctx)
    if sys.stderr.isatty() and not as_json:
        with _Bar("indexing") as files, _Bar("embedding", after=files) as vectors:
            report = vault.reindex(full=full, progress=files, embed_progress=vectors)
    else:
        report = vault.reindex(full=full)
    if as_json:
        _emit(report.as_dict())
        return
    click.echo(
        f"{len(report.added)} added, {len(report.changed)} changed, {len(report.deleted)} deleted,"
        f" {len(report.moved)} moved, {report.unchanged} unchanged in {report.took_ms:.0f} ms"
    )
    if report.embedded:
        click.echo(f"{plural(report.embedded, 'episode')} embedded for the vector fallback")
    if report.vector_error:
        click.echo(_one_line(f"vectors not updated: {report.vector_error}"), err=True)
    for skipped in report.skipped:
        line = f":{skipped.line}" if skipped.line else ""
        click.echo(_one_line(f"skipped {skipped.path}{line}: {skipped.reason}"), err=True)


class _Bar:
    """A progress bar on stderr that appears with its first step (nothing to do: no bar);
    ``after`` is the bar of the phase before, finished when this one starts."""

    def __init__(self, label: str, after: _Bar | None = None) -> None:
        self.label = label
        self.after = after
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if self.after is not None:
                self.after.close()
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.length = total
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        """Finish the bar's line."""
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@click.command()
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=7,
    show_default=True,
    help="Recall metrics over the last N days, today included.",
)
@click.option("--since", metavar="YYYY-MM-DD", help="Recall metrics from this day to today.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def stats(ctx: click.Context, days: int, since: str | None, as_json: bool) -> None:
    """Counts, sizes and index health, and recall metrics over a window."""
    data = _vault(ctx).stats(days=days, since=since)
    if as_json:
        _emit(data)
        return
    metrics = data.pop("metrics")
    for key, value in data.items():
        if key == "top_tags":
            value = ", ".join(f"{t['tag']} ({t['count']})" for t in value) or "-"
        click.echo(f"{key:18} {value}")
    _echo_metrics(metrics)


def _echo_metrics(m: dict[str, Any]) -> None:
    """The readable block of ``stats``: recall metrics over their window."""
    rows = [
        ("recall metrics", f"{m['since']} to {m['until']} (UTC days)"),
        (
            "  recalls",
            f"{m['recalls']}; tokens injected {m['tokens_injected_mean']:,.0f} mean,"
            f" {m['tokens_injected_max']:,} max, {m['tokens_injected']:,} in all;"
            f" {m['recall_failures']} failed (the turn went on without memory)",
        ),
        (
            "  transcript",
            f"~{m['transcript_tokens']:,} tokens stood for; {m['tokens_saved']:,} tokens saved",
        ),
        (
            "  skipped",
            f"{plural(m['trivial_skipped'], 'trivial message')};"
            f" {plural(m['below_threshold'], 'result')} below retrieval.minScore",
        ),
        ("  review", f"{plural(m['pending'], 'fact')} pending, {m['conflicts']} in conflict"),
        (
            "  archive",
            f"{plural(m['archived'], 'episode')} archived in the window,"
            f" {m['episodes_archived']} now",
        ),
    ]
    for key, value in rows:
        click.echo(f"{key:18} {value}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Configuration, dependency and index checks (exit 1 when one fails)."""
    from ..serve.openclaw import doctor_checks

    vault = _vault(ctx)
    checks = vault.doctor() + doctor_checks(vault_root=vault.root)
    if as_json:
        _emit({"checks": checks, "ok": all(c["status"] != "error" for c in checks)})
    else:
        for check in checks:
            click.echo(_one_line(f"[{check['status']:>5}] {check['check']}: {check['detail']}"))
    if any(c["status"] == "error" for c in checks):
        sys.exit(1)


@click.command()
@click.option(
    "--days", type=click.IntRange(min=0), default=7, show_default=True, help="How far back."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def audit(ctx: click.Context, days: int, as_json: bool) -> None:
    """Recently added episodes and machine-written facts, and files that could not be read."""
    data = _vault(ctx).audit(days=days)
    if as_json:
        _emit(data)
        return
    click.echo(f"since {data['since']}:")
    for episode in data["episodes"]:
        click.echo(
            f"  episode {episode['timestamp'][:10]} [{episode['confidence']}]"
            f" {episode['summary']}  ({episode['id']})"
        )
    for fact in data["facts"]:
        click.echo(
            f"  fact {fact['entity']} {fact['field']} {fact['value']}"
            f" [{fact['confidence']}] {fact['path']}:{fact['line']}"
        )
    for error in data["errors"]:
        line = f":{error['line']}" if error["line"] else ""
        click.echo(_one_line(f"  unreadable {error['path']}{line}: {error['reason']}"))
    if not (data["episodes"] or data["facts"] or data["errors"]):
        click.echo("  nothing new")


@click.command()
@click.option("--once", is_flag=True, help="Consolidate and reindex once, then exit.")
@click.option("--json", "as_json", is_flag=True, help="With --once: print a JSON document.")
@click.pass_context
def daemon(ctx: click.Context, once: bool, as_json: bool) -> None:
    """Consolidate on schedule and keep the index in step with edits (one per vault)."""
    if as_json and not once:
        raise click.UsageError("--json needs --once (the running daemon logs to stderr)")
    from ..serve.daemon import Daemon

    runner = Daemon(resolve_vault_path(ctx.find_root().obj))
    if once:
        with _step("consolidating closed logs, then reindexing", as_json):
            report, synced = runner.run_once()
        if as_json:
            _emit({"consolidation": report.as_dict(), "reindex": synced.as_dict()})
            return
        _print_consolidation(report, runner.settings.consolidation.session_idle_minutes)
        click.echo(
            f"reindexed: {len(synced.added)} added, {len(synced.changed)} changed,"
            f" {len(synced.deleted)} deleted, {len(synced.moved)} moved in {synced.took_ms:.0f} ms"
        )
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s memoryclaw daemon: %(message)s", "%Y-%m-%d %H:%M:%S")
    )
    logger = logging.getLogger("memoryclaw.daemon")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    # Its "job skipped: already running" notices are the daemon working as designed.
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    # watchdog logs an error for events that arrive while its observer stops; nothing is lost
    # (the next search or daemon start syncs the index with the files), so it would only alarm.
    logging.getLogger("watchdog.observers.inotify").setLevel(logging.CRITICAL)
    try:
        runner.run_forever()
    finally:
        logger.removeHandler(handler)
