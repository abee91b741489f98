"""Summaries by a local model through Ollama, with the extractive summarizer as the floor.

The log is cut and summarized by :func:`memoryclaw.consolidate.summarize.summarize_log` first, so
the turn ranges (and with them the episode ids) do not depend on the model.  For each segment the
model is asked, with temperature 0 and a JSON schema, for a better summary, tags, entities and
facts.  Its reply is validated by hand and redacted; the extractive details (which carry the
searchable words) and facts are kept.  Any failure leaves that segment's extractive draft in
place with one warning on the ``memoryclaw.llm`` logger: consolidation never fails because of
the model.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..vault.logformat import RawLog
from ..vault.naming import slugify
from ..vault.redact import redact
from ..vault.values import value_kind
from .extraction import SECRET_FIELD_RE, FactDraft
from .summarize import EpisodeDraft, summarize_log

if TYPE_CHECKING:
    from ollama import Client

    from ..vault.config import LlmSettings, Settings
    from .pipeline import Summarizer

_log = logging.getLogger("memoryclaw.llm")

SUMMARY_LIMIT = 300
_MIN_TAGS, _MAX_TAGS = 3, 7
_KEYS = ("summary", "tags", "entities", "facts")
_FACT_KEYS = ("entity", "field", "value", "confidence")
_CONFIDENCE = ("low", "medium", "high")
_KIND_FIELDS = {"email": "email", "url": "url", "website": "url", "phone": "phone"}
_DATE_FIELDS = frozenset({"birthday", "deadline", "due", "date", "anniversary"})
_DATE_FORMATS = ("%Y-%m-%d", "%B %d %Y", "%b %d %Y", "%d %B %Y", "%d %b %Y")
# Never stored, whatever the model says: the extractive summarizer skips these fields too.

_STRING = {"type": "string"}
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "maxLength": SUMMARY_LIMIT},
        "tags": {"type": "array", "items": _STRING, "minItems": _MIN_TAGS, "maxItems": _MAX_TAGS},
        "entities": {"type": "array", "items": _STRING},
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "entity": _STRING,
                    "field": _STRING,
                    "value": _STRING,
                    "confidence": {"type": "string", "enum": list(_CONFIDENCE)},
                },
                "required": list(_FACT_KEYS),
            },
        },
    },
    "required": list(_KEYS),
}
_INSTRUCTIONS = f"""\
You summarize one part of a conversation for a long-term memory. Reply with JSON only:
"summary": one sentence (at most {SUMMARY_LIMIT} characters) saying who asked for or did what;
"tags": {_MIN_TAGS} to {_MAX_TAGS} lowercase topic keywords (letters, digits, hyphens);
"entities": the people, projects, places and things the conversation names;
"facts": durable facts the conversation states, each with "entity", "field", "value" and
"confidence" (low, medium or high). Prefer the fields email, phone, birthday, address,
deadline, url, likes, dislikes, prefers. Write dates as YYYY-MM-DD. State only what the
conversation says; never infer. Never include passwords, keys or tokens.
A rule-based draft is given; keep what is right in it and improve the rest."""


class _Invalid(ValueError):
    """The model's reply breaks the schema."""


def summarizer_for(settings: Settings) -> Summarizer:
    """The summarizer ``llm.provider`` asks for: extractive for ``none``, else Ollama."""
    if settings.llm.provider == "none":
        return summarize_log
    return ollama_summarizer(settings.llm)


def ollama_summarizer(settings: LlmSettings) -> Summarizer:
    """A summarizer asking Ollama to improve each extractive draft, falling back on failure."""
    try:
        import ollama  # noqa: F401  (an optional extra: imported only when asked for)
    except ImportError:
        _log.warning(
            "llm.provider is 'ollama' but the ollama package is missing "
            "(pip install 'memoryclaw[ollama]'); using the extractive summarizer"
        )
        return summarize_log
    return _OllamaSummarizer(settings)


def ollama_status(settings: LlmSettings, timeout: float = 2.0) -> tuple[str, str]:
    """``(status, detail)`` for ``doctor``: whether the server at ``baseUrl`` answers and has
    the model (``GET /api/tags``; plain urllib, so it works without the ollama package)."""
    import urllib.request  # here: with http, ssl and email it costs every process ~25 ms

    base = settings.base_url if "://" in settings.base_url else f"http://{settings.base_url}"
    try:
        if not base.startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")
        with urllib.request.urlopen(base.rstrip("/") + "/api/tags", timeout=timeout) as answer:
            data = json.load(answer)
        names = {str(m.get("name")) for m in data["models"] if isinstance(m, dict)}
    except (OSError, ValueError, LookupError, TypeError) as exc:
        fallback = "consolidation uses the extractive summarizer"
        return "warn", f"Ollama at {settings.base_url} does not answer ({exc}); {fallback}"
    if not names & {settings.model, f"{settings.model}:latest"}:
        pull = f"ollama pull {settings.model}"
        return "warn", f"Ollama at {settings.base_url} answers but has no {settings.model} ({pull})"
    return "ok", f"Ollama at {settings.base_url} answers and has {settings.model}"


