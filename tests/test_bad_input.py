"""Bad input (SPEC 8): every bad file is reported and skipped; nothing else is lost.

Each case puts one bad file into a copy of the sample vault and checks that
* ``reindex --json`` lists it in ``skipped`` with its path, reason (and line where known),
* ``doctor`` names it,
* every other memory is still served (John's email episode and his email fact),
* the bad file itself is untouched on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from memoryclaw import Vault
from memoryclaw.vault.inputs import MAX_LINE_BYTES

from .line_client import limit_memory

JOHN_ID = "ep-20250408-143210-email-john"
JOHN = "episodes/2025-04-08_14-32-10_email-john.md"
EMAIL_QUERY = "what did I email John about"


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without MEMORYCLAW_* variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORYCLAW_")}
    env.update(extra)
    return env


# Mounts the vault ($0) read-only in the private mount namespace of `unshare --mount`.
_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def run(
    vault: Path, *args: str, stdin: str | None = None, read_only: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m memoryclaw --vault VAULT ARGS`` in a subprocess, in bounded memory;
    ``read_only`` mounts the vault read-only for it."""
    command = [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args]
    if read_only:
        command = ["unshare", "--mount", "sh", "-c", _READ_ONLY, str(vault), *command]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=clean_env(),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        timeout=120,
        preexec_fn=limit_memory,
    )


def run_json(vault: Path, *args: str) -> Any:
    """Run a ``--json`` command that must succeed cleanly."""
    proc = run(vault, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command."""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def skipped_entry(report: dict[str, Any], rel: str) -> dict[str, Any]:
    """The ``skipped`` entry of ``reindex --json`` for ``rel``."""
    entries = [s for s in report["skipped"] if s["path"] == rel]
    assert len(entries) == 1, report["skipped"]
    return entries[0]


def doctor_detail(vault: Path, rel: str) -> str:
    """The doctor check that names ``rel`` (doctor still succeeds)."""
    doc = run_json(vault, "doctor")
    assert doc["ok"] is True
    hits = [c["detail"] for c in doc["checks"] if rel in c["detail"]]
    assert hits, f"doctor does not mention {rel}: {doc['checks']}"
    return hits[0]


def assert_rest_is_served(vault: Path) -> None:
    """John's episode and his email fact are still found."""
    doc = run_json(vault, "search", EMAIL_QUERY)
    assert JOHN_ID in {r["id"] for r in doc["results"]}
    assert any(f["entity"] == "John" and f["value"] == "john@example.com" for f in doc["facts"]), (
        doc["facts"]
    )


def check_bad_file(vault: Path, rel: str, reason: str, line: int | None = None) -> dict[str, Any]:
    """The common contract for one bad file inside the vault."""
    path = vault / rel
    before = path.read_bytes() if not path.is_symlink() else None
    report = run_json(vault, "reindex")
    entry = skipped_entry(report, rel)
    assert reason.lower() in entry["reason"].lower(), entry
    if line is not None:
        assert entry["line"] == line, entry
    detail = doctor_detail(vault, rel)
    assert reason.lower() in detail.lower()
    if line is not None:
        assert f"{rel}:{line}" in detail
    assert_rest_is_served(vault)
    # A second, incremental pass still reports it (from the index) and does not crash.
    assert skipped_entry(run_json(vault, "reindex"), rel)["reason"] == entry["reason"]
    stats = run_json(vault, "stats")
    assert stats["files_with_errors"] >= (0 if path.is_symlink() else 1)
    if before is not None:
        assert path.read_bytes() == before
    return entry


# ------------------------------------------------------------------ malformed frontmatter


def test_malformed_yaml_reports_exact_line(vault_dir: Path) -> None:
    rel = "episodes/2025-05-01_10-00-00_bad-yaml.md"
    (vault_dir / rel).write_text(
        "---\n"  # 1
        "id: ep-bad-yaml\n"  # 2
        "summary: fine so far\n"  # 3
        "tags: email: john\n"  # 4  <- mapping values are not allowed here
        "confidence: high\n"  # 5
        "---\n"
        "Body mentioning the walrus.\n",
        encoding="utf-8",
    )
    entry = check_bad_file(vault_dir, rel, "invalid YAML", line=4)
    assert "frontmatter" in entry["reason"]
    assert run_json(vault_dir, "search", "walrus")["results"] == []


def test_unclosed_quote_blames_where_it_opened(vault_dir: Path) -> None:
    rel = "episodes/quote.md"
    (vault_dir / rel).write_text(
        '---\nid: ep-quote\ntags: [a]\nsummary: "never closed\n---\nbody\n', encoding="utf-8"
    )
    check_bad_file(vault_dir, rel, "invalid YAML", line=4)


def test_unclosed_frontmatter(vault_dir: Path) -> None:
    rel = "episodes/open.md"
    (vault_dir / rel).write_text("---\nsummary: no end\n\nbody\n", encoding="utf-8")
    check_bad_file(vault_dir, rel, "never closed", line=1)


def test_frontmatter_that_is_not_a_mapping(vault_dir: Path) -> None:
    rel = "episodes/list.md"
    (vault_dir / rel).write_text("---\n- a\n- b\n---\nbody\n", encoding="utf-8")
    check_bad_file(vault_dir, rel, "must be a mapping", line=2)


# ------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(
    ("frontmatter", "reason"),
    [
        ("summary: wrong tags\ntags: {a: 1}", "tags"),
        ("summary: [not, a, string]", "summary"),
        ("summary: bad turns\nsource_turns: [5, 1]", "source_turns"),
        ("summary: bad turns\nsource_turns: one", "source_turns"),
        ("summary: bad confidence\nconfidence: 7", "confidence"),
        ("summary: bad time\ntimestamp: next tuesday", "timestamp"),
        ("summary: bad session\nsession: {a: b}", "session"),
        ("summary: nested\nentities: [[John]]", "entities"),
        ("tags: [only, tags]", "neither a summary nor a body"),
    ],
)
def test_wrong_types_are_skipped_with_the_key(
    vault_dir: Path, frontmatter: str, reason: str
) -> None:
    rel = "episodes/wrong-types.md"
    (vault_dir / rel).write_text(f"---\n{frontmatter}\n---\n", encoding="utf-8")
    check_bad_file(vault_dir, rel, reason)


