"""Fact files: every form of fact line, provenance and superseded markers (SPEC section 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryclaw.errors import ParseError
from memoryclaw.vault.episodes import (
    CONFIDENCE_LEVELS,
)
from memoryclaw.vault.facts import format_fact_line, format_provenance, parse_facts
from memoryclaw.vault.values import value_kind

SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


DEFAULT_UPDATED = "2024-12-31"


# Every character ``str.splitlines`` treats as a line end.  ``\n`` is the only one the vault's
# writers use; the others are excluded from generated text unless a test is about them.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


SPEC_FACTS = """\
# Contacts
- John: john@example.com
- Sarah: sarah@example.com <!-- source: logs/processed/x.md; updated: 2025-04-08; confidence: high -->

# Projects
- projectX:
    deadline: 2025-04-10
    stakeholders: [John, Sarah]

| Entity | Role | Email |
|---|---|---|
| Ana | designer | ana@example.com |
"""  # noqa: E501


def _parse_error(call, *args) -> ParseError:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError) as info:
        call(*args)
    return info.value


_TEXT_CHARS = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00" + LINE_BREAKS)


FactRow = tuple[int, str, str, str, str, str, str, str, str]


def _rows(text: str, path: str = "semantic/x.md") -> list[FactRow]:
    return [
        (f.line, f.section, f.entity, f.field, f.value, f.form, f.source, f.updated, f.confidence)
        for f in parse_facts(text, path, DEFAULT_UPDATED)
    ]


def test_spec_facts_all_three_forms() -> None:
    hand, d = "hand", DEFAULT_UPDATED
    assert _rows(SPEC_FACTS) == [
        (2, "Contacts", "John", "email", "john@example.com", "bullet", hand, d, "high"),
        (
            3,
            "Contacts",
            "Sarah",
            "email",
            "sarah@example.com",
            "bullet",
            "logs/processed/x.md",
            "2025-04-08",
            "high",
        ),
        (7, "Projects", "projectX", "deadline", "2025-04-10", "nested", hand, d, "high"),
        (8, "Projects", "projectX", "stakeholders", "[John, Sarah]", "nested", hand, d, "high"),
        (12, "Projects", "Ana", "role", "designer", "table", hand, d, "high"),
        (12, "Projects", "Ana", "email", "ana@example.com", "table", hand, d, "high"),
    ]


@pytest.mark.parametrize(
    ("line", "entity", "field", "value"),
    [
        ("- John: john@example.com", "John", "email", "john@example.com"),
        ("- Docs: https://example.com/docs", "Docs", "url", "https://example.com/docs"),
        ("- Mom birthday: 1958-03-21", "Mom birthday", "date", "1958-03-21"),
        ("- Dentist: +44 20 7946 0321", "Dentist", "phone", "+44 20 7946 0321"),
        ("- Coffee: flat white", "Coffee", "value", "flat white"),
        ("- John email: john@example.com", "John", "email", "john@example.com"),
        ("* **Ana**: ana@example.com", "Ana", "email", "ana@example.com"),
        ("+ Tom:   spaced  ", "Tom", "value", "spaced"),
    ],
    ids=["email", "url", "date", "phone", "plain", "field-in-key", "bold-star", "plus-spaces"],
)
def test_bullet_fact_field_inference(line: str, entity: str, field: str, value: str) -> None:
    (fact,) = parse_facts(line, "semantic/x.md", DEFAULT_UPDATED)
    assert (fact.entity, fact.field, fact.value, fact.form) == (entity, field, value, "bullet")
    assert (fact.source, fact.updated, fact.confidence) == ("hand", DEFAULT_UPDATED, "high")


@pytest.mark.parametrize(
    ("comment", "source", "updated", "confidence"),
    [
        (
            "<!-- source: logs/a.md; updated: 2025-04-08; confidence: low -->",
            "logs/a.md",
            "2025-04-08",
            "low",
        ),
        ("<!--source:logs/b.md;updated:2025-01-01-->", "logs/b.md", "2025-01-01", "high"),
        ("<!-- updated: 2025-02-02 -->", "hand", "2025-02-02", "high"),
        ("<!-- confidence: MEDIUM -->", "hand", DEFAULT_UPDATED, "medium"),
        ("<!-- confidence: certain -->", "hand", DEFAULT_UPDATED, "high"),
        ("<!-- just a remark -->", "hand", DEFAULT_UPDATED, "high"),
    ],
    ids=["full", "no-spaces", "updated-only", "upper-confidence", "bad-confidence", "free-text"],
)
def test_provenance_comment(comment: str, source: str, updated: str, confidence: str) -> None:
    (fact,) = parse_facts(f"- Sarah: sarah@example.com {comment}", "s.md", DEFAULT_UPDATED)
    assert fact.value == "sarah@example.com"
    assert (fact.source, fact.updated, fact.confidence) == (source, updated, confidence)


def test_nested_facts_inherit_parent_provenance_and_stop_at_next_bullet() -> None:
    text = (
        "# Projects\n"
        "- Falcon: <!-- source: logs/f.md; updated: 2025-05-01; confidence: medium -->\n"
        "    beta: 2025-06-30\n"
        "    - launch: 2025-09-08 <!-- updated: 2025-09-09 -->\n"
        "    team: [Priya, Ana]\n"
        "- plain note line\n"
        "    orphan: not nested\n"
    )
    rows = _rows(text)
    assert rows[:3] == [
        (
            3,
            "Projects",
            "Falcon",
            "beta",
            "2025-06-30",
            "nested",
            "logs/f.md",
            "2025-05-01",
            "medium",
        ),
        (
            4,
            "Projects",
            "Falcon",
            "launch",
            "2025-09-08",
            "nested",
            "logs/f.md",
            "2025-09-09",
            "medium",
        ),
        (
            5,
            "Projects",
            "Falcon",
            "team",
            "[Priya, Ana]",
            "nested",
            "logs/f.md",
            "2025-05-01",
            "medium",
        ),
    ]
    assert rows[3][:6] == (6, "Projects", "Projects", "note", "plain note line", "note")
    # a line indented under no "key:" is read on its own, never as Falcon's
    assert rows[4][:6] == (7, "Projects", "orphan", "value", "not nested", "bullet")
    assert len(rows) == 5


def test_table_header_gives_fields_and_blank_line_ends_table() -> None:
    text = (
        "# Team\n"
        "| Entity | Role | Email |\n"
        "|:---|---:|:---:|\n"
        "| Ana | designer | ana@example.com |\n"
        "| Marco | tech lead | |\n"
        "\n"
        "| Tool | Owner |\n"
        "|---|---|\n"
        "| Jira | Priya |\n"
    )
    rows = [(r[0], r[2], r[3], r[4], r[5]) for r in _rows(text)]
    assert rows == [
        (4, "Ana", "role", "designer", "table"),
        (4, "Ana", "email", "ana@example.com", "table"),
        (5, "Marco", "role", "tech lead", "table"),
        (9, "Jira", "owner", "Priya", "table"),
    ]


def test_plain_bullets_become_note_facts_of_their_section() -> None:
    text = (
        "- Before any heading\n# Travel\n- Prefers window seats\n## Food & drink ##\n* Vegetarian\n"
    )
    rows = [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in _rows(text)]
    assert rows == [
        (1, "", "note", "note", "Before any heading", "note"),
        (3, "Travel", "Travel", "note", "Prefers window seats", "note"),
        (5, "Food & drink", "Food & drink", "note", "Vegetarian", "note"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Our wifi password is in the blue notebook\n",
            [(1, "note", "note", "Our wifi password is in the blue notebook")],
        ),
        ("# Contacts\nAna: ana@example.org\n", [(2, "Ana", "email", "ana@example.org")]),
        ("# Home\n\t- Landlord: Mr Jones\n", [(2, "Landlord", "value", "Mr Jones")]),
        ("# Home\n  - Boiler serviced in May\n", [(2, "Home", "note", "Boiler serviced in May")]),
        (
            "- Tom: tom@example.org\n  - works at Acme\n",
            [(1, "Tom", "email", "tom@example.org"), (2, "Tom", "note", "works at Acme")],
        ),
        (
            "- Ana: ana@example.org\n\t- phone: 07700 900123\nBo: bo@example.org\n",
            [
                (1, "Ana", "email", "ana@example.org"),
                (2, "Ana", "phone", "07700 900123"),
                (3, "Bo", "email", "bo@example.org"),
            ],
        ),
        (
            "- Falcon:\n    beta: 2025-06-30\n    - slipped twice\n",
            [(2, "Falcon", "beta", "2025-06-30"), (3, "Falcon", "note", "slipped twice")],
        ),
        (
            "- Bin day is Thursday, and the recycling\n  goes out every other week\n",
            [
                (1, "note", "note", "Bin day is Thursday, and the recycling"),
                (2, "note", "note", "goes out every other week"),
            ],
        ),
        (
            "1. Ana: ana@example.org\n2) Call Mum on Sundays\n",
            [(1, "Ana", "email", "ana@example.org"), (2, "note", "note", "Call Mum on Sundays")],
        ),
        ("- Ana: ana@example.org\n---\n***\n-\n- \n", [(1, "Ana", "email", "ana@example.org")]),
    ],
    ids=[
        "a-line-without-a-bullet",
        "key-and-value-without-a-bullet",
        "a-tab-indented-bullet",
        "an-indented-bullet-under-no-key",
        "a-sub-bullet-of-a-fact",
        "a-field-under-a-fact",
        "a-sub-bullet-of-a-key-that-is-no-key-value",
        "a-wrapped-line",
        "numbered-list",
        "breaks-and-empty-bullets",
    ],
)
def test_a_hand_written_line_off_the_accepted_forms_is_still_a_fact(
    text: str, expected: list[tuple[int, str, str, str]]
) -> None:
    """What a person types in an editor is read, not dropped without a word: lines without a
    bullet, bullets indented by a slip of the tab key, a wrapped line, a numbered list."""
    facts = parse_facts(text, "semantic/notes.md", DEFAULT_UPDATED)
    assert [(f.line, f.entity, f.field, f.value) for f in facts] == expected


def test_plain_lines_of_the_instructions_file_are_instructions() -> None:
    text = "Always answer in British English\r\nNever use emojis\r\n"
    facts = parse_facts(text, "semantic/instructions.md", DEFAULT_UPDATED)
    assert [(f.field, f.value) for f in facts] == [
        ("instruction", "Always answer in British English"),
        ("instruction", "Never use emojis"),
    ]


@pytest.mark.parametrize(
    ("path", "line", "expected"),
    [
        (
            "semantic/instructions.md",
            "- Always answer in metric units.",
            ("Instructions", "instruction", "Always answer in metric units.", "note"),
        ),
        (
            "semantic/instructions.md",
            "- When I ask about ETFs: include dividend yields",
            (
                "Instructions",
                "instruction",
                "When I ask about ETFs: include dividend yields",
                "bullet",
            ),
        ),
        (
            "semantic/instructions.md",
            "- User (instruction): Never use emojis.",
            ("User", "instruction", "Never use emojis.", "bullet"),
        ),
        (  # a hand-written preferences file is mostly facts about the owner
            "semantic/preferences.md",
            "- Dentist check-ups every six months",
            ("Instructions", "note", "Dentist check-ups every six months", "note"),
        ),
        (
            "semantic/team/instructions.md",
            "- Always answer in metric units.",
            ("Instructions", "instruction", "Always answer in metric units.", "note"),
        ),
        (
            "semantic/notes.md",
            "- Always answer in metric units.",
            ("Instructions", "note", "Always answer in metric units.", "note"),
        ),
        (
            "episodes/instructions.md",
            "- Always answer in metric units.",
            ("Instructions", "note", "Always answer in metric units.", "note"),
        ),
    ],
    ids=[
        "plain-instruction",
        "instruction-with-a-colon",
        "written-by-consolidation",
        "preferences-file",
        "in-a-subfolder",
        "other-file",
        "not-a-fact-folder",
    ],
)
def test_a_plain_line_of_the_instructions_file_is_the_owner_s_standing_instruction(
    path: str, line: str, expected: tuple[str, str, str, str]
) -> None:
    """A hand-written "- Always answer in metric units." in semantic/instructions.md is in
    force like the lines consolidation writes there."""
    [fact] = parse_facts(f"# Instructions\n\n{line}\n", path, "2025-01-01")
    assert (fact.entity, fact.field, fact.value, fact.form) == expected


def test_comment_lines_and_fenced_code_are_ignored() -> None:
    text = (
        "# Contacts\n"
        "<!-- - Hidden: hidden@example.com -->\n"
        "  <!-- indented comment -->\n"
        "```markdown\n"
        "# Not a heading\n"
        "- Fenced: fenced@example.com\n"
        "| Entity | Email |\n"
        "```\n"
        "~~~\n"
        "- Tilde: tilde@example.com\n"
        "~~~\n"
        "- John: john@example.com\n"
    )
    rows = _rows(text)
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        (12, "Contacts", "John", "john@example.com")
    ]


def test_multiline_html_comment_is_ignored() -> None:
    text = "# Contacts\n<!--\n- Old: old@example.com\n-->\n- John: john@example.com\n"
    assert [(r[2], r[4]) for r in _rows(text)] == [("John", "john@example.com")]


def test_fact_line_numbers_count_frontmatter() -> None:
    text = (
        "---\n"
        "title: Contacts\n"
        "tags: [people]\n"
        "---\n"
        "# Contacts\n"
        "\n"
        "- John: john@example.com\n"
        "- Ana:\n"
        "    role: designer\n"
        "\n"
        "| Entity | Email |\n"
        "|---|---|\n"
        "| Sarah | sarah@example.com |\n"
    )
    facts = parse_facts(text, "semantic/contacts.md", DEFAULT_UPDATED)
    assert [(f.line, f.entity, f.field) for f in facts] == [
        (7, "John", "email"),
        (9, "Ana", "role"),
        (13, "Sarah", "email"),
    ]
    lines = text.splitlines()
    for fact in facts:
        assert fact.value in lines[fact.line - 1]


def test_fact_line_numbers_with_crlf_and_bom() -> None:
    text = "\ufeff---\r\ntitle: x\r\n---\r\n# S\r\n\r\n- John: john@example.com\r\n"
    (fact,) = parse_facts(text, "s.md", DEFAULT_UPDATED)
    assert (fact.line, fact.value) == (6, "john@example.com")


def test_duplicate_fact_lines_get_distinct_ids() -> None:
    text = "# C\n- John: john@example.com\n- John: john@example.com\n- John: john@example.com\n"
    facts = parse_facts(text, "semantic/c.md", DEFAULT_UPDATED)
    assert [f.line for f in facts] == [2, 3, 4]
    assert len({f.id for f in facts}) == 3


def test_fact_ids_are_stable() -> None:
    path = "semantic/contacts.md"
    first = parse_facts(SPEC_FACTS, path, DEFAULT_UPDATED)
    second = parse_facts(SPEC_FACTS, path, "2030-01-01")
    assert [f.id for f in first] == [f.id for f in second]
    assert len({f.id for f in first}) == len(first)
    # an unrelated line inserted above does not renumber ids
    shifted = parse_facts("# Intro\n- Unrelated: thing\n\n" + SPEC_FACTS, path, DEFAULT_UPDATED)
    assert [f.id for f in shifted[1:]] == [f.id for f in first]
    assert [f.line for f in shifted[1:]] == [f.line + 3 for f in first]
    # ids depend on the file
    elsewhere = parse_facts(SPEC_FACTS, "semantic/other.md", DEFAULT_UPDATED)
    assert not {f.id for f in elsewhere} & {f.id for f in first}


def test_facts_reject_nul_and_bad_frontmatter() -> None:
    assert "NUL" in _parse_error(parse_facts, "- a: b\x00", "s.md", DEFAULT_UPDATED).reason
    err = _parse_error(parse_facts, "---\ntitle: [x\n---\n- a: b\n", "s.md", DEFAULT_UPDATED)
    assert err.line == 2
    assert _parse_error(parse_facts, "---\ntitle: x\n- a: b\n", "s.md", DEFAULT_UPDATED).line == 1


SEMANTIC_FILES = sorted(
    p for p in (SAMPLE_VAULT / "semantic").glob("*.md") if not p.name.startswith("_")
)


@pytest.mark.parametrize("path", SEMANTIC_FILES, ids=[p.name for p in SEMANTIC_FILES])
def test_sample_vault_fact_file_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    facts = parse_facts(text, f"semantic/{path.name}", DEFAULT_UPDATED)
    assert len(facts) >= 5
    lines = text.splitlines()
    for fact in facts:
        assert fact.entity and fact.value and fact.section
        assert fact.value in lines[fact.line - 1]
        assert fact.form in {"bullet", "nested", "table", "note"}
    assert len({f.id for f in facts}) == len(facts)


def test_sample_vault_facts_cover_every_form() -> None:
    facts = {
        p.name: parse_facts(p.read_text(encoding="utf-8"), f"semantic/{p.name}", DEFAULT_UPDATED)
        for p in SEMANTIC_FILES
    }
    assert {"contacts.md", "projects.md", "preferences.md"} <= set(facts)
    forms = {f.form for file_facts in facts.values() for f in file_facts}
    assert forms == {"bullet", "nested", "table", "note"}

    def find(name: str, line: int, field: str) -> tuple[str, str, str, str]:
        (fact,) = [f for f in facts[name] if f.line == line and f.field == field]
        return fact.entity, fact.value, fact.form, fact.source

    assert find("contacts.md", 5, "email") == ("John", "john@example.com", "bullet", "hand")
    assert find("contacts.md", 6, "email")[3] == (
        "logs/processed/2025-04-08_14-30-02_telegram_raw.md"
    )
    assert find("contacts.md", 11, "phone") == ("Marco", "+351 912 345 678", "nested", "hand")
    assert find("contacts.md", 26, "role") == (
        "Tomás Reyes",
        "Senior mobile engineer, Falcon",
        "table",
        "hand",
    )
    assert find("projects.md", 4, "deadline") == ("projectX", "2025-04-10", "nested", "hand")
    assert find("projects.md", 5, "stakeholders")[1] == "[John, Sarah]"
    assert find("projects.md", 23, "date") == ("Falcon", "2025-06-30", "table", "hand")
    assert find("preferences.md", 3, "note") == (
        "Travel",
        "Prefers window seats on flights",
        "note",
        "hand",
    )


_FACT_LINES = [
    "# Contacts",
    "## Projects ##",
    "#",
    "- John: john@example.com",
    "- Sarah: sarah@example.com <!-- source: a.md; updated: 2025-01-01; confidence: low -->",
    "- projectX:",
    "    deadline: 2025-04-10",
    "    - nested: bullet",
    "  : empty key",
    "- : empty",
    "- :",
    "- **:**",
    "- a |b: c",
    "| Entity | Role |",
    "|---|---|",
    "| Ana | designer |",
    "| | |",
    "|",
    "||",
    "```",
    "~~~",
    "<!-- comment -->",
    "<!--",
    "-->",
    "- plain note",
    "-",
    "* ",
    "\t- tabbed: x",
    "---",
    "",
]


_FACT_TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    st.lists(
        st.one_of(st.sampled_from(_FACT_LINES), st.text(_TEXT_CHARS, max_size=30)), max_size=25
    ).flatmap(lambda lines: st.sampled_from(["\n", "\r\n"]).map(lambda sep: sep.join(lines))),
)


def _opens_frontmatter(text: str) -> bool:
    return re.match(r"---\s*$", text.lstrip("\ufeff").split("\n")[0]) is not None


@settings(max_examples=200, deadline=None)
@given(_FACT_TEXT.filter(lambda text: not _opens_frontmatter(text)))
def test_property_parse_facts_never_raises(text: str) -> None:
    facts = parse_facts(text, "semantic/random.md", DEFAULT_UPDATED)
    lines = text.split("\n")  # as editors count lines (frontmatter.body_lines)
    for fact in facts:
        assert fact.entity.strip() and fact.value.strip()
        assert fact.entity == fact.entity.strip() and fact.value == fact.value.strip()
        assert 1 <= fact.line <= len(lines)
        assert fact.value in lines[fact.line - 1]
        assert fact.confidence in CONFIDENCE_LEVELS
    assert len({f.id for f in facts}) == len(facts)


_PLAIN_CHARS = st.characters(
    blacklist_categories=["Cs"], blacklist_characters="\x00:|" + LINE_BREAKS
)


def _clean_piece(text: str) -> bool:
    return bool(text) and "<!--" not in text and text == text.strip()


_ENTITY = (
    st.text(_PLAIN_CHARS, min_size=1, max_size=60)
    .map(lambda s: s.strip().strip("*_`").strip())
    .filter(_clean_piece)
)


_PLAIN_VALUE = st.text(_PLAIN_CHARS, min_size=1, max_size=60).map(str.strip).filter(_clean_piece)


_VALUE_AND_FIELD = st.one_of(
    st.from_regex(r"[a-z0-9._%+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,5}", fullmatch=True).map(
        lambda v: (v, "email")
    ),
    st.from_regex(r"https?://[a-z0-9.-]{1,20}(/[a-z0-9._~?=&%-]{0,20})?", fullmatch=True).map(
        lambda v: (v, "url")
    ),
    st.dates().map(lambda d: (f"{d.year:04d}-{d.month:02d}-{d.day:02d}", "date")),
    st.from_regex(r"\+?[0-9]{2,4}( [0-9]{3,4}){2}", fullmatch=True).map(lambda v: (v, "phone")),
    _PLAIN_VALUE.map(lambda v: (v, value_kind(v) or "value")),
)


_PROVENANCE = st.tuples(
    st.one_of(
        st.just("hand"), st.from_regex(r"logs/processed/[A-Za-z0-9_.-]{1,30}\.md", fullmatch=True)
    ),
    st.dates().map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}"),
    st.sampled_from(CONFIDENCE_LEVELS),
)


@settings(max_examples=200, deadline=None)
@given(_ENTITY, _VALUE_AND_FIELD, _PROVENANCE)
def test_property_fact_line_round_trip(
    entity: str, value_field: tuple[str, str], provenance: tuple[str, str, str]
) -> None:
    value, field = value_field
    assert value_kind(value) in {field, None}
    source, updated, confidence = provenance
    line = format_fact_line(entity, field, value, format_provenance(source, updated, confidence))
    assert "\n" not in line
    (fact,) = parse_facts(f"# Section\n{line}\n", "semantic/generated.md", DEFAULT_UPDATED)
    got = (fact.entity, fact.field, fact.value, fact.source, fact.updated, fact.confidence)
    assert got == (entity, field, value, source, updated, confidence)
    assert (fact.line, fact.form, fact.section) == (2, "bullet", "Section")


def test_fact_line_with_explicit_field_round_trips() -> None:
    line = format_fact_line("John", "role", "designer")
    (fact,) = parse_facts(line, "semantic/x.md", DEFAULT_UPDATED)
    assert (fact.entity, fact.field, fact.value) == ("John", "role", "designer")


def test_fact_files_scope_their_facts_and_lines_override() -> None:
    text = (
        "---\nagent: work\nscope: direct\n---\n# Contacts\n"
        "- Ana: ana@example.com\n"
        "- Bo: bo@example.com <!-- source: x; updated: 2025-01-01; confidence: high;"
        " agent: main; scope: group:telegram:group:-5 -->\n"
    )
    ana, bo = parse_facts(text, "semantic/contacts.md", "2025-01-01")
    assert (ana.agent, ana.scope) == ("work", "direct")
    assert (bo.agent, bo.scope) == ("main", "group:telegram:group:-5")


def test_a_fact_line_with_a_bad_scope_is_reported_at_its_line() -> None:
    text = "# C\n- Ana: ana@example.com <!-- source: x; scope: everyone -->\n"
    err = _parse_error(parse_facts, text, "semantic/c.md", "2025-01-01")
    assert err.line == 2 and "scope" in err.reason


@settings(max_examples=200)
@given(agent=st.text(st.sampled_from("ab \n\r\u2028;:->!<"), min_size=1, max_size=12))
def test_a_provenance_value_cannot_split_or_end_its_comment(agent: str) -> None:
    """An agent id with a newline once split a fact's comment, and the fact was then filed
    owner-level: every value is one line, with no ``;`` or ``-->`` of its own."""
    scope = "group:telegram:group:-1"
    comment = format_provenance("logs/a.md#1", "2026-01-02", "low", agent=agent, scope=scope)
    line = format_fact_line("Alex", "email", "alex@example.com", comment)
    assert "\n" not in line and "\r" not in line and "\u2028" not in line
    [fact] = parse_facts(f"# People\n\n{line}\n", "semantic/x.md", "2026-01-01")
    assert (fact.confidence, fact.source, fact.scope) == ("low", "logs/a.md#1", scope)
