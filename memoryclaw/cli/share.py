"""Moving memory between vaults: ``sync``, ``export`` and ``import``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..vault.naming import plural
from ._common import _emit, _one_line, _step, _vault

if TYPE_CHECKING:
    from ..share.sync import RemoteSyncReport


@click.command("sync")
@click.option("--setup", is_flag=True, help="First write .gitattributes (union merges of facts).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.option(
    "--accept-config",
    is_flag=True,
    help="Accept the memoryclaw.yaml keys a sync held (they apply from the next command); "
    "does not sync.",
)
@click.pass_context
def sync_command(ctx: click.Context, setup: bool, as_json: bool, accept_config: bool) -> None:
    """Sync the vault with its git remote: commit, fetch, merge, push, re-index."""
    if accept_config:
        accepted = _vault(ctx).accept_config()
        if as_json:
            _emit({"accepted": accepted})
        else:
            click.echo(f"accepted: {', '.join(accepted)}" if accepted else "nothing was held")
        return
    vault = _vault(ctx)
    with _step("syncing with the git remote (commit, fetch, merge, push, reindex)", as_json):
        report = vault.sync_remote(setup=setup)
    if as_json:
        _emit(report.as_dict())
        return
    for team in report.shared:
        name = team["vault"]
        if team["error"]:
            click.echo(_one_line(f"team vault {name}: not pulled: {team['error']}"), err=True)
        else:
            pulled, changed = team["pulled"], team["files_changed"]
            pulled, changed = plural(pulled, "commit"), plural(changed, "file")
            click.echo(f"team vault {name}: pulled {pulled}, {changed} changed")
    if not report.remote:
        click.echo("this vault is not a git repository: only its team vaults were pulled")
        return
    click.echo(
        f"synced with {report.remote}: pulled {plural(report.pulled, 'commit')},"
        f" pushed {report.pushed}, {plural(len(report.files_changed), 'file')} changed,"
        f" {plural(report.conflicts_resolved, 'conflict')} resolved ({report.duration_ms} ms)"
    )
    _echo_screening(report, "sync")


def _echo_screening(report: RemoteSyncReport, by: str) -> None:
    """On stderr, what a sync or an import (``by``) refused, repaired and held."""
    for refusal in report.refused:
        click.echo(
            _one_line(f"refused from {report.remote}: {refusal.path}: {refusal.reason}"), err=True
        )
    if report.config_changed:
        keys = ", ".join(report.config_changed)
        click.echo(_one_line(f"memoryclaw.yaml changed by the {by}: {keys}"), err=True)
    for repair in report.repaired:
        click.echo(_one_line(f"repaired {repair.path}: {repair.reason}"), err=True)
    if report.config_held:
        keys = ", ".join(held["key"] for held in report.config_held)
        click.echo(
            f"memoryclaw.yaml keys held at this device's values (the {by} changed them): {keys};"
            " review them (memoryclaw doctor) and run `memoryclaw sync --accept-config` to apply",
            err=True,
        )


@click.command("export")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, target: Path) -> None:
    """Write the vault's memory files to TARGET (.tar.gz)."""
    vault = _vault(ctx)
    with _step(f"writing the memory files to {target}", False):
        count = vault.export_archive(target)
    click.echo(f"exported {plural(count, 'file')} to {target}")


@click.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
@click.pass_context
def import_command(ctx: click.Context, source: Path, as_json: bool) -> None:
    """Merge an exported SOURCE (.tar.gz) into this git vault, as a sync merges."""
    vault = _vault(ctx)
    with _step(f"merging {source} into the vault (as a sync merges)", as_json):
        report = vault.import_archive(source)
    if as_json:
        _emit(report.as_dict())
        return
    click.echo(
        f"imported {source}: {plural(len(report.files_changed), 'file')} changed,"
        f" {plural(report.conflicts_resolved, 'conflict')} resolved"
    )
    _echo_screening(report, "import")