class _OllamaSummarizer:
    """One consolidation run's summarizer; after the server fails to answer it stops asking,
    so a run over many logs does not wait ``timeoutSeconds`` for every segment."""

    def __init__(self, settings: LlmSettings) -> None:
        self.settings = settings
        self.unreachable = False

    def __call__(self, log: RawLog) -> list[EpisodeDraft]:
        drafts = summarize_log(log)
        if not drafts or self.unreachable:
            return drafts
        try:
            import ollama

            client = ollama.Client(
                host=self.settings.base_url, timeout=self.settings.timeout_seconds
            )
        except Exception as exc:  # a malformed baseUrl must not stop consolidation
            self._warn(log, drafts[0], exc)
            return drafts
        try:
            return [self._improve(client, log, draft) for draft in drafts]
        finally:
            client.close()  # type: ignore[no-untyped-call]  # unannotated in ollama

    def _improve(self, client: Client, log: RawLog, draft: EpisodeDraft) -> EpisodeDraft:
        if self.unreachable:
            return draft
        turns = [
            (number, redact(log.turns[number - 1].content))
            for number in range(draft.first_turn, draft.last_turn + 1)
        ]
        try:
            response = client.chat(
                model=self.settings.model,
                messages=_messages(log, draft, turns),
                format=_SCHEMA,
                options={"temperature": 0},
            )
            return _merge(draft, *_parse(response.message.content), turns)
        except Exception as exc:  # whatever went wrong, the extractive draft stands
            self._warn(log, draft, exc)
            return draft

    def _warn(self, log: RawLog, draft: EpisodeDraft, exc: Exception) -> None:
        reason, transport = _reason(exc, self.settings)
        self.unreachable = self.unreachable or transport
        rest = "; the rest of this run is summarized without it" if transport else ""
        _log.warning(
            "%s turns %d-%d: Ollama summary not used (%s); kept the extractive summary%s",
            log.path,
            draft.first_turn,
            draft.last_turn,
            reason,
            rest,
        )


def _reason(exc: Exception, settings: LlmSettings) -> tuple[str, bool]:
    """What went wrong, in a few words, and whether the server itself is out of reach."""
    import httpx
    import ollama

    where = settings.base_url
    if isinstance(exc, _Invalid):
        return f"invalid reply: {exc}", False
    if isinstance(exc, ollama.ResponseError):
        return f"HTTP {exc.status_code} from {where}: {str(exc.error)[:200]}", False
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer from {where} within {settings.timeout_seconds:g} s", True
    if isinstance(exc, (ConnectionError, httpx.TransportError)):
        return f"cannot reach Ollama at {where} ({type(exc).__name__})", True
    return f"{type(exc).__name__}: {str(exc)[:200]}", False


def _messages(
    log: RawLog, draft: EpisodeDraft, turns: Sequence[tuple[int, str]]
) -> list[dict[str, str]]:
    lines = [f"Conversation, turns {draft.first_turn}-{draft.last_turn}:"]
    for number, text in turns:
        turn = log.turns[number - 1]
        who = " ".join(p for p in (turn.role, turn.name, turn.tool) if p)
        lines.append(f"[{number}] {who} ({turn.timestamp:%Y-%m-%d %H:%M}): {text}")
    rough = {
        "summary": draft.summary,
        "tags": list(draft.tags),
        "entities": list(draft.entities),
        "facts": [{k: getattr(f, k) for k in _FACT_KEYS} for f in draft.facts],
    }
    lines += ["", "Draft:", json.dumps(rough, ensure_ascii=False)]
    return [
        {"role": "system", "content": _INSTRUCTIONS},
        {"role": "user", "content": "\n".join(lines)},
    ]


# ------------------------------------------------------------------------- validation

_Fact = tuple[str, str, str, str]


