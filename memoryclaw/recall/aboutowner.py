"""A question about the owner as a whole: "what do you know about me?", "tell me about
myself", "who am I?".

It names no topic for search to find (its words are all stopwords), yet the vault holds the
answer: the fact files about the owner, ``preferences.md`` and ``instructions.md`` of any fact
folder, the facts consolidation read from the owner's own turns (entity ``OWNER_ENTITY``) and
every standing instruction and preference wherever it is filed (:mod:`.standing`).  Such a
question is answered with those facts, current ones only and those the recall rules admit, in
file order (a hand-written file's sections read as its author grouped them), as many as the
budget holds.  The test is a closed set of whole questions, so
"what do you know about me and Paris?" is an ordinary search for Paris.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime

from ..index.fulltext import owner_files_clause
from ..index.store import Index
from ..vault.factnames import OWNER_ENTITY, OWNER_FILES, STANDING_FIELDS, UNNAMED_FIELDS
from ..vault.scopes import DIRECT, Policy
from .rank import _fact_result
from .results import FactResult


@functools.cache  # compiled on first use: most turns never ask it
def _question_re() -> re.Pattern[str]:
    you = r"(?:you|u)"
    me = r"(?:me|myself)"
    asks = (
        rf"what (?:do|did|can|could) {you} (?:know|remember|recall|tell me|say)"
        rf"(?: so far| already| by now)? (?:about|of|on) {me}",
        rf"what (?:have|has) {you} (?:learned|learnt|noted|remembered|stored|saved|got|kept)"
        rf" (?:about|of|on) {me}",
        rf"what (?:do|did) {you} have (?:on file )?(?:about|of|on) {me}",
        rf"tell me (?:everything |all |what {you} know )?about {me}",
        r"who am i",
        r"describe me",
        r"what(?:['’]s| is) (?:in )?my profile",  # a phone types ’ for '
    )
    return re.compile(
        rf"^\W*(?:(?:so|ok|okay|hey|and|now|then|please)\W+)*(?:{'|'.join(asks)})"
        r"(?:\W+(?:so far|already|by now|please))?\W*$",
        re.IGNORECASE,
    )


def is_about_owner(query: str) -> bool:
    """Whether ``query`` asks what the memory holds about the owner as a whole."""
    return len(query) < 120 and _question_re().match(query.strip()) is not None


def owner_asks(policy: Policy) -> bool:
    """Whether the one asking under ``policy`` is the owner: at the terminal or in a direct
    conversation (in a group, "me" is whoever asks)."""
    context = policy.context
    return context.is_terminal or context.scope(policy.owner_ids) == DIRECT


def owner_facts(index: Index, policy: Policy, now: datetime) -> list[FactResult]:
    """The current facts about the owner ``policy`` admits, in file order: the lines of
    ``OWNER_FILES`` in any fact folder that name no field (written about the owner), those of
    ``OWNER_ENTITY``, and every standing instruction and preference; not what consolidation
    filed there of somebody else ("- Bo (likes): pottery"); none where other people read (in
    a group, "me" is whoever asks, not the owner)."""
    if not owner_asks(policy):
        return []
    files, params = owner_files_clause(OWNER_FILES)
    unnamed = ", ".join(f"'{field}'" for field in UNNAMED_FIELDS)
    fields = ", ".join(f"'{field}'" for field in STANDING_FIELDS)
    rows = index.fact_rows(
        f"(({files} AND field IN ({unnamed})) OR entity = ? COLLATE NOCASE"
        f" OR field IN ({fields})) AND superseded = 0",
        [*params, OWNER_ENTITY],
    )
    admitted = [(r, policy.admit(r["agent"], r["scope"])) for r in rows]  # in file order
    return [_fact_result(r, now, admitted_by=why) for r, (ok, why) in admitted if ok]