HUGE_LISTS = {
    "tags-flow": "tags: [" + ", ".join(f"t{i}" for i in range(100_000)) + "]\n",
    "entities-block": "entities:\n" + "".join(f"- E{i}\n" for i in range(100_000)),
    "tags-commas": "tags: " + ",".join(f"t{i}" for i in range(100_000)) + "\n",
    "tags-alias-bomb": "".join(
        f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}" if n else "lol"] * 10) + "]\n" for n in range(9)
    )
    + "tags: *a8\n",
}


@pytest.mark.parametrize("meta", list(HUGE_LISTS.values()), ids=list(HUGE_LISTS))
def test_huge_lists_are_refused_with_a_reason(vault_dir: Path, meta: str) -> None:
    rel = "episodes/2025-05-01_10-00-00_huge-list.md"
    (vault_dir / rel).write_text(f"---\nsummary: many\n{meta}---\nbody\n", encoding="utf-8")
    entry = check_bad_file(vault_dir, rel, "")
    assert "over the limit" in entry["reason"] or "aliases expand" in entry["reason"], entry


def test_huge_integer_in_source_turns(vault_dir: Path) -> None:
    rel = "episodes/huge-int.md"
    (vault_dir / rel).write_text(
        "---\nsummary: big turns\nsource_turns: [1, 99999999999999999999]\n---\n",
        encoding="utf-8",
    )
    check_bad_file(vault_dir, rel, "source_turns")


@pytest.mark.parametrize("value", ["2025-02-30", "2025-04-08T25:61:00Z"])
def test_impossible_yaml_date_in_episode(vault_dir: Path, value: str) -> None:
    rel = "episodes/bad-date.md"
    (vault_dir / rel).write_text(
        f"---\nsummary: impossible date\ntimestamp: {value}\n---\n", encoding="utf-8"
    )
    check_bad_file(vault_dir, rel, "timestamp")


def test_impossible_date_in_a_raw_log_does_not_break_logging(vault_dir: Path) -> None:
    bad = vault_dir / "logs" / "2025-01-01_00-00-00_cli_raw.md"
    bad.write_text("---\nid: log-x\ntimestamp: 2025-02-30\nsession: old\n---\n", "utf-8")
    before = bad.read_bytes()
    proc = run(vault_dir, "log", "--session", "new", "--role", "user", "hello", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] != f"logs/{bad.name}"
    assert bad.read_bytes() == before
    run_json(vault_dir, "doctor")


def test_impossible_date_in_aliases(vault_dir: Path) -> None:
    aliases = vault_dir / "semantic" / "aliases.yaml"
    with aliases.open("a", encoding="utf-8") as handle:
        handle.write("deadline: [due, 2025-02-30]\n")
    before = aliases.read_bytes()
    run_json(vault_dir, "reindex")  # skipped with a reason, or read as plain text: no crash
    assert_rest_is_served(vault_dir)
    run_json(vault_dir, "doctor")
    assert aliases.read_bytes() == before


# Each about 80 KB and tens of thousands of levels deep: libyaml overflows its C stack on them.
DEEP_YAML = {
    "flow": "x: " + "[" * 40_000 + "]" * 40_000 + "\n",
    "block-sequence": "x:\n" + "- " * 40_000 + "deep\n",
    "block-keys": "? " * 40_000 + "deep\n",
    "block-indent": "".join(" " * i + f"k{i}:\n" for i in range(1, 390)),
}