def _parse(content: str | None) -> tuple[str, tuple[str, ...], tuple[str, ...], list[_Fact]]:
    """(summary, tags, entities, facts) from the reply, redacted; :class:`_Invalid` if bad."""
    try:
        data = json.loads(content or "")
    except (ValueError, RecursionError) as exc:
        raise _Invalid(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or sorted(data) != sorted(_KEYS):
        raise _Invalid("expected an object with exactly summary, tags, entities and facts")
    summary = redact(_text(data["summary"], "summary", SUMMARY_LIMIT))
    tags = _tags(_list(data["tags"], "tags"))
    entities: dict[str, str] = {}
    for item in _list(data["entities"], "entities"):
        entity = _text(item, "entity", 80)
        if redact(entity) == entity:
            entities.setdefault(entity.casefold(), entity)
    facts = [_fact(item) for item in _list(data["facts"], "facts")]
    return summary, tags, tuple(entities.values()), [f for f in facts if f is not None]


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid(f"{what} is not a list")
    return value


def _text(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{what} is not a string")
    text = " ".join(value.split())
    if not text:
        raise _Invalid(f"{what} is empty")
    if len(text) > limit:
        raise _Invalid(f"{what} is longer than {limit} characters")
    return text


def _tags(items: Sequence[Any]) -> tuple[str, ...]:
    """Tags slugified ("Project X" -> "project-x"); a tag holding a secret is dropped."""
    tags: dict[str, None] = {}
    for item in items:
        ascii_text = unicodedata.normalize("NFKD", _text(item, "tag", 40))
        tag = re.sub(r"[^a-z0-9]+", "-", ascii_text.encode("ascii", "ignore").decode().lower())
        tag = tag.strip("-")
        if tag and redact(tag) == tag:
            tags[tag] = None
    if not _MIN_TAGS <= len(tags) <= _MAX_TAGS:
        raise _Invalid(f"{len(tags)} tags (expected {_MIN_TAGS} to {_MAX_TAGS})")
    return tuple(tags)


def _fact(item: Any) -> _Fact | None:
    """A checked (entity, field, value, confidence); None for one that must not be stored."""
    if not isinstance(item, dict) or sorted(item) != sorted(_FACT_KEYS):
        raise _Invalid("a fact is not an object with exactly entity, field, value, confidence")
    entity = _text(item["entity"], "fact entity", 80)
    field = _text(item["field"], "fact field", 40).lower()
    field = "email" if field in {"e-mail", "email address", "e-mail address"} else field
    value = _text(item["value"], "fact value", 120)
    confidence = str(item["confidence"]).strip().lower()
    if confidence not in _CONFIDENCE:
        raise _Invalid(f"confidence {item['confidence']!r} is not low, medium or high")
    kind = _KIND_FIELDS.get(field)
    if kind is not None and value_kind(value) != kind:
        raise _Invalid(f"{entity} {field} {value!r} is not a valid {kind}")
    if (field in _DATE_FIELDS or field.endswith(" date")) and not _is_date(value):
        raise _Invalid(f"{entity} {field} {value!r} is not a date")
    if SECRET_FIELD_RE.search(field) or redact(f"{entity} {value}") != f"{entity} {value}":
        return None
    return entity, field, value, confidence


def _is_date(value: str) -> bool:
    """ISO, or a written date; a yearly one ("April 5") is checked against a leap year."""
    text = " ".join(re.sub(r"(?<=\d)(?:st|nd|rd|th)\b|,", " ", value).split())
    for candidate in (text, f"{text} 2000"):
        for fmt in _DATE_FORMATS:
            try:
                datetime.strptime(candidate, fmt)
                return True
            except ValueError:
                continue
    return False


# ------------------------------------------------------------------------------ merge


def _merge(
    draft: EpisodeDraft,
    summary: str,
    tags: tuple[str, ...],
    entities: tuple[str, ...],
    facts: Sequence[_Fact],
    turns: Sequence[tuple[int, str]],
) -> EpisodeDraft:
    """The draft with the model's summary, tags and entities, and both sets of facts.

    Extractive facts come first, so on a duplicate their rule-based confidence wins.  A model
    fact whose value appears in no turn is kept at low confidence: it goes to ``_pending.md``
    for review rather than into the semantic files (seed spec 4.2, hallucinated facts).
    """
    merged: dict[tuple[str, str, str], FactDraft] = {}
    for known in draft.facts:
        merged.setdefault(_key(known.entity, known.field, known.value), known)
    for entity, field, value, confidence in facts:
        needle = value.casefold()
        turn = next((n for n, text in turns if needle in " ".join(text.split()).casefold()), None)
        fact = FactDraft(
            entity,
            field,
            value,
            confidence if turn is not None else "low",
            turn if turn is not None else draft.first_turn,
        )
        merged.setdefault(_key(entity, field, value), fact)
    return dataclasses.replace(
        draft,
        summary=summary,
        tags=tags,
        entities=entities,
        facts=tuple(merged.values()),
        slug=slugify(" ".join(tags[:3]), max_length=40),
    )


def _key(entity: str, field: str, value: str) -> tuple[str, str, str]:
    return entity.casefold(), field.casefold(), " ".join(value.split()).casefold()
