"""Trivial messages: greetings, acknowledgements, fillers, laughter and emoji, nothing else.

Such a message ("ok thanks, sounds great 👍", "hi!", "lol", "sure") asks nothing of memory, so
recall skips it (GoClaw's trivial filter).  Unlike GoClaw's "fewer than 3 meaningful words"
rule, length is not the test: "John's email?" is short and asks for a memory.  The rule is a
closed list: a message is trivial when, lowercased and with punctuation, emoji and symbols
taken out, every word in it is one of ``TRIVIAL_WORDS``.  Any other word makes it not trivial.
"""

from __future__ import annotations

import re
import unicodedata

# English greetings, farewells, acknowledgements, politeness, fillers and laughter.  Each
# entry is one word: "thank you", "sounds good", "got it" and "good night" are trivial because
# each of their words is listed.  Words that carry a topic on their own ("email", "tomorrow")
# never belong here.
TRIVIAL_WORDS = frozenset(
    """
    hi hello hey heya hiya yo howdy greetings morning evening afternoon night good
    bye goodbye cya see ya later gn gm
    thanks thank thx ty tysm thnx thanx cheers appreciate appreciated much you very so
    ok okay k kk okey oki okie alright sure yes yeah yea yep yup no nope nah
    cool great nice awesome perfect fine excellent wonderful lovely neat sweet amazing
    sounds sound good got it noted understood roger right gotcha makes sense will do
    lol lmao rofl haha hahaha hehe heh hah ha xd
    hmm hm um uh uhh umm ah oh ooh wow welp well mhm
    np welcome worries all
    """.split()
)
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# Laughter and fillers are spelled with any number of repeats ("hahahaha", "hmmmm", "okkk").
_LAUGH_RE = re.compile(r"(?:a?h[aeo])+h?|(?:l+o+)+l+|x+d+|h+m+|u+m+|o+k+")


def _words(text: str) -> list[str]:
    """The words of ``text``, lowercased; emoji, symbols and punctuation are not words."""
    # Symbols go before NFKC, which would spell some of them with letters ("㈀" -> "(ᄀ)");
    # letters and digits are folded by it ("ｏｋ" -> "ok").
    kept = "".join(c if unicodedata.category(c)[0] in "LNM" or c in "'’" else " " for c in text)
    return _WORD_RE.findall(unicodedata.normalize("NFKC", kept).lower())


def is_trivial_word(word: str) -> bool:
    """Whether one lowercased word is a greeting, acknowledgement, filler or laughter."""
    return word in TRIVIAL_WORDS or _LAUGH_RE.fullmatch(word) is not None


def is_trivial(text: str) -> bool:
    """Whether ``text`` holds only greetings, acknowledgements, fillers, laughter and emoji
    (an empty or blank message is trivial too: it asks nothing)."""
    return all(is_trivial_word(word) for word in _words(text))