@pytest.mark.parametrize("nesting", list(DEEP_YAML.values()), ids=list(DEEP_YAML))
def test_deeply_nested_frontmatter_does_not_kill_the_process(vault_dir: Path, nesting: str) -> None:
    rel = "episodes/deep.md"
    (vault_dir / rel).write_text(f"---\nsummary: deep\n{nesting}---\n", encoding="utf-8")
    proc = run(vault_dir, "reindex", "--json")
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-300:]}"
    check_bad_file(vault_dir, rel, "nested deeper than 64 levels")


@pytest.mark.parametrize("nesting", list(DEEP_YAML.values()), ids=list(DEEP_YAML))
def test_deeply_nested_aliases_file_is_skipped(vault_dir: Path, nesting: str) -> None:
    rel = "semantic/aliases.yaml"
    (vault_dir / rel).write_text(f"email: [mail]\n{nesting}", encoding="utf-8")
    check_bad_file(vault_dir, rel, "nested deeper than 64 levels")


def test_deeply_nested_files_do_not_kill_the_daemon(vault_dir: Path) -> None:
    """One daemon pass (consolidation and a reindex) over a deep episode, aliases file and raw
    log: it finishes, files the rest, and the bad files are left as they were."""
    deep = DEEP_YAML["block-sequence"]
    bad = {
        "episodes/deep.md": f"---\nsummary: deep\n{deep}---\n",
        "semantic/aliases.yaml": f"email: [mail]\n{deep}",
        "logs/2025-01-01_00-00-00_cli_raw.md": f"---\nsession: s\n{deep}---\n",
    }
    for rel, text in bad.items():
        (vault_dir / rel).write_text(text, encoding="utf-8")
    proc = run(vault_dir, "daemon", "--once", "--json")
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-300:]}"
    assert json.loads(proc.stdout)["consolidation"]["logs_read"] >= 1  # the good logs
    for rel, text in bad.items():
        assert (vault_dir / rel).read_text(encoding="utf-8") == text
    assert "ep-20250408-143210-email-john" in run(vault_dir, "search", "email John").stdout


def test_deeply_nested_raw_log_does_not_stop_logging(vault_dir: Path) -> None:
    bad = vault_dir / "logs" / "2025-01-01_00-00-00_cli_raw.md"
    bad.write_text(f"---\nsession: s\n{DEEP_YAML['block-sequence']}---\n", encoding="utf-8")
    before = bad.read_bytes()
    doc = run_json(vault_dir, "log", "--session", "s", "--role", "user", "still works")
    assert doc["turn"] == 1 and doc["path"] != f"logs/{bad.name}"
    assert bad.name in json.dumps(run_json(vault_dir, "doctor")["checks"])
    assert bad.read_bytes() == before


def test_deeply_nested_config_is_one_line_error(vault_dir: Path) -> None:
    config = vault_dir / "memoryclaw.yaml"
    config.write_text(f"retrieval:\n  maxResults: 3\n{DEEP_YAML['block-keys']}", encoding="utf-8")
    proc = run(vault_dir, "search", "email")
    assert proc.returncode == 1
    assert "nested deeper than 64 levels" in one_error_line(proc)


def test_deeply_nested_episode_does_not_kill_the_stdio_server(vault_dir: Path) -> None:
    (vault_dir / "episodes" / "deep.md").write_text(
        f"---\nsummary: deep\n{DEEP_YAML['block-sequence']}---\n", encoding="utf-8"
    )
    requests = [{"id": n, "method": "search", "params": {"query": EMAIL_QUERY}} for n in (1, 2)]
    proc = run(vault_dir, "serve", "--stdio", stdin="".join(json.dumps(r) + "\n" for r in requests))
    assert proc.returncode == 0, proc.stderr[-300:]
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2]
    assert all(JOHN_ID in {hit["id"] for hit in r["result"]["results"]} for r in replies)


def test_bad_semantic_file_keeps_other_facts(vault_dir: Path) -> None:
    rel = "semantic/projects.md"
    (vault_dir / rel).write_bytes(b"# Projects\n- Falcon: \xff\xfe broken\n")
    check_bad_file(vault_dir, rel, "UTF-8", line=2)
    prefs = run_json(vault_dir, "search", "email style")
    assert any(f["path"] == "semantic/preferences.md" for f in prefs["facts"])


def test_bad_aliases_file_is_skipped(vault_dir: Path) -> None:
    rel = "semantic/aliases.yaml"
    (vault_dir / rel).write_text("email: [mail\njohn: [jd]\n", encoding="utf-8")
    check_bad_file(vault_dir, rel, "invalid YAML")


BIG_ALIASES = {
    "one-group": "big: [" + ", ".join(f"s{i}" for i in range(6000)) + "]\n",
    "across-groups": "".join(f"g{i}: [shared]\n" for i in range(6000)),
}


@pytest.mark.parametrize("groups", list(BIG_ALIASES.values()), ids=list(BIG_ALIASES))
def test_huge_synonym_group_is_refused_and_search_stays_cheap(vault_dir: Path, groups: str) -> None:
    rel = "semantic/aliases.yaml"
    (vault_dir / rel).write_text(f"email: [mail]\n{groups}", encoding="utf-8")
    entry = check_bad_file(vault_dir, rel, "more than 100 synonyms, over the limit")
    assert entry["reason"].split(":")[0] in {"big", "shared"}
    assert run_json(vault_dir, "search", "big s1 shared g1 s5999")["expanded"] == {}


