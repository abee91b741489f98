"""The synonym groups of ``semantic/aliases.yaml``, read into term -> its synonyms."""

from __future__ import annotations

from typing import Any

from ..errors import ParseError
from .safeyaml import load_yaml

# A term is expanded to every other term of its groups in each query: past this many, a
# search would be one huge OR of synonyms (and the index one row per pair of them).
MAX_SYNONYMS = 100


def parse_aliases(text: str, path: str) -> dict[str, tuple[str, ...]]:
    """Read ``aliases.yaml`` into term -> every other term of its group, both directions.

    A term with more than ``MAX_SYNONYMS`` synonyms (in one group or across several) is
    refused, so reading and using the file costs time linear in its size.
    """
    raw = load_yaml(text, path) if text.strip() else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParseError(path, f"expected a mapping of term: [synonyms], got {type(raw).__name__}")
    groups: dict[str, set[str]] = {}
    for key, value in raw.items():
        if isinstance(value, str):
            synonyms: list[Any] = [value]
        elif isinstance(value, list):
            synonyms = value
        elif value is None:
            synonyms = []
        else:
            raise ParseError(
                path, f"{key}: expected a list of synonyms, got {type(value).__name__}"
            )
        if len(synonyms) > MAX_SYNONYMS:
            raise _too_many_synonyms(path, key)
        terms = {str(t).strip().lower() for t in [key, *synonyms] if str(t).strip()}
        for term in terms:
            others = groups.setdefault(term, set())
            others.update(terms - {term})
            if len(others) > MAX_SYNONYMS:
                raise _too_many_synonyms(path, term)
    return {term: tuple(sorted(others)) for term, others in sorted(groups.items())}


def _too_many_synonyms(path: str, term: object) -> ParseError:
    return ParseError(path, f"{term}: more than {MAX_SYNONYMS} synonyms, over the limit")
