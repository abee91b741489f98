"""The words of a text as search and the summarizer read them: keywords, sentences, small talk.

:func:`extract_keywords` gives a query's (or a turn's) keywords, :data:`STOPWORDS` left out;
:func:`sentences` splits at a sentence's end, never after a title's dot ("Dr. Okafor");
:func:`without_stock_phrases` drops an assistant's openers and offers of more help.  Retrieval,
the index's log lines and the summarizer share them, so a word is read the same way at every
stage.
"""

from __future__ import annotations

import functools
import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = r"[^\W\d_](?:[\w]|['’-](?=\w))*"  # keeping inner hyphens and apostrophes
_WHOLE_TOKEN_RE = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # email
    r"|https?://\S+"  # url
    r"|\d{4}-\d{2}-\d{2}(?:t[\d:]+z?)?"  # date
    r"|~?(?:[\w.-]*/)+[\w.-]+"  # path
    r"|\d+(?:[.,:]\d+)*%?"  # number
    rf"|{_WORD}",
    re.UNICODE,
)
# Every other kind of token needs a digit, an "@" or a "/": a text with none holds words only.
_WORD_RE = re.compile(_WORD, re.UNICODE)
_NOT_WORD_RE = re.compile(r"[\d@/]", re.UNICODE)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm
    i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not
    of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's will with won't would
    wouldn't you you'd you'll you're you've your yours yourself yourselves also just like get
    got tell told say said know remember recall anything something thing things ever yet
    please thanks hey hi ok okay
    """.split()
)


# A turn made only of these words carries nothing a later question could ask about.
SMALL_TALK = _words(
    """hello hey hi bye goodbye thanks thank thx cheers ok okay yes yeah yep yup nope sure great
    good nice cool awesome wow lol haha welcome see soon later talk take care"""
)
# The titles whose dot ends no sentence (:data:`memoryclaw.consolidate.names.TITLES`).
TITLE_ALT = "Dr|Mrs|Mr|Ms|Mx|Prof|St|Rev|Fr|Sr|Jr|Capt|Lt|Sgt|Col|Gen|Hon"
_NO_STOP = "".join(rf"(?<!\b{t}\.)" for t in TITLE_ALT.split("|")) + r"(?<!\b[A-Z]\.)"


# Compiled on first use, as the other patterns marked so: a fresh process (a recall, a logged
# turn) pays for every pattern compiled at import, and most serve a question it is not asked.
# An assistant's stock phrases, about no topic: openers ("Sure!", "Great question!", "Here's
# what I found") are cut from a sentence, and a sentence offering more help ("I'd be happy
# to help", "Let me know if ...", "Hope this helps") is dropped whole.
@functools.cache
def _opener_re() -> re.Pattern[str]:
    return re.compile(
        r"(?i)^(?:(?:sure(?: thing)?|certainly|of course|absolutely|no problem|got it|okay|ok"
        r"|(?:great|good|excellent) question|you['’]re (?:very )?welcome|glad you asked)"
        r"\b[!.,:]*\s*)+"
        r"|^here(?:['’]s| is| are)\b(?: (?:what I \w+|an? (?:quick |short |brief )?\w+))?[:,]?\s*"
    )


@functools.cache
def _offer_re() -> re.Pattern[str]:
    return re.compile(
        r"(?i)\b(?:(?:happy|glad) to (?:help|assist)|let me know|feel free|don['’]t hesitate"
        r"|hope (?:this|that|it) helps|anything else|any (?:other|more|further) questions"
        r"|is there anything|if you (?:need|want) (?:anything|more|help))\b"
    )


@functools.cache
def _sentence_split_re() -> re.Pattern[str]:
    return re.compile(rf"(?<=[.!?]){_NO_STOP}\s+|\s*\n\s*")


def composed(text: str) -> str:
    """``text`` with its accents composed (NFC)."""
    if text.isascii():
        return text
    import unicodedata  # here: most texts are ASCII

    return unicodedata.normalize("NFC", text)


def extract_keywords(query: str) -> list[str]:
    """The query's keywords in order of appearance, without duplicates; accents composed
    ("café" typed as "e" and a combining accent is "café", not "cafe")."""
    seen: dict[str, None] = {}  # ordered, with O(1) membership: turns can be long
    text = composed(query.lower())
    tokens = (_WHOLE_TOKEN_RE if _NOT_WORD_RE.search(text) else _WORD_RE).findall(text)
    for token in tokens:
        token = token.rstrip(".,;:!?)'’")
        if token.endswith(("'s", "’s")):
            token = token[:-2]
        token = token.replace("’", "'")
        if len(token) >= 2 and token not in STOPWORDS:
            seen.setdefault(token)
    return list(seen)


def sentences(text: str) -> list[str]:
    """The sentences and lines of ``text``, stripped; blank ones dropped."""
    return [s.strip() for s in _sentence_split_re().split(text) if s.strip()]


def without_stock_phrases(text: str) -> str:
    """An assistant's turn without its stock phrases (openers, offers of more help)."""
    kept = (_opener_re().sub("", s) for s in sentences(text) if not _offer_re().search(s))
    return " ".join(s for s in kept if s)
