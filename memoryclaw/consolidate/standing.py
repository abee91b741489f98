"""Standing instructions and preferences: what the owner asks of every later answer.

No model is involved. A sentence of a human turn is a standing **instruction** when it opens
(after a word like "also", "please" or "actually") with "always …", "never …", "from now on …",
"going forward …", "whenever I ask about X, …", "make sure to …", "please keep … short" (or "…
to two sentences max"), "stop …ing", "don't ever …" or "I'd like you to always …", or is an
order that ends so ("call me Sam from now on"), and a standing **preference** when it opens with
"I prefer …", "I'd rather …", "I love / like / enjoy / hate / can't stand …", "I prioritize …",
"my favourite … is …", "I'm more of a … person", "I'm (not) a big fan of …", or states what the
speaker cannot or will not eat ("I'm allergic to …", "I have a … allergy", "I'm vegetarian", "I
don't eat …"; a diet or allergy ending its clause, a food and not a place or a time, so "a vegan
cookbook author" and "I don't eat there anymore" are none, while "I'm not vegetarian anymore" is
one, which takes the earlier one back), or opens a clause after what leads to it ("I'm short on
time, so I prefer …"), unless what leads to it is a name ("Anna - I'm vegetarian" is Anna's);
"my preference for …" holds one as given wherever it stands, in a question too. The cue must
open the sentence (a preference's, its clause), so "if I always …", "she prefers …", "my boss
said: always …" and "I'll make sure to …" are none; nor is a question ("do I prefer …?"), text
in quotes, or a wish ("I'd love to …"). An instruction followed by a request in the same
sentence keeps the instruction only; a preference keeps the sentence, its reason and request
included ("I prefer ETFs for the fees, can you compare two?"): they say what the taste is for.

Each is filed as a fact (:class:`~memoryclaw.consolidate.extraction.FactDraft`) of the
speaker, field ``instruction`` or ``preference``, whose value is the speaker's own (redacted)
sentence; consolidation gives it its source, date, turn and scope like any fact, and an
other speaker's one is UNTRUSTED like any other fact of theirs.  :func:`topic_of` reads the
topic a sentence applies to ("when I ask about ETFs": ``ETFs``), and :func:`reverses` whether a
later statement takes an earlier one back ("actually, stop adding yields").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..recall.standing import ASK_PATTERN, NEAR_TURNS, StandingFact, content_words, topic_of
from ..vault.factnames import (
    INSTRUCTION,
    INSTRUCTIONS_FILE,
    OWNER_ENTITY,
    PREFERENCE,
    PREFERENCES_FILE,
)
from ..vault.files import SEMANTIC_DIR
from ..vault.values import value_key
from ..vault.words import STOPWORDS, sentences
from .names import GENERIC

if TYPE_CHECKING:  # a recall reads statements of turns not yet consolidated without these
    from ..vault.turnlines import TurnView
    from .extraction import FactDraft

MAX_CHARS = 300  # a longer sentence is cut at a word: a standing line must stay short

# Words that may open a sentence before its cue: "Oh and also, please always …".
_LEAD = (
    r"(?:(?:also|and|oh|btw|ok|okay|so|actually|but|just|please|hey|anyway|honestly|one more"
    r" thing|by the way|for the record|fyi|for future reference|in general|generally|remember"
    r"|(?:a )?quick note|note|(?:a )?heads[- ]up|just so you know|for your info\w*)"
    r"[,:;!]?\s+)*"
)
# Where an order says it stands from now on, it may end with that: "Reply in Spanish from now on."
_FROM_NOW_ON = r"(?:from now on|going forward|moving forward|from here on(?: out)?|henceforth)"
# The verbs such an order opens with: what the agent does when it answers.
_IMPERATIVE = (
    r"(?:answer|reply|respond|use|call|address|write|keep|include|add|avoid|give|show|list"
    r"|provide|explain|cite|mention|format|put|send|tell|say|ask|remind|check|double-check"
    r"|confirm|suggest|recommend|speak|talk|spell|translate|round|convert|assume|refer|sign"
    r"|end|start|begin|skip|leave|treat|quote|label|highlight|summari[sz]e|remember|stop|be)"
)
# Each lead is read one way only ("just a heads up" is "just" and "a heads up"): a lead that
# could also be read as two others makes the repeat try every split of a long run of them.
_INSTRUCTION_RES = tuple(
    re.compile(rf"(?i)^{_LEAD}{p}")
    for p in (
        r"(?:please )?(?P<neg>always|never|don['’]t ever|do not ever|never ever)"
        r" (?P<verb>[a-z][\w'’-]*)",
        r"(?:from now on|going forward|moving forward|in (?:the )?future|for all future \w+"
        r"|from here on(?: out)?)\b[,:]?\s+"
        # not the speaker's own plan: "moving forward, I think I'll focus on strokes"
        r"(?!(?:I think |I guess |maybe )?(?:I['’]ll|I will|I['’]m going|I am going|I plan"
        r"|we['’]ll|we will)\b)\S",
        rf"{ASK_PATTERN}\s*[,:-]?\s+\S",
        r"(?:please )?make sure (?:to|that you|you|that) \S",
        r"(?:please )?keep (?:your |the |all |my )?(?:answers?|responses?|replies|reply|it|things"
        r"|explanations?|summaries|messages?|them)\b[^.?!]{0,40}\b(?:short|brief|concise|simple"
        r"|under|to the point|plain|casual|formal|max(?:imum)?|at most"
        r"|(?:one|two|three|four|five|\d+) (?:sentences?|lines?|paragraphs?|words|bullet"
        r"(?: point)?s?))\b",
        # the cue at the end of an order: "Please call me Sam from now on."
        rf"(?:please )?(?:(?:don['’]t|do not) )?{_IMPERATIVE}\b[^.?!;]*?\b{_FROM_NOW_ON}\b",
        r"(?:please )?(?P<stop>stop|quit) (?P<what>[a-z]+ing)\b",
        r"(?:please )?(?:no more|don['’]t|do not) (?P<what2>[a-z]+) (?:any ?more|any longer)\b",
        r"I(?: want| need| would like|['’]d like) you to (?P<neg2>always|never|stop) \S",
    )
)
# Where a diet or an allergy ends its clause: "I'm vegan.", "I'm vegan, so …", "I'm vegan and …"
_CLAUSE_ENDS = (
    r"(?![\w-])(?=\s*(?:[^\w\s]|$)|\s+(?:and|so|but|too|now|though|these days|nowadays"
    r"|as well|myself|since|for|anymore|any more|any longer|after all)\b)"
)
_PREFERENCE_RES = tuple(
    re.compile(rf"(?i)^{_LEAD}{p}")
    for p in (
        r"I (?:really |much |generally |usually |definitely |strongly |tend to |do |also |still )*"
        r"(?P<neg>don['’]t |do not )?(?:really )?(?P<verb>prefer|like|love|enjoy|hate|dislike"
        r"|detest|adore|can['’]t stand|cannot stand|prioriti[sz]e) (?P<value>\S[^,;]*)",
        r"I['’]m (?:really |also |now |still )*prioriti[sz]ing (?P<value>\S[^,;]*)",
        r"(?:given|considering|with|because of|based on|due to) my (?:\w+ )?preference (?:for|of)"
        r" (?P<value>\S[^,;]*)",
        r"I['’]?d (?:much |really |generally )?rather (?P<value>\S[^,;]*)",
        r"I would (?:much |really )?rather (?P<value>\S[^,;]*)",
        r"my (?:all[- ]time |absolute |personal )?(?:favou?rite|preferred) (?P<value>\S[^,;]*)",
        r"I['’]m (?:more of |definitely |really |not |not really |much more of )*an? "
        r"(?P<value>[\w-]+(?: [\w-]+)?) (?:person|guy|girl|kind of (?:person|guy|girl))\b",
        r"I['’]m (?:not )?(?:a |really )?(?:big |huge )?fan of (?P<value>\S[^,;]*)",
        # what the owner cannot or will not eat, every later suggestion must respect; the
        # diet or allergy ends its clause ("a vegan cookbook author", "an allergy test
        # tomorrow" say something else), and what is not eaten is a food, not a place or a
        # time ("I don't eat there anymore", "I can't eat right now")
        r"I['’]m (?:also |severely |very |mildly |quite |really |not |no longer )*"
        r"(?:allergic|intolerant)"
        r" to (?P<value>\S[^,;]*)",
        r"I (?:have|['’]ve got) an? (?:severe |mild |bad |serious |slight )?"
        r"(?!(?:severe|mild|bad|serious|slight|new|food) (?:allergy|intolerance))"
        rf"(?P<value>[\w-]+(?: [\w-]+)?) (?:allergy|intolerance){_CLAUSE_ENDS}",
        # "I'm not vegetarian anymore" takes an earlier "I'm vegetarian" back (reverses)
        r"I['’]m (?:also |strictly |mostly |now |a |an |not |no longer )*"
        r"(?P<value>vegetarian|vegan|pescatarian"
        r"|coeliac|celiac|diabetic|lactose[- ]intolerant|gluten[- ]free|teetotal|kosher|halal)"
        rf"{_CLAUSE_ENDS}",
        r"I (?:don['’]t|do not|can['’]t|cannot|never) (?P<verb>eat|drink)"
        r" (?!(?:there|here|now|right|today|tonight|yet|until|till|before|after|and|or|much"
        r"|enough|alone|out|at|in|with|while|when|during|since|so|too|anymore|any more|again"
        r"|that much|this much|a lot|fast|quickly|slowly|properly|well)\b)"
        r"(?![^,;]*\b(?:today|tonight|right now|this (?:morning|afternoon|evening|week)"
        r"|at the moment)\b)(?P<value>\S[^,;]*)",
    )
)
_WISH_RE = re.compile(r"(?i)^(?:to|it|that|this|those|these|them|you|your|how|what|when|if)\b")
_QUOTE = "\ue000"  # stands for a quotation while a sentence is read, so none of its words count
_QUOTE_RE = re.compile(_QUOTE)
_QUOTED_RE = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’|(?<!\w)'[^'\n]*'(?!\w)")
# A request after the statement, in the same sentence: "I prefer ETFs, can you explain …?"
_THEN_ASK_RE = re.compile(
    r"(?i)(?:,|\s[-–—]|;)\s*(?:and |so |but )?(?:can|could|would|will|should|do|does|did|what|how"
    r"|why|which|where|is|are|any|please)\b.*$"
)
# Where the sentence goes on to something else: "I love pottery, and my dog is Oscar."
# "… and my PIN is 4512" says something else even without a comma, when "my …" has a verb.
_NEXT_CLAUSE_RE = re.compile(
    r"(?i)(?:[,;]\s+(?:and|but|so|plus|also)\s+(?=(?:I|I['’]\w+|my|we|it|this|that|he|she|they)\b)"
    r"|\s+and\s+(?=my\s+(?:[\w'’]+\s+){1,2}(?:is|are|was|were|loves?|likes?|hates?|prefers?)\b)"
    r"|\s[-–—]\s)"
)
# An instruction to the agent names the speaker ("when I ask", "for me") or what the agent
# does when it answers; advice between people ("don't ever quit on what you love") does neither.
_ADDRESSED_RE = re.compile(
    r"(?i)\b(?:I|me|my|mine|myself|answer(?:s|ed|ing)?|repl(?:y|ies|ying)"
    r"|respon(?:d|ds|ded|ding|ses?)|messages?"
    r"|explanations?|summar(?:y|ies|i[sz]e)|examples?|sources?|code|emojis?|format\w*"
    r"|includ\w*|us(?:e|ing)|mention\w*|cit(?:e|ing)|show\w*|list\w*|provid\w*|giv(?:e|ing)"
    r"|explain\w*|writ(?:e|ing)|add\w*|(?:double-)?check\w*|suggest\w*|recommend\w*"
    r"|remind\w*|highlight\w*|specif(?:y|ying)|confirm\w*|report\w*|label\w*|verif(?:y|ying)"
    r"|tell|say|ask\w*|call|spell|translat\w*|quot(?:e|ing)|round|convert\w*|avoid"
    # "keep it short" is how to answer; "keep an eye on the funds" a task of the moment
    r"|keep(?! an eye\b| track\b| tabs\b| on top\b)"
    r"|note|offer\w*|book\w*)\b"
)
# "my preference for ETFs" states a taste wherever it stands, but "what's my preference for …?"
# asks what it is.
_MY_PREFERENCE_RE = re.compile(
    r"(?i)\bmy (?:\w+ )?preference (?:for|of) (?!(?:it|this|that|them|these|those|what|how)\b)\w"
)
_ASKS_PREFERENCE_RE = re.compile(r"(?i)^(?:what|which|how)\b[^,]*\bmy (?:\w+ )?preference\b")
_LEAD_RE = re.compile(rf"(?i)^{_LEAD}$")
# A name before a dash speaks what follows it: "Anna - I'm vegetarian", "Dr. Lee — I never …".
_SPEAKER_RE = re.compile(r"^\s*(?:[A-Z][\w.'’]*\s+){0,2}[A-Z][\w.'’]*\s*[-–—:]\s*$")
_PAST_RE = re.compile(r"(?i)(?:ed|ew|ought|aught)$")
_NOT_VERBS = frozenset(
    "a an the been was were is are had have has mind again ever once before did got seen heard"
    " late too so really actually".split()
    # irregular past forms, said of what happened ("never saw this coming")
    + "saw went came thought knew took made said told felt found gave left ran wrote ate drank"
    " began became brought bought caught taught fought met sat stood understood forgot".split()
    # what follows "always"/"never" in a remark, not an order ("always good to hear")
    + "good great nice fun happy glad easy hard better best worth true fine welcome".split()
)
_REVERSE_RE = re.compile(
    r"(?i)\b(?:stop|quit|no more|never|don['’]t|do not|no longer|instead|anymore|any more"
    r"|any longer|not)\b"
)


@dataclass(frozen=True)
class Standing:
    """One standing statement read from a sentence."""

    kind: str  # INSTRUCTION or PREFERENCE
    sentence: str  # the speaker's words, as said (cut at MAX_CHARS)
    topic: str  # what it applies to ("ETFs"), "" when it does not say


def standing_statements(text: str) -> list[Standing]:
    """The standing instructions and preferences ``text`` (one human turn) states."""
    text = text.replace(_QUOTE, "")
    quotes = [m.group(0) for m in _QUOTED_RE.finditer(text)]
    out: list[Standing] = []
    for sentence in sentences(_QUOTED_RE.sub(_QUOTE, text)):
        found = _statement(sentence)
        if found is not None:  # a title in quotes is part of a taste: 'I love "The Office"'
            out.append(dataclasses.replace(found, sentence=_unquote(found.sentence, quotes)))
        quotes = quotes[sentence.count(_QUOTE) :]
    return out


def _unquote(sentence: str, quotes: list[str]) -> str:
    """``sentence`` with its quotations back, ``quotes`` being those from its start on."""
    said = iter(quotes)
    return _QUOTE_RE.sub(lambda _: next(said, ""), sentence)


def _statement(sentence: str) -> Standing | None:
    """What one sentence states: an instruction (its first clause, as said, without a request
    that follows it), or a preference.  A preference may open a later clause ("I'm stressed
    about the deadline, so I prefer detailed plans") and is filed with what leads to it and the
    request that follows it ("…, can you help me plan?"): they say why and for what; a clause
    that goes on to something else ("…, and my dog is Oscar") is left out."""
    if _MY_PREFERENCE_RE.search(sentence) and not _ASKS_PREFERENCE_RE.match(sentence):
        # "given my preference for ETFs, how …?" holds the preference as given, asked or not
        return Standing(PREFERENCE, _cut(sentence), topic_of(sentence))
    stated = _THEN_ASK_RE.sub("", sentence).strip() if sentence.endswith("?") else sentence
    if not stated or stated.endswith("?"):
        return None  # a question
    ends = [m.start() for m in _NEXT_CLAUSE_RE.finditer(stated)] + [len(stated)]
    starts = [0] + [m.end() for m in _NEXT_CLAUSE_RE.finditer(stated)]
    for n, (start, end) in enumerate(zip(starts, ends, strict=True)):
        clause = stated[start:end].strip(" -–—")
        kind = _kind(clause)
        if kind == INSTRUCTION and n == 0:
            if _QUOTE in sentence:
                return None  # 'always' said of a quotation: whose word is it?
            if not _ADDRESSED_RE.search(clause):
                return None  # "never give up!": said to a person, not how to serve the speaker
            return Standing(kind, _cut(clause), topic_of(clause))
        if kind == PREFERENCE:
            if n and _speaker(stated[:start]):
                return None  # "Anna - I'm vegetarian": a list of what others said
            said = sentence if end == len(stated) else stated[:end].strip(" -–—")
            return Standing(kind, _cut(said), topic_of(said))
    return None


def standing_facts(
    turn: int, text: str, speaker: str | None, *, to_agent: bool = True
) -> Iterator[FactDraft]:
    """:func:`standing_statements` of a human turn as facts of its speaker (``User``
    without a name); ``text`` is the turn's redacted content and ``turn`` its number.  Unless
    ``to_agent`` (the agent takes part in the conversation there) there are none: an
    imperative is said to another person ("never give up!"), and a taste told a friend ("I
    love pottery") is a fact of the speaker's life (``likes``, :mod:`.extraction`), not how
    the agent is to serve them."""
    if not to_agent:
        return
    from .extraction import FactDraft

    for found in standing_statements(text):
        yield FactDraft(speaker or OWNER_ENTITY, found.kind, found.sentence, "high", turn)


def standing_facts_of(views: Sequence[TurnView], view: TurnView) -> Iterator[FactDraft]:
    """:func:`standing_facts` of one human turn of a log read as ``views``: said to the agent
    where the assistant speaks within :data:`~memoryclaw.recall.standing.NEAR_TURNS` turns of
    it."""
    near = views[max(0, view.number - 1 - NEAR_TURNS) : view.number + NEAR_TURNS]
    to_agent = any(v.turn.role == "assistant" for v in near)
    yield from standing_facts(view.number, view.text, view.name, to_agent=to_agent)


def with_recent(
    found: Sequence[StandingFact], turns: Sequence[Mapping[str, Any]]
) -> list[StandingFact]:
    """``found`` (in force, newest first) with what the owner's ``turns`` not yet consolidated
    state (``recall.standing.recent_turns``, newest first), newest first: a later statement
    takes back an earlier one it :func:`reverses` (in force or not yet consolidated), as
    consolidation will; one already in force adds nothing.  As consolidation, what is taken
    back or already said is the owner's own (``User``) only, and taken back in its file: a
    plain line of preferences.md or somebody else's taste stays."""
    out = list(reversed(found))
    readings = {f.value: _reading(f.value) for f in out}  # each read once: n statements, n^2 pairs
    known = {(f.kind, value_key(f.value)) for f in out if _owners(f)}
    for row in reversed(turns):  # oldest first: what is said later takes back what was before
        for n, said in enumerate(standing_statements(str(row["text"])), 1):
            if (said.kind, value_key(said.sentence)) in known:
                continue
            if said.sentence not in readings:  # said again after it was taken back: read once
                readings[said.sentence] = _reading(said.sentence)
            reading = readings[said.sentence]
            kept = [
                f
                for f in out
                if f.kind != said.kind
                or not (f.pending or (_owners(f) and f.path == _FILE_OF[f.kind]))
                or not _takes_back(reading, readings[f.value])
            ]
            if len(kept) < len(out):  # something was taken back: it may be said again
                out, known = kept, {(f.kind, value_key(f.value)) for f in kept if _owners(f)}
            known.add((said.kind, value_key(said.sentence)))
            out.append(
                StandingFact(
                    id=f"{row['path']}#{row['turn']}.{n}",
                    kind=said.kind,
                    entity=OWNER_ENTITY,
                    value=said.sentence,
                    topic=said.topic,
                    updated=str(row["timestamp"] or "")[:10],
                    source=str(row["path"]),
                    path=str(row["path"]),
                    line=int(row["turn"] or 0),
                    agent=row["agent"] or None,
                    scope=row["scope"] or None,
                    pending=True,
                )
            )
    return out[::-1]


# where consolidation files a standing statement, and supersedes what it takes back
# (consolidate.review.target_file)
_FILE_OF = {
    INSTRUCTION: f"{SEMANTIC_DIR}/{INSTRUCTIONS_FILE}",
    PREFERENCE: f"{SEMANTIC_DIR}/{PREFERENCES_FILE}",
}


def _owners(fact: StandingFact) -> bool:
    return fact.entity.casefold() == OWNER_ENTITY.casefold()


def reverses(new: str, old: str) -> bool:
    """Whether standing statement ``new`` takes back ``old``: one of them negates and the
    other does not, and they share what they are about ("always add yields" and "actually,
    stop adding yields")."""
    return _takes_back(_reading(new), _reading(old))


def restates(new: str, old: str) -> bool:
    """Whether standing statement ``new`` says again what ``old`` says: the same stance
    (negating or not) about the same words for the same topic, however the sentence around
    it asks ("I prefer quick recipes, what can I cook?" and "I'm busy, so I prefer quick
    recipes")."""
    said = _reading(new)
    return bool(said[1]) and said == _reading(old) and _topic(new) == _topic(old)


def _topic(statement: str) -> frozenset[str]:
    return frozenset(content_words(topic_of(statement)))


_Reading = tuple[bool, frozenset[str]]  # whether a statement negates, and what it is about


def _reading(statement: str) -> _Reading:
    stance = _stance(statement)
    return bool(_REVERSE_RE.search(stance)), _about(stance) - _WEAK_WORDS


def _takes_back(new: _Reading, old: _Reading) -> bool:
    return new[0] != old[0] and bool(new[1] & old[1])


def _stance(sentence: str) -> str:
    """The clause of a standing statement that states it: "I prefer morning runs" of "I prefer
    morning runs, but I'm not sure I can keep that up" (whose "not" takes nothing back)."""
    clauses = re.split(r"[,;:]\s+|\s[-–—]\s", sentence)
    stating = (c for c in clauses if _kind(c) is not None or _MY_PREFERENCE_RE.search(c))
    return next(stating, sentence)


def _about(sentence: str) -> frozenset[str]:
    """What a statement asks or likes, its topic left out: two instructions for one topic
    ("when I ask about ETFs") are not each other's reversal for that."""
    return content_words(sentence) - content_words(topic_of(sentence))


def _kind(sentence: str) -> str | None:
    for pattern in _INSTRUCTION_RES:
        match = pattern.match(sentence)
        if match is None:
            continue
        verb = (match.groupdict().get("verb") or "").lower()
        if verb and (verb in _NOT_VERBS or verb in STOPWORDS or _past(verb)):
            continue  # "never mind", "always been", "never liked him": said of the past
        return INSTRUCTION
    for n, pattern in enumerate(_PREFERENCE_RES):
        match = pattern.match(sentence)
        if match is None:
            continue
        value = match["value"].strip()
        head = re.sub(r"(?i)^(?:the|a|an)\s+", "", value).split(" ", 1)[0].lower()
        preferred_act = match.groupdict().get("verb") == "prefer" and head == "to"
        if (_WISH_RE.match(value) and not preferred_act) or (
            n == 0 and not preferred_act and (head in STOPWORDS or head in GENERIC)
        ):
            continue  # "I'd love to help", "I like that", "I love it"; not "I prefer to walk"
        return PREFERENCE
    return None


def _speaker(before: str) -> bool:
    """Whether ``before``, what precedes a clause and its dash, is the name of who says it (not
    a lead word: "Honestly - I prefer tea" is the speaker's).  A list's heading before it does
    not hide the name: "Guest list: Anna - I'm vegetarian" (its lines run together)."""
    before = before.rsplit(":", 1)[-1] if ":" in before[:-2] else before
    if not _SPEAKER_RE.match(before):
        return False
    words = re.sub(r"[-–—:]", " ", before).strip()
    return words != "I" and _LEAD_RE.match(words + " ") is None


def _past(verb: str) -> bool:
    return len(verb) > 4 and bool(_PAST_RE.search(verb)) and verb not in _PRESENT_EDS


_PRESENT_EDS = frozenset({"need", "proceed", "feed", "embed", "exceed", "succeed", "speed", "show"})


def _cut(sentence: str) -> str:
    flat = " ".join(sentence.split())
    if len(flat) <= MAX_CHARS:
        return flat
    return flat[: MAX_CHARS - 1].rsplit(" ", 1)[0] + "…"


_WEAK_WORDS = frozenset({"answer", "respons", "repl", "thing", "question", "tim", "inform"})
