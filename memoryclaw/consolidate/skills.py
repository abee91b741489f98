"""Skills (experimental): suggest drafts from repeated tool-call sequences, review them.

A *request* is a user turn and the tool calls that follow it up to the next user turn.  A
sequence of two or more tools that answers requests in at least ``skillThreshold`` different
logs (``logs/`` and ``logs/processed/``) becomes a draft ``skills/<name>/SKILL.md`` written
from ``skills_templates/SKILL.md.tmpl``, full of TODO markers.  Only the longest such sequence
is suggested: a part of a sequence that is already a skill (draft, approved or rejected) is
not suggested again, and an existing ``SKILL.md`` is never overwritten.

A draft is never used until it is approved.  A hand-written skill without memoryclaw
metadata is the user's own and counts as approved.  At retrieval, the approved skill whose
name, description and "When to use" section share the most query keywords is the working
memory's ``active_skill`` (:func:`memoryclaw.vault.skillfiles.active_skill`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from ..errors import NotFoundError, ParseError, UnsafePathError
from ..vault.config import Settings
from ..vault.files import (
    LOGS_DIR,
    PROCESSED_DIR,
    SKILLS_DIR,
    atomic_write,
    ensure_dir,
    file_lock,
    make_dir,
    read_text,
    resolve_inside,
)
from ..vault.logformat import RawLog, parse_log
from ..vault.naming import slugify
from ..vault.skillfiles import (
    SkillInfo,
    parse_skill,
    read_skill,
    skill_folders,
    with_status,
)

MAX_PATTERN_STEPS = 10  # longer runs are cut: a request's patterns grow with its length squared
MAX_EXAMPLES = 3
_NAME_CHARS = 60  # room for a "-N" suffix within the 64 characters AgentSkills allows
_DESCRIPTION_CHARS = 1000
_REQUEST_CHARS = 160
_ARGUMENT_CHARS = 240
_TEMPLATE = "SKILL.md.tmpl"
_UNREADABLE = (ParseError, UnsafePathError)  # a broken file, or a link out of the vault
_TOOL_CALL = "### tool_call"  # the header of a turn calling a tool, which every pattern needs
# ------------------------------------------------------------------ patterns


@dataclass
class _Step:
    tool: str
    arguments: str
    results: list[str] = field(default_factory=list)


@dataclass
class _Request:
    user: str
    steps: list[_Step] = field(default_factory=list)


def _redact(text: str) -> str:
    # imported when a skill is mined: its many patterns take a while to compile, and the
    # active skill a retrieve looks up needs none of them
    from ..vault.redact import redact

    return redact(text)


def _requests(log: RawLog) -> list[_Request]:
    """The log's requests that called at least one tool, each with its calls and results
    (tool names redacted: a pattern names its skill)."""
    out: list[_Request] = []
    current = _Request("")
    for turn in log.turns:
        if turn.role == "user":
            if current.steps:
                out.append(current)
            current = _Request(turn.content)
        elif turn.role == "tool_call" and turn.tool:
            current.steps.append(_Step(_redact(turn.tool), turn.content))
        elif turn.role in {"tool_result", "tool"} and current.steps:
            current.steps[-1].results.append(turn.content)
    if current.steps:
        out.append(current)
    return out


def tool_sequences(log: RawLog) -> list[tuple[str, ...]]:
    """The tool names each user request called, in order (requests without tool calls omitted)."""
    return [tuple(step.tool for step in request.steps) for request in _requests(log)]


def _runs(sequence: Sequence[str]) -> set[tuple[str, ...]]:
    """Every contiguous run of 2 to :data:`MAX_PATTERN_STEPS` tools in ``sequence``."""
    return {
        tuple(sequence[start:end])
        for start in range(len(sequence))
        for end in range(start + 2, min(len(sequence), start + MAX_PATTERN_STEPS) + 1)
    }


def _all_logs(root: Path) -> list[RawLog]:
    """Every readable raw log, oldest file name first; a log found both waiting and processed
    (a consolidation stopped between copy and delete) counts once.  None when no log calls a
    tool: then none holds a pattern, and parsing them all on every run would be wasted."""
    # here, not above: listing, approving or rejecting skills reads no log
    from ..vault.rawlogs import log_texts

    texts = [pair for folder in (PROCESSED_DIR, LOGS_DIR) for pair in log_texts(root, folder)]
    if not any(_TOOL_CALL in text for _, text in texts):
        return []
    found: dict[str, RawLog] = {}
    for rel, text in texts:
        try:
            log = parse_log(text, rel)
        except ParseError:
            continue  # doctor reports broken logs
        found.setdefault(str(log.meta.get("id") or rel), log)
    return sorted(found.values(), key=lambda log: (log.path.rsplit("/", 1)[-1], log.path))


def pattern_counts(root: Path) -> dict[tuple[str, ...], list[str]]:
    """Each tool pattern (2+ tools run for one request) with the logs it occurs in, each log
    once, oldest first; most frequent patterns first, then longer, then alphabetical."""
    seen: dict[tuple[str, ...], list[str]] = {}
    for log in _all_logs(root):
        runs: set[tuple[str, ...]] = set()
        for sequence in tool_sequences(log):
            runs |= _runs(sequence)
        for pattern in runs:
            seen.setdefault(pattern, []).append(log.path)
    return dict(sorted(seen.items(), key=lambda item: (-len(item[1]), -len(item[0]), item[0])))


def _contains(whole: Sequence[str], part: Sequence[str]) -> bool:
    """Whether ``part`` occurs contiguously in ``whole``."""
    size = len(part)
    return any(tuple(whole[i : i + size]) == tuple(part) for i in range(len(whole) - size + 1))


# ------------------------------------------------------------------- suggest


def suggest_skills(
    root: Path, settings: Settings, note: Callable[[Iterable[str]], None] | None = None
) -> list[str]:
    """Write a draft skill for each longest pattern seen in ``skillThreshold`` logs or more;
    the vault paths written (none on a second run).  ``note`` is told each path first."""
    threshold = settings.consolidation.skill_threshold
    written: list[str] = []
    with file_lock(root, "skills"):
        counts = pattern_counts(root)
        taken = [skill.pattern for skill in list_skills(root) if skill.pattern]
        frequent = [p for p, logs in counts.items() if len(logs) >= threshold and len(set(p)) > 1]
        for pattern in sorted(frequent, key=lambda p: (-len(p), -len(counts[p]), p)):
            if any(_contains(known, pattern) for known in taken):
                continue
            folder = _claim_folder(root, _skill_name(pattern))
            rel = f"{SKILLS_DIR}/{folder}/SKILL.md"
            text = _render_draft(root, folder, pattern, counts[pattern])
            if note is not None:
                note([rel])
            atomic_write(resolve_inside(root, rel), text)
            taken.append(pattern)
            written.append(rel)
    return written


def _skill_name(pattern: Sequence[str]) -> str:
    """An AgentSkills name: lowercase letters, digits and single hyphens."""
    name = slugify(" ".join(pattern), _NAME_CHARS)
    if "-" not in name or not re.search(r"[a-z]", name):
        name = f"skill-{name}"  # a bare word or number could read as a YAML boolean or int
    return name


def _claim_folder(root: Path, name: str) -> str:
    """Create ``skills/<name>/`` (``name-2`` ... when taken) so no existing skill is touched."""
    ensure_dir(root / SKILLS_DIR)
    candidate, counter = name, 2
    while True:
        try:
            make_dir(resolve_inside(root, f"{SKILLS_DIR}/{candidate}"))
            return candidate
        except FileExistsError:
            candidate = f"{name}-{counter}"
            counter += 1


def _template_text() -> str:
    """The template from a source checkout, else from the installed package."""
    checkout = Path(__file__).resolve().parents[2] / "skills_templates" / _TEMPLATE
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    packaged = resources.files("memoryclaw") / "skills_templates" / _TEMPLATE
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    raise FileNotFoundError(f"skills_templates/{_TEMPLATE} is missing from this installation")


@dataclass(frozen=True)
class _Occurrence:
    """Where a pattern ran: the log, the request, and the index of its first call there."""

    path: str
    request: _Request
    start: int


def _occurrences(root: Path, pattern: tuple[str, ...], paths: Sequence[str]) -> list[_Occurrence]:
    """The first request running ``pattern`` in each of the newest example logs."""
    from ..vault.rawlogs import redacted_log

    found: list[_Occurrence] = []
    for rel in paths[-MAX_EXAMPLES:]:
        try:
            # redacted once, here: a waiting log may have been written with redaction off,
            # and a draft copies requests, arguments and results from these examples
            log = redacted_log(parse_log(read_text(root, rel), rel))
        except _UNREADABLE:
            continue
        for request in _requests(log):
            tools = tuple(step.tool for step in request.steps)
            size = len(pattern)
            start = next((i for i in range(len(tools)) if tools[i : i + size] == pattern), None)
            if start is not None:
                found.append(_Occurrence(rel, request, start))
                break
    return found


def _render_draft(root: Path, name: str, pattern: tuple[str, ...], paths: Sequence[str]) -> str:
    examples = _occurrences(root, pattern, paths)
    flow = ", then ".join(pattern)
    description = (
        f"Suggested from {len(paths)} sessions: {flow}. "
        "TODO: say what this does and when to use it."
    )
    metadata = {
        "memoryclaw": {
            "status": "draft",
            "occurrences": len(paths),
            "pattern": list(pattern),
            "examples": [example.path for example in examples],
        }
    }
    return Template(_template_text()).substitute(
        name=name,
        description=json.dumps(_one_line(description, _DESCRIPTION_CHARS), ensure_ascii=False),
        metadata=json.dumps(metadata, ensure_ascii=False),
        title=", then ".join(tool.replace("_", " ") for tool in pattern).capitalize(),
        occurrences=len(paths),
        requests=_request_lines(examples),
        steps="\n".join(_step_lines(pattern, examples)),
        parameters="\n".join(_parameter_lines(pattern, examples)),
        examples="\n\n".join(_example_blocks(pattern, examples)),
    )


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _shown_arguments(text: str) -> str:
    """Arguments as a draft shows them: the value of a secret-looking key is never copied."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text  # redacted with its log
    from ..vault.redact import redact_fields  # as in _redact

    return json.dumps(redact_fields(value), ensure_ascii=False)


