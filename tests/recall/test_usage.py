"""Recall times: noted in the index per retrieve (recall.json untouched), adopted from an
existing recall.json, kept across index rebuilds, and read by archiving as before."""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memoryclaw import Vault
from memoryclaw.recall import usage
from memoryclaw.recall.usage import RECALL_FILE, RECALL_LOG, RecallLog, load_recalls, save_recalls

DAYS = 30
ON = {"MEMORYCLAW_CONSOLIDATION_ARCHIVEAFTERDAYS": str(DAYS)}
T0 = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
QUERY = "what did I email John about"
DENTIST = "ep-20250115-194002-dentist-appointment"


def _noted(vault: Vault) -> dict[str, datetime]:
    recalls = load_recalls(vault.root, vault.index)
    assert recalls is not None
    return recalls.last


def test_a_retrieve_appends_its_recalls_and_rewrites_no_file(vault: Vault) -> None:
    """Neither recall.json nor the index is written per recall (each would be synced): past
    the first note, which starts noting, the notes go to the end of the recall log, and are
    folded into the index when read."""
    ids = [e.id for e in vault.retrieve(QUERY, now=T0).episodes]
    assert ids and vault.index.recall_times(ids) == dict.fromkeys(ids, T0.timestamp())
    vault._noted.clear()  # as a new process would
    later = T0 + timedelta(days=1)
    vault.retrieve(QUERY, now=later)
    assert not (vault.root / RECALL_FILE).exists()
    assert vault.index.recall_times(ids) == dict.fromkeys(ids, T0.timestamp())  # untouched
    assert (vault.root / RECALL_LOG).stat().st_size > 0
    assert {i: _noted(vault)[i] for i in ids} == dict.fromkeys(ids, later)  # read: folded
    assert vault.index.recall_times(ids) == dict.fromkeys(ids, later.timestamp())
    assert (vault.root / RECALL_LOG).stat().st_size == 0


def test_the_recall_log_is_folded_when_long_and_loses_nothing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(usage, "FOLD_BYTES", 300)
    moments = [T0 + timedelta(minutes=n) for n in range(12)]
    for n, moment in enumerate(moments):
        usage.note_recalled(vault.root, vault.index, [f"ep-{n % 5}", "ep-always"], moment)
        assert (vault.root / RECALL_LOG).stat().st_size <= 300 + 200
    assert vault.index.recall_times()  # folded on the way
    times = usage.recall_times(vault.root, vault.index)
    assert times["ep-always"] == moments[-1]
    assert times["ep-1"] == moments[11 - (11 - 1) % 5]
    recalls = load_recalls(vault.root, vault.index)
    assert recalls is not None and recalls.since == T0
    assert recalls.last == {
        **{f"ep-{n}": moments[n + 5 * ((11 - n) // 5)] for n in range(5)},
        "ep-always": moments[-1],
    }


def test_a_later_recall_wins_and_an_earlier_one_is_ignored(vault: Vault) -> None:
    ident = vault.retrieve(QUERY, now=T0).episodes[0].id
    vault._noted.clear()  # as a new process would
    vault.retrieve(QUERY, now=T0 + timedelta(days=2))
    vault._noted.clear()
    vault.retrieve(QUERY, now=T0 + timedelta(days=1))
    assert _noted(vault)[ident] == T0 + timedelta(days=2)
    recalls = load_recalls(vault.root, vault.index)
    assert recalls is not None and recalls.since == T0


def test_an_existing_recall_json_is_adopted_and_archiving_decides_as_before(
    vault_dir: Path,
) -> None:
    """A vault noted by an older version: its recall.json is taken into the index, so the
    episode it says was recalled lately stays, and the others (as old) are archived."""
    since = T0 - timedelta(days=DAYS + 10)
    save_recalls(vault_dir, RecallLog(since, {DENTIST: T0 - timedelta(days=1)}))
    for path in (vault_dir / "episodes").rglob("*.md"):
        os.utime(path, (since.timestamp(), since.timestamp()))
    with Vault(vault_dir, env=ON) as vault:
        report = vault.archive(now=T0)
        moved = {m.id for m in report.moved}
        assert moved and DENTIST not in moved
        assert _noted(vault) == {DENTIST: T0 - timedelta(days=1)}
        recalls = load_recalls(vault.root, vault.index)
        assert recalls is not None and recalls.since == since


@pytest.mark.parametrize("how", ["reindex-full", "schema-change"])
def test_recall_times_outlive_a_rebuilt_index(vault_dir: Path, how: str) -> None:
    with Vault(vault_dir) as vault:
        recalled = {e.id for e in vault.retrieve(QUERY, now=T0).episodes}
        assert recalled and load_recalls(vault.root, vault.index)  # folded into the index
        if how == "reindex-full":
            vault.reindex(full=True)  # the index file deleted and built again
    if how == "schema-change":
        with sqlite3.connect(vault_dir / ".memoryclaw" / "index.db") as db:
            db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
        assert not (vault_dir / RECALL_FILE).exists()  # carried over by the rebuild itself
    with Vault(vault_dir) as vault:
        assert vault.index.file_count(1) == 0 or how == "reindex-full"
        assert _noted(vault) == dict.fromkeys(recalled, T0)