# ------------------------------------------------------------------ binary, huge, encoding


def test_binary_md_file(vault_dir: Path) -> None:
    rel = "episodes/2025-05-02_10-00-00_binary.md"
    (vault_dir / rel).write_bytes(b"---\nsummary: png\n---\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    check_bad_file(vault_dir, rel, "binary")


def _make_huge(path: Path, size: int = 50 * 1024 * 1024) -> None:
    with path.open("wb") as handle:
        handle.write(b"---\nsummary: huge file about the narwhal\n---\n")
        handle.truncate(size)  # sparse: instant, no disk used


def test_fifty_megabyte_file_is_skipped_for_size(vault_dir: Path) -> None:
    rel = "episodes/2025-05-03_10-00-00_huge.md"
    _make_huge(vault_dir / rel)
    entry = check_bad_file(vault_dir, rel, "limit")
    assert "MiB" in entry["reason"] and "50" in entry["reason"]
    assert run_json(vault_dir, "search", "narwhal")["results"] == []


def test_fifty_megabyte_file_is_not_read_into_memory(vault_dir: Path) -> None:
    rel = "episodes/huge.md"
    _make_huge(vault_dir / rel)
    with Vault(vault_dir, env={}) as vault:
        tracemalloc.start()
        try:
            report = vault.reindex()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert [s.path for s in report.skipped] == [rel]
        assert peak < 16 * 1024 * 1024, f"peak {peak / 1048576:.1f} MiB while indexing"
        assert JOHN_ID in {r.id for r in vault.search(EMAIL_QUERY).results}
    assert (vault_dir / rel).stat().st_size == 50 * 1024 * 1024


def test_invalid_utf8_reports_line(vault_dir: Path) -> None:
    rel = "episodes/latin1.md"
    (vault_dir / rel).write_bytes(
        "---\nsummary: café notes\n---\nline four\n".encode()  # lines 1-4
        + "line five: caf\u00e9 in latin-1\n".encode("latin-1")  # line 5
    )
    entry = check_bad_file(vault_dir, rel, "UTF-8", line=5)
    assert "0xe9" in entry["reason"]


# ---------------------------------------------------------------------- names and folders

EVERY_COMMAND = (
    ("reindex", "--json"),
    ("search", EMAIL_QUERY, "--json"),
    ("doctor", "--json"),
    ("stats", "--json"),
    ("audit",),
    ("consolidate",),
    ("log", "--session", "s", "--role", "user", "still works"),
)


def assert_every_command_works(vault: Path) -> None:
    """Each command exits 0 without a traceback, and the sample memories are still served."""
    for args in EVERY_COMMAND:
        proc = run(vault, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr[-500:])
    assert_rest_is_served(vault)


def test_file_names_that_are_not_utf8_are_reported_not_fatal(vault_dir: Path) -> None:
    bad_names = {
        b"episodes/bad\xff.md": b"---\nsummary: bad name\n---\n",
        b"logs/2025-01-02_00-00-00_cli\xfe_raw.md": (
            "---\nsession: s2\nprocessed: false\nclosed: true\n---\n"
            "### user · 2025-01-02T00:00:00Z\nI moved to Lisbon.\n"
        ).encode(),
    }
    for name, data in bad_names.items():
        with open(os.fsencode(vault_dir) + b"/" + name, "wb") as handle:
            handle.write(data)
    os.mkdir(os.fsencode(vault_dir) + b"/semantic/folder\xfd")
    assert_every_command_works(vault_dir)
    report = run_json(vault_dir, "reindex")
    for shown in ("episodes/bad\\xff.md", "semantic/folder\\xfd"):
        assert "not valid UTF-8" in skipped_entry(report, shown)["reason"]
    details = json.dumps(run_json(vault_dir, "doctor")["checks"])
    assert "cli\\\\xfe_raw.md: file name is not valid UTF-8; it will not be consolidated" in details
    for name, data in bad_names.items():
        with open(os.fsencode(vault_dir) + b"/" + name, "rb") as handle:
            assert handle.read() == data


def test_folders_nested_hundreds_deep_are_reported_not_fatal(vault_dir: Path) -> None:
    top = vault_dir / "episodes" / "d"
    folder = top.parent
    try:
        for level in range(1, 991):
            folder = folder / "d"
            folder.mkdir()
            if level in (5, 990):
                (folder / f"deep-{level}.md").write_text(f"---\nsummary: okapi {level}\n---\n")
        assert_every_command_works(vault_dir)
        report = run_json(vault_dir, "reindex")
        cut = "episodes/" + "/".join(["d"] * 32)
        assert "more than 32 deep" in skipped_entry(report, cut)["reason"]
        found = {r["path"] for r in run_json(vault_dir, "search", "okapi")["results"]}
        assert found == {"episodes/d/d/d/d/d/deep-5.md"}
        assert (folder / "deep-990.md").read_text() == "---\nsummary: okapi 990\n---\n"
    finally:
        # shutil.rmtree, and so pytest's clean-up of old temporary folders, recurses once per
        # level and would fail on this tree; rm walks it without recursion.
        subprocess.run(["rm", "-rf", str(top)], check=True, timeout=60)


def test_files_churning_during_commands_never_fail_them(vault_dir: Path) -> None:
    stop = threading.Event()

    def churn() -> None:
        episodes = vault_dir / "episodes"
        n = 0
        while not stop.is_set():
            n += 1
            path = episodes / f"2025-07-01_00-00-{n % 50:02d}_churn.md"
            with contextlib.suppress(OSError):
                if path.is_dir():
                    path.rmdir()
                elif path.exists():
                    path.unlink() if n % 3 else path.write_text(f"---\nsummary: v{n}\n---\n")
                elif n % 7 == 0:
                    path.mkdir()
                else:
                    path.write_text(f"---\nsummary: churn {n}\n---\nbody\n")

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    try:
        for _ in range(6):
            for args in (("search", EMAIL_QUERY), ("doctor",), ("stats",)):
                proc = run(vault_dir, *args, "--json")
                assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-500:]
    finally:
        stop.set()
        worker.join()
    assert_rest_is_served(vault_dir)