def _request_lines(examples: Sequence[_Occurrence]) -> str:
    lines = [
        f'  - "{_one_line(e.request.user, _REQUEST_CHARS)}"'
        for e in examples
        if e.request.user.strip()
    ]
    return "\n".join(lines) or "  - (no user message came before these calls)"


def _argument_names(examples: Sequence[_Occurrence], step: int) -> list[str]:
    names: dict[str, None] = {}
    for e in examples:
        names.update(dict.fromkeys(_arguments(e.request.steps[e.start + step].arguments)))
    return list(names)


def _step_lines(pattern: Sequence[str], examples: Sequence[_Occurrence]) -> Iterable[str]:
    for number, tool in enumerate(pattern, start=1):
        names = _argument_names(examples, number - 1)
        given = f" with {', '.join(f'`{n}`' for n in names)}" if names else ""
        yield f"{number}. Call `{tool}`{given}."


def _source(value: Any, request: _Request, index: int) -> str | None:
    """Where an argument's value was seen before the call: the user's words or a result."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value).casefold()
    if len(text) < 2:
        return None
    if text in request.user.casefold():
        return "the user's request"
    for step in reversed(request.steps[:index]):
        if any(text in result.casefold() for result in step.results):
            return f"the result of `{step.tool}`"
    return None


def _parameter_lines(pattern: Sequence[str], examples: Sequence[_Occurrence]) -> list[str]:
    lines = []
    for number, tool in enumerate(pattern, start=1):
        for name in _argument_names(examples, number - 1):
            sources: Counter[str] = Counter()
            seen = 0
            for e in examples:
                index = e.start + number - 1
                arguments = _arguments(e.request.steps[index].arguments)
                if name in arguments:
                    seen += 1
                    source = _source(arguments[name], e.request, index)
                    if source:
                        sources[source] += 1
            hint = "its value was not seen earlier in the examples"
            if sources:
                source, count = min(sources.items(), key=lambda item: (-item[1], item[0]))
                hint = f"matched {source} in {count} of {seen} examples"
            lines.append(f"- `{name}` (step {number}, `{tool}`): {hint}.")
    return lines or ["- (no arguments were seen in the examples)"]


def _example_blocks(pattern: Sequence[str], examples: Sequence[_Occurrence]) -> list[str]:
    blocks = []
    for e in examples:
        calls = e.request.steps[e.start : e.start + len(pattern)]
        body = "\n".join(
            f"{s.tool} {_one_line(_shown_arguments(s.arguments), _ARGUMENT_CHARS)}" for s in calls
        )
        blocks.append(f"From `{e.path}`:\n\n```text\n{body}\n```")
    return blocks or ["(the example logs are no longer available)"]


# --------------------------------------------------------------------- review


def list_skills(root: Path) -> list[SkillInfo]:
    """Every ``skills/*/SKILL.md`` by folder name; unreadable ones have status ``invalid``."""
    return [read_skill(root, name, plain)[0] for name, plain in skill_folders(root).items()]


def approve_skill(root: Path, name: str) -> SkillInfo:
    """Mark a skill approved (it may still hold TODO markers: see ``todos``)."""
    return _set_status(root, name, "approved")


def reject_skill(root: Path, name: str) -> SkillInfo:
    """Mark a skill rejected: never active, and its pattern is not suggested again."""
    return _set_status(root, name, "rejected")


def _set_status(root: Path, name: str, status: str) -> SkillInfo:
    with file_lock(root, "skills"):
        if name not in skill_folders(root):
            raise NotFoundError("skill", name)
        rel = f"{SKILLS_DIR}/{name}/SKILL.md"
        text = read_text(root, rel)
        info, _ = parse_skill(name, rel, text)  # a malformed file is reported, not rewritten
        if info.status == status:
            return info
        text = with_status(text, rel, status)
        atomic_write(resolve_inside(root, rel), text)
        return parse_skill(name, rel, text)[0]
