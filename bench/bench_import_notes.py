"""How long a re-run of ``import-notes`` takes per note when the vault already holds many
episodes: each note's episode is found by its ``source``.

    .venv/bin/python bench/bench_import_notes.py [--episodes 37000] [--sample 1000]

Writes ``--episodes`` notes (in folders of ``--sample``) and, for each, the episode a first
import makes of it (the importer's own code, without the lookups of a first import), indexes
the vault, then re-runs the import of one folder of ``--sample`` notes (nothing to add) and
prints the time per note and the peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memoryclaw import Vault
from memoryclaw.importers.filing import _write_new_episode, dated_note
from memoryclaw.importers.workspace import ImportReport

WORDS = "harbour valve lisbon falcon piano boiler invoice climbing passport quinn rota".split()


def build(notes: Path, vault: Vault, episodes: int, sample: int) -> None:
    """``episodes`` notes under ``notes`` and their episodes in ``vault``."""
    first = date(2020, 1, 1)
    report = ImportReport()
    for n in range(episodes):
        folder = notes / f"part{n // sample:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        day = first + timedelta(days=n % 2000)
        path = folder / f"{day.isoformat()}-note{n}.md"
        word = WORDS[n % len(WORDS)]
        path.write_text(f"# Note {n}\n\n- Met {word}{n} about {word}{n + 5}\n")
        _write_new_episode(vault, dated_note(path, day, str(path.resolve()), None), report)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=37_000)
    parser.add_argument("--sample", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        with Vault.init(root / "vault", env={}) as vault:
            started = time.perf_counter()
            build(root / "notes", vault, args.episodes, args.sample)
            vault.refresh()
            built_s = time.perf_counter() - started
            started = time.perf_counter()
            again = vault.import_notes(root / "notes" / "part000")
            rerun_s = time.perf_counter() - started
    notes = again.known_episodes
    result = {
        "episodes": args.episodes,
        "rerun_notes": notes,
        "rerun_added": again.added,
        "build_and_index_s": round(built_s, 1),
        "rerun_s": round(rerun_s, 3),
        "ms_per_note": round(rerun_s * 1000 / max(notes, 1), 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