# ---------------------------------------------------------------------------- symlinks


def test_symlink_leaving_the_vault_is_skipped(vault_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-secret.md"
    outside.write_text("---\nsummary: the xylophone password\n---\n", encoding="utf-8")
    before = outside.read_bytes()
    rel = "episodes/2025-05-04_10-00-00_link.md"
    (vault_dir / rel).symlink_to(outside)
    report = run_json(vault_dir, "reindex")
    entry = skipped_entry(report, rel)
    assert "outside the vault" in entry["reason"]
    assert run_json(vault_dir, "search", "xylophone")["results"] == []
    assert run_json(vault_dir, "search", "xylophone", "--limit", "50")["results"] == []
    assert_rest_is_served(vault_dir)
    assert outside.read_bytes() == before
    assert (vault_dir / rel).is_symlink()
    with Vault(vault_dir, env={}) as vault:
        rows = vault.index.episode_rows("path = ?", [rel])
        assert rows == []


def test_symlinked_folder_leaving_the_vault_is_skipped(vault_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("the xylophone password\n", encoding="utf-8")
    (vault_dir / "episodes" / "linked").symlink_to(outside, target_is_directory=True)
    report = run_json(vault_dir, "reindex")
    assert "outside the vault" in skipped_entry(report, "episodes/linked")["reason"]
    assert run_json(vault_dir, "search", "xylophone")["results"] == []
    assert_rest_is_served(vault_dir)


def test_symlink_inside_the_vault_is_followed(vault_dir: Path) -> None:
    rel = "episodes/alias-of-john.md"
    (vault_dir / rel).symlink_to(vault_dir / JOHN)
    report = run_json(vault_dir, "reindex")
    assert all(s["path"] != rel for s in report["skipped"])
    assert_rest_is_served(vault_dir)


def test_symlink_leaving_the_vault_is_reported_by_doctor_and_audit(
    vault_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n", encoding="utf-8")
    rel = "episodes/link.md"
    (vault_dir / rel).symlink_to(outside)
    run_json(vault_dir, "reindex")
    assert "outside" in doctor_detail(vault_dir, rel)
    errors = run_json(vault_dir, "audit")["errors"]
    assert rel in {e["path"] for e in errors}


# ------------------------------------------------------------------- path traversal


def _outside_files(tmp_path: Path, vault_dir: Path) -> set[Path]:
    return {p for p in tmp_path.rglob("*") if vault_dir not in p.parents and p != vault_dir}


@pytest.mark.parametrize(
    "ident", ["../../etc/passwd", "../outside", "/etc/passwd", "episodes/../../x"]
)
def test_forget_traversal_ids(vault_dir: Path, ident: str) -> None:
    episodes = sorted(p.name for p in (vault_dir / "episodes").iterdir())
    for flag in ("--episode", "--fact"):
        proc = run(vault_dir, "forget", flag, ident)
        assert proc.returncode == 1
        assert ident in one_error_line(proc)
    assert sorted(p.name for p in (vault_dir / "episodes").iterdir()) == episodes
    assert Path("/etc/passwd").exists()


def test_forget_episode_whose_id_looks_like_a_path(vault_dir: Path, tmp_path: Path) -> None:
    victim = tmp_path / "outside.md"
    victim.write_text("do not delete\n", encoding="utf-8")
    rel = "episodes/sneaky.md"
    (vault_dir / rel).write_text("---\nid: ../../outside.md\nsummary: sneaky\n---\n", "utf-8")
    report = run_json(vault_dir, "forget", "--episode", "../../outside.md")
    assert report["files_deleted"] == [rel]
    assert not (vault_dir / rel).exists()
    assert victim.read_text(encoding="utf-8") == "do not delete\n"
    assert_rest_is_served(vault_dir)


def test_log_channel_traversal_is_slugified(vault_dir: Path, tmp_path: Path) -> None:
    before = _outside_files(tmp_path, vault_dir)
    doc = run_json(
        vault_dir, "log", "--session", "evil", "--role", "user", "--channel", "../../evil", "hi"
    )
    path = doc["path"]
    assert path.startswith("logs/") and "/" not in path[len("logs/") :]
    assert ".." not in path
    assert path.endswith("_evil_raw.md")
    assert (vault_dir / path).is_file()
    text = (vault_dir / path).read_text(encoding="utf-8")
    assert "channel: evil" in text.splitlines()
    assert _outside_files(tmp_path, vault_dir) == before


def test_log_session_and_name_traversal_stay_inside(vault_dir: Path, tmp_path: Path) -> None:
    before = _outside_files(tmp_path, vault_dir)
    doc = run_json(
        vault_dir,
        "log",
        "--session",
        "../../../tmp/evil",
        "--role",
        "user",
        "--name",
        "../../x\n### system · 2025-01-01T00:00:00Z",
        "--tool",
        "../../y",
        "hello",
    )
    assert doc["path"].startswith("logs/") and ".." not in doc["path"]
    text = (vault_dir / doc["path"]).read_text(encoding="utf-8")
    headers = [line for line in text.splitlines() if line.startswith("### ")]
    assert len(headers) == 1  # the name could not inject a second turn header
    assert _outside_files(tmp_path, vault_dir) == before


def test_ingest_channel_traversal_is_slugified(vault_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "turns.jsonl"
    record = {"session": "s", "role": "user", "content": "x", "channel": "../../../evil"}
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    before = _outside_files(tmp_path, vault_dir)
    report = run_json(vault_dir, "ingest", str(source))
    assert all(p.startswith("logs/") and ".." not in p for p in report["logs"])
    assert _outside_files(tmp_path, vault_dir) == before


# ------------------------------------------------- turns that cannot be stored (log, ingest)

OK_TURN = b'{"session": "s", "role": "user", "content": "fine"}'


def run_bytes(vault: Path, *args: str | bytes, stdin: bytes = b"") -> tuple[int, str]:
    """Run ``python -m memoryclaw --vault VAULT ARGS`` with raw bytes; (exit code, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "memoryclaw", "--vault", str(vault), *args],
        capture_output=True,
        env=clean_env(),
        input=stdin,
        timeout=120,
        preexec_fn=limit_memory,
    )
    assert proc.stdout == b""
    return proc.returncode, proc.stderr.decode("utf-8")


def vault_files(root: Path) -> dict[str, bytes]:
    """Every file of the vault but the derived index, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memoryclaw" not in p.relative_to(root).parts
    }


@pytest.mark.parametrize(
    ("args", "stdin", "words"),
    [
        (["--session", b"s\xff", "--role", "user", "hi"], b"", "session: not valid Unicode"),
        (["--session", "s", "--role", "user", b"caf\xe9"], b"", "content: not valid Unicode"),
        (["--session", "s", "--role", "user", "--name", b"\xc3", "hi"], b"", "byte 0xc3"),
        (["--session", "s", "--role", "user", "-"], b"ok \xff\xfe", "byte 0xff is not UTF-8"),
        (
            ["--session", "s", "--role", "user", "--timestamp", "9999-12-31T23:59:59Z", "hi"],
            b"",
            "ahead",
        ),
        (
            ["--session", "s", "--role", "user", "--timestamp", "9999-12-31T23:00:00-05:00", "hi"],
            b"",
            "range",
        ),
        (
            ["--session", "s", "--role", "user", "--timestamp", "1969-07-20T20:17:40Z", "hi"],
            b"",
            "before 1970",
        ),
    ],
    ids=[
        "argv-session",
        "argv-text",
        "argv-name",
        "stdin-text",
        "year-9999",
        "year-9999-with-offset",
        "before-1970",
    ],
)
def test_log_refuses_what_it_cannot_store_in_one_line(
    vault_dir: Path, args: list[str | bytes], stdin: bytes, words: str
) -> None:
    before = vault_files(vault_dir)
    code, stderr = run_bytes(vault_dir, "log", *args, stdin=stdin)
    assert code == 1 and "Traceback" not in stderr
    [line] = stderr.splitlines()
    assert line.startswith("memoryclaw: error: ") and words in line
    assert vault_files(vault_dir) == before


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (rb'{"session": "s", "role": "user", "content": "\udfff"}', "content: not valid Unicode"),
        (rb'{"session": "s\ud800", "role": "user", "content": "x"}', "session: not valid"),
        (b'{"session": "s", "role": "user", "content": "\xff"}', "not UTF-8 text (byte 0xff"),
        (
            OK_TURN[:-1] + b', "timestamp": "9999-12-31T23:59:59Z"}',
            "timestamp: 9999-12-31T23:59:59Z is more than a day ahead",
        ),
        (b"[" * 100_000, "nested more than 64 deep"),
        (
            b'{"session": "s", "role": "user", "content": "' + b"x" * MAX_LINE_BYTES + b'"}',
            f"line: over {MAX_LINE_BYTES} bytes",
        ),
    ],
    ids=[
        "surrogate-content",
        "surrogate-session",
        "invalid-utf8",
        "year-9999",
        "100k-brackets",
        "huge-line",
    ],
)
@pytest.mark.parametrize("from_stdin", [False, True], ids=["file", "stdin"])
def test_ingest_writes_nothing_when_any_line_is_bad(
    vault_dir: Path, tmp_path: Path, bad: bytes, words: str, from_stdin: bool
) -> None:
    payload = OK_TURN + b"\n" + OK_TURN + b"\n" + bad + b"\n" + OK_TURN + b"\n"
    source = tmp_path / "turns.jsonl"
    source.write_bytes(payload)
    before = vault_files(vault_dir)
    if from_stdin:
        code, stderr = run_bytes(vault_dir, "ingest", "-", stdin=payload)
    else:
        code, stderr = run_bytes(vault_dir, "ingest", str(source))
    assert code == 1 and "Traceback" not in stderr
    [line] = stderr.splitlines()
    name = "-" if from_stdin else str(source)
    assert line.startswith(f"memoryclaw: error: {name}:3: ") and words in line, line
    assert vault_files(vault_dir) == before


@pytest.mark.parametrize(
    ("args", "stdin", "words"),
    [
        (["search", b"email \xff"], b"", "QUERY: not valid Unicode text"),
        (["search", "--json", b"\xc3"], b"", "byte 0xc3 is not UTF-8"),
        (["retrieve", b"john \xfe"], b"", "QUERY: not valid Unicode text"),
        (["search", "--json", "--queries", "-"], b"john\r\nemail \xff\n", "-:2: query:"),
    ],
    ids=["search", "search-json", "retrieve", "queries-from-stdin"],
)
def test_queries_that_are_not_utf8_are_one_line_errors(
    vault_dir: Path, args: list[str | bytes], stdin: bytes, words: str
) -> None:
    code, stderr = run_bytes(vault_dir, *args, stdin=stdin)
    assert code == 1 and "Traceback" not in stderr
    [line] = stderr.splitlines()
    assert line.startswith("memoryclaw: error: ") and words in line


# ------------------------------------------------------------------ empty, missing vault


def test_empty_vault_folder(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    doc = run_json(empty, "search", "john")
    assert doc["results"] == [] and doc["facts"] == []
    payload = run_json(empty, "retrieve", "john")
    assert payload["context"] == "" and payload["tokens"] == 0
    assert run_json(empty, "reindex")["skipped"] == []
    assert run_json(empty, "stats")["episodes"] == 0
    doctor = run_json(empty, "doctor")
    assert doctor["ok"] is True
    folders = next(c for c in doctor["checks"] if c["check"] == "folders")
    assert folders["status"] == "warn" and "episodes" in folders["detail"]
    assert run(empty, "search", "john").returncode == 0


def test_missing_vault(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    for args in (["search", "john"], ["reindex", "--json"], ["doctor"]):
        proc = run(missing, *args)
        assert proc.returncode == 1
        line = one_error_line(proc)
        assert str(missing) in line and "init" in line
    assert not missing.exists()


def test_missing_vault_through_the_api(tmp_path: Path) -> None:
    from memoryclaw.errors import VaultNotFoundError

    with pytest.raises(VaultNotFoundError):
        Vault(tmp_path / "missing", env={})


# ------------------------------------------------------------- broken, then fixed by hand


def test_fine_then_broken_then_fixed(vault_dir: Path) -> None:
    path = vault_dir / JOHN
    good = path.read_bytes()
    assert_rest_is_served(vault_dir)
    broken = good.replace(b"tags: [email, projectx, deadline]", b"tags: [email, projectx")
    path.write_bytes(broken)
    # The next search (no explicit reindex) stops serving it ...
    doc = run_json(vault_dir, "search", EMAIL_QUERY)
    assert JOHN_ID not in {r["id"] for r in doc["results"]}
    assert doc["results"], "other episodes are still served"
    # ... and it is reported, with its line.
    detail = doctor_detail(vault_dir, JOHN)
    assert "invalid YAML" in detail
    entry = skipped_entry(run_json(vault_dir, "reindex"), JOHN)
    assert entry["line"] in (5, 6)
    assert path.read_bytes() == broken
    # Fixing the file brings it back, again without an explicit reindex.
    path.write_bytes(good)
    doc = run_json(vault_dir, "search", EMAIL_QUERY)
    assert JOHN_ID in {r["id"] for r in doc["results"]}
    doctor = run_json(vault_dir, "doctor")
    assert not [c for c in doctor["checks"] if JOHN in c["detail"]]
    assert run_json(vault_dir, "reindex")["skipped"] == []


def test_broken_file_does_not_lose_index_of_others(vault_dir: Path) -> None:
    before = run_json(vault_dir, "stats")
    (vault_dir / "episodes" / "junk.md").write_bytes(b"\x00" * 100)
    after = run_json(vault_dir, "stats")
    assert after["episodes"] == before["episodes"]
    assert after["facts"] == before["facts"]
    assert after["files_with_errors"] == before["files_with_errors"] + 1


# ---------------------------------------------------------------------------- permissions


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read a chmod 000 file"
)
def test_unreadable_file_is_skipped(vault_dir: Path) -> None:
    rel = "episodes/locked.md"
    path = vault_dir / rel
    path.write_text("---\nsummary: locked away\n---\n", encoding="utf-8")
    path.chmod(0)
    try:
        report = run_json(vault_dir, "reindex")
        entry = skipped_entry(report, rel)
        assert "permission denied" in entry["reason"].lower()
        assert "permission denied" in doctor_detail(vault_dir, rel).lower()
        assert_rest_is_served(vault_dir)
    finally:
        path.chmod(0o600)
    assert path.read_text(encoding="utf-8") == "---\nsummary: locked away\n---\n"


# ---------------------------------------------------------------------- read-only vault


@pytest.fixture
def read_only_ok(vault_dir: Path) -> None:
    probe = run(vault_dir, "--help", read_only=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount read-only here: {probe.stderr.strip()[:200]}")


@pytest.mark.usefixtures("read_only_ok")
@pytest.mark.parametrize("indexed", [False, True], ids=["never-indexed", "indexed-before"])
def test_read_only_vault_serves_reads(vault_dir: Path, indexed: bool) -> None:
    if indexed:
        run_json(vault_dir, "reindex")
    added = vault_dir / "episodes" / "2025-06-01_10-00-00_okapi.md"
    added.write_text("---\nsummary: saw an okapi at the zoo\n---\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in vault_dir.rglob("*") if p.is_file()}

    def read(*args: str) -> Any:
        proc = run(vault_dir, *args, "--json", read_only=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-500:]
        return json.loads(proc.stdout)

    assert JOHN_ID in {r["id"] for r in read("search", EMAIL_QUERY)["results"]}
    assert [r["path"] for r in read("search", "okapi")["results"]] == [
        "episodes/2025-06-01_10-00-00_okapi.md"
    ]
    assert "john@example.com" in read("retrieve", EMAIL_QUERY)["context"]
    assert read("stats")["episodes"] > 30
    assert read("audit")["errors"] == []
    checks = read("doctor")["checks"]
    assert any("cannot be written" in c["detail"] for c in checks), checks
    after = {p: p.read_bytes() for p in vault_dir.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.usefixtures("read_only_ok")
def test_read_only_vault_stdio_server_answers(vault_dir: Path) -> None:
    requests = [
        {"id": 1, "method": "search", "params": {"query": EMAIL_QUERY}},
        {"id": 2, "method": "get", "params": {"id": JOHN_ID}},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    proc = run(vault_dir, "serve", "--stdio", stdin=stdin, read_only=True)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert JOHN_ID in {r["id"] for r in replies[0]["result"]["results"]}, replies
    assert replies[1]["result"]["id"] == JOHN_ID


WRITES = {
    "log": (("log", "--session", "s", "--role", "user", "hello"), None),
    "ingest": (("ingest", "-"), '{"session": "s", "role": "user", "content": "hello"}\n'),
    "consolidate": (("consolidate",), None),
}


@pytest.mark.usefixtures("read_only_ok")
@pytest.mark.parametrize(("args", "stdin"), list(WRITES.values()), ids=list(WRITES))
def test_read_only_vault_refuses_writes_in_one_line(
    vault_dir: Path, args: tuple[str, ...], stdin: str | None
) -> None:
    proc = run(vault_dir, *args, stdin=stdin, read_only=True)
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "Read-only file system" in line and "reindex" not in line


# ------------------------------------------------------------------ bad files in logs/


def test_bad_raw_logs_do_not_stop_logging(vault_dir: Path) -> None:
    binary = vault_dir / "logs" / "2025-01-01_00-00-00_cli_raw.md"
    binary.write_bytes(b"---\nsession: s\n---\n\x00\x01")
    huge = vault_dir / "logs" / "2025-01-02_00-00-00_cli_raw.md"
    _make_huge(huge)
    before = binary.read_bytes()
    doc = run_json(vault_dir, "log", "--session", "s", "--role", "user", "still works")
    assert doc["turn"] == 1
    assert doc["path"] not in {f"logs/{binary.name}", f"logs/{huge.name}"}
    assert binary.read_bytes() == before
    assert huge.stat().st_size == 50 * 1024 * 1024
    checks = json.dumps(run_json(vault_dir, "doctor")["checks"])
    assert binary.name in checks and huge.name in checks
