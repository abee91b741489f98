"""Superseded, never deleted: the marker, `facts set`, `facts history` and recall of the chain."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryclaw import InvalidInputError, NotFoundError, Vault
from memoryclaw.serve.stdio import StdioServer
from memoryclaw.vault.facts import (
    format_fact_line,
    format_provenance,
    mark_superseded,
    parse_facts,
    parse_superseded,
)

from ..conftest import NOW, run_bounded
from ..line_client import line_client

JUNE = datetime(2025, 6, 1, 9, 0, tzinfo=timezone.utc)
JULY = datetime(2025, 7, 1, 9, 0, tzinfo=timezone.utc)


def _facts(text: str) -> list[tuple[str, str, str, bool, str, str]]:
    return [
        (f.entity, f.field, f.value, f.superseded, f.superseded_on, f.superseded_by)
        for f in parse_facts(text, "semantic/x.md", "2025-01-01")
    ]


# ------------------------------------------------------------------- the marker


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "- Sarah: s@x.com <!-- source: a.md; superseded: 2025-06-01 by s@y.com -->",
            ("Sarah", "email", "s@x.com", True, "2025-06-01", "s@y.com"),
        ),
        (
            "- Sarah: s@x.com <!--superseded:2025-06-01-->",
            ("Sarah", "email", "s@x.com", True, "2025-06-01", ""),
        ),
        (
            "- Sarah: s@x.com <!-- Superseded: by the new address -->",
            ("Sarah", "email", "s@x.com", True, "", "the new address"),
        ),
        (
            "- Sarah: s@x.com <!-- superseded: yes -->",
            ("Sarah", "email", "s@x.com", True, "", ""),
        ),
        (
            "- Sarah: s@x.com <!-- superseded: 2025-06-01 by a by b -->",
            ("Sarah", "email", "s@x.com", True, "2025-06-01", "a by b"),
        ),
        (
            "- Sarah: s@x.com <!-- confidence: high; superseded:  -->",
            ("Sarah", "email", "s@x.com", False, "", ""),
        ),
        (
            "- Sarah: s@x.com <!-- source: a.md -->",
            ("Sarah", "email", "s@x.com", False, "", ""),
        ),
    ],
    ids=["full", "no-by-no-spaces", "by-only", "yes", "by-holds-by", "empty-is-no-mark", "none"],
)
def test_hand_written_markers_parse(line: str, expected: tuple[object, ...]) -> None:
    assert _facts(f"# Contacts\n\n{line}\n") == [expected]


def test_a_table_row_marker_names_its_field_and_leaves_the_others_current() -> None:
    text = (
        "# Team\n\n| Entity | Role | Email |\n|---|---|---|\n"
        "| Ana | designer | a@x.com | <!-- superseded email: 2025-06-01 by a@y.com -->\n"
    )
    assert _facts(text) == [
        ("Ana", "role", "designer", False, "", ""),
        ("Ana", "email", "a@x.com", True, "2025-06-01", "a@y.com"),
    ]


def test_a_nested_line_marker_supersedes_only_that_line() -> None:
    text = (
        "# C\n\n- Marco: <!-- source: a.md -->\n"
        "    phone: 1234567 <!-- superseded: 2025-06-01 by 7654321 -->\n"
        "    office: Lisbon\n"
    )
    assert _facts(text) == [
        ("Marco", "phone", "1234567", True, "2025-06-01", "7654321"),
        ("Marco", "office", "Lisbon", False, "", ""),
    ]


_words = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip() and "-->" not in s and "<!--" not in s)
_dates = st.dates().map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}")


@given(
    entity=st.from_regex(r"[A-Z][a-z]{1,10}( [A-Z][a-z]{1,10})?", fullmatch=True),
    value=st.from_regex(r"[a-z0-9][a-z0-9 .@-]{0,30}[a-z0-9]", fullmatch=True),
    on=_dates,
    by=_words,
    machine=st.booleans(),
)
def test_property_marker_round_trips(
    entity: str, value: str, on: str, by: str, machine: bool
) -> None:
    provenance = format_provenance("logs/x.md", "2025-01-02", "medium", scope="direct")
    line = format_fact_line(entity, "city", value, provenance if machine else None)
    marked = mark_superseded(line, on, by)
    [before] = parse_facts(f"# T\n\n{line}\n", "semantic/t.md", "2025-01-01")
    [after] = parse_facts(f"# T\n\n{marked}\n", "semantic/t.md", "2025-01-01")
    assert after.superseded and after.superseded_on == on
    assert after.superseded_by == " ".join(by.split()).replace(";", ",").strip()
    assert (after.id, after.value, after.source, after.scope, after.updated) == (
        before.id,
        before.value,
        before.source,
        before.scope,
        before.updated,
    )
    assert parse_superseded(f"{on} by {after.superseded_by}") == (on, after.superseded_by)
    # marking again replaces the mark: one marker, the newest
    again = mark_superseded(marked, "2030-01-01", "z")
    assert again.count("superseded:") == 1 and again.startswith(line.removesuffix(" -->"))
    [last] = parse_facts(f"# T\n\n{again}\n", "semantic/t.md", "2025-01-01")
    assert (last.superseded_on, last.superseded_by) == ("2030-01-01", "z")


# ------------------------------------------------------------------- the vault


def test_set_fact_keeps_the_old_value_marked_and_states_the_new_one_next_to_it(
    vault: Vault, vault_dir: Path
) -> None:
    contacts = vault_dir / "semantic" / "contacts.md"
    before = contacts.read_text().split("\n")
    report = vault.set_fact("Marco", "phone", "+351 900 000 000", now=JUNE)
    after = contacts.read_text().split("\n")
    assert len(after) == len(before) + 1
    old = before.index("    phone: +351 912 345 678")
    assert after[old].startswith("    phone: +351 912 345 678 <!-- updated: ")
    assert after[old].endswith("; superseded: 2025-06-01 by +351 900 000 000 -->")
    assert after[old + 1] == (
        "    phone: +351 900 000 000 <!-- source: user; updated: 2025-06-01; confidence: high -->"
    )
    assert (report.path, report.line) == ("semantic/contacts.md", old + 2)
    assert [dict(s) for s in report.superseded] == [
        {"value": "+351 912 345 678", "path": "semantic/contacts.md", "line": old + 1}
    ]
    phones = {f.value for f in vault.search("Marco phone").facts if f.field == "phone"}
    assert phones == {"+351 900 000 000"}


def test_setting_twice_makes_a_chain_and_recall_says_what_it_was(vault: Vault) -> None:
    vault.set_fact("Marco", "office", "Porto", now=JUNE)
    vault.set_fact("Marco", "office", "Madrid", now=JULY)
    chain = vault.fact_history("marco", "office")["chain"]
    assert [(c["value"], c["until"], c["superseded_by"], c["current"]) for c in chain] == [
        ("Lisbon", "2025-06-01", "Porto", False),
        ("Porto", "2025-07-01", "Madrid", False),
        ("Madrid", None, None, True),
    ]
    [fact] = [f for f in vault.search("Marco office", now=NOW).facts if f.field == "office"]
    assert (fact.value, fact.was, fact.was_until) == ("Madrid", "Porto", "2025-07-01")
    assert fact.render().startswith("Marco office Madrid (was Porto until 2025-07-01)")
    payload = vault.retrieve("Which office is Marco in?", now=NOW)
    assert "Marco office Madrid (was Porto until" in payload.context
    assert "Marco office Lisbon" not in payload.context


def test_setting_the_current_value_again_writes_nothing(vault: Vault, vault_dir: Path) -> None:
    files = {p: p.read_bytes() for p in (vault_dir / "semantic").glob("*.md")}
    report = vault.set_fact("marco", "Office", "lisbon.", now=JUNE)  # a near-duplicate
    assert report.unchanged and not report.superseded
    assert {p: p.read_bytes() for p in (vault_dir / "semantic").glob("*.md")} == files


def test_a_new_fact_is_appended_where_its_field_goes(vault: Vault, vault_dir: Path) -> None:
    report = vault.set_fact("Zoe", "email", "zoe@example.com", now=JUNE)
    assert report.path == "semantic/contacts.md" and not report.superseded
    lines = (vault_dir / report.path).read_text().split("\n")
    assert lines[report.line - 1].startswith("- Zoe: zoe@example.com <!-- source: user;")


@pytest.mark.parametrize(
    ("entity", "field", "value", "bad"),
    [
        ("", "email", "x@y.z", "entity"),
        ("Zoe", "e:mail", "x@y.z", "field"),
        ("Zoe", "email", "a\nb", "value"),
        ("Zoe", "email", "x --> y", "value"),
        ("Zoe (x)", "email", "x@y.z", "entity"),
    ],
    ids=["empty-entity", "colon-field", "two-lines", "comment-end", "parenthesised-entity"],
)
def test_set_fact_refuses_what_no_line_can_hold(
    vault: Vault, entity: str, field: str, value: str, bad: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        vault.set_fact(entity, field, value)
    assert caught.value.field == bad


def test_a_hand_edited_marker_is_history_and_survives_a_later_set(
    vault: Vault, vault_dir: Path
) -> None:
    contacts = vault_dir / "semantic" / "contacts.md"
    text = contacts.read_text().replace(
        "- Ana: ana@example.com",
        "- Ana: ana@example.com <!-- superseded: 2025-03-01 by ana@studio.example -->\n"
        "- Ana: ana@studio.example",
    )
    contacts.write_text(text)
    emails = {f.value for f in vault.search("Ana email").facts if f.field == "email"}
    assert "ana@studio.example" in emails and "ana@example.com" in emails  # the table row
    vault.set_fact("Ana", "email", "ana@third.example", now=JUNE)
    after = contacts.read_text()
    assert "- Ana: ana@example.com <!-- superseded: 2025-03-01 by ana@studio.example -->" in after
    chain = vault.fact_history("Ana", "email")["chain"]
    values = [(c["value"], c["until"]) for c in chain]
    assert values[0] == ("ana@example.com", "2025-03-01")
    assert ("ana@studio.example", "2025-06-01") in values and (
        "ana@example.com",
        "2025-06-01",
    ) in values
    assert values[-1] == ("ana@third.example", None)


def test_consolidation_does_not_revive_a_superseded_value(vault: Vault, vault_dir: Path) -> None:
    vault.set_fact("Priya", "email", "priya@new.example", now=JUNE)
    vault.log_turn("s-old", "user", "Priya's email is priya@example.com.", timestamp=NOW)
    vault.log_turn("s-old", "assistant", "Noted.", timestamp=NOW)
    vault.end_session("s-old")
    report = vault.consolidate(now=NOW)
    assert report.conflicts == 1 and report.facts_refreshed == 0
    pending = (vault_dir / "semantic" / "_pending.md").read_text()
    assert "CONFLICT Priya: priya@example.com (was priya@new.example)" in pending


def test_forgetting_a_fact_forgets_the_values_it_replaced(vault: Vault, vault_dir: Path) -> None:
    vault.set_fact("Marco", "office", "Porto", now=JUNE)
    report = vault.forget("Marco office Porto")
    assert len(report.facts) >= 2
    text = (vault_dir / "semantic" / "contacts.md").read_text()
    assert "office: Lisbon" not in text and "office: Porto" not in text


def test_history_of_an_unknown_entity_is_not_found(vault: Vault) -> None:
    with pytest.raises(NotFoundError):
        vault.fact_history("Nobody", "email")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


def test_history_shows_the_commits_that_changed_the_values(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "vault", git=True, env={})
    (vault.root / "semantic" / "contacts.md").write_text("# Contacts\n\n- Lea: lea@a.example\n")
    (vault.root / "semantic" / "other.md").write_text("# Other\n\n- Bike: blue\n")
    _git(vault.root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(vault.root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    vault.set_fact("Lea", "email", "lea@b.example", now=JUNE)
    found = vault.fact_history("Lea")
    assert found["git"] is True
    messages = [c["message"] for c in found["commits"]]
    assert messages == ["memoryclaw: set Lea email", "start"]
    assert _git(vault.root, "status", "--porcelain").strip() == ""
    vault.close()


# ------------------------------------------------------------------- CLI and RPC


def test_cli_facts_set_and_history(vault_dir: Path) -> None:
    done = run_bounded(vault_dir, "facts", "set", "Marco", "office", "Porto", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["value"] == "Porto" and report["superseded"][0]["value"] == "Lisbon"
    shown = run_bounded(vault_dir, "facts", "history", "Marco", "office")
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("office: Lisbon  (") and "superseded by Porto" in lines[0]
    assert lines[1].startswith("office: Porto  (since ") and "current" in lines[1]
    assert "not a git vault" in lines[-1]
    as_json = json.loads(run_bounded(vault_dir, "facts", "history", "Marco", "--json").stdout)
    assert {c["field"] for c in as_json["chain"]} == {"email", "phone", "office", "role"}
    missing = run_bounded(vault_dir, "facts", "history", "Nobody")
    assert missing.returncode == 1 and "Nobody" in missing.stderr
    bad = run_bounded(vault_dir, "facts", "set", "Zoe", "email", "a --> b")
    assert bad.returncode == 1 and "value" in bad.stderr
    assert run_bounded(vault_dir, "facts", "set", "Zoe").returncode == 2


def test_rpc_fact_history(vault_dir: Path) -> None:
    bridge = StdioServer(vault_dir, env={})
    with Vault(vault_dir, env={}) as vault:
        vault.set_fact("Marco", "office", "Porto", now=JUNE)
    reply = bridge.handle(
        json.dumps(
            {"id": 1, "method": "fact_history", "params": {"entity": "Marco", "field": "office"}}
        )
    )
    assert [c["value"] for c in reply["result"]["chain"]] == ["Lisbon", "Porto"]
    no_entity = bridge.handle(json.dumps({"id": 2, "method": "fact_history", "params": {}}))
    assert no_entity["error"]["code"] == -32602
    bridge.close()
    with line_client(vault_dir, "serve", "--stdio") as client:
        line = {"id": "h", "method": "fact_history", "params": {"entity": "marco"}}
        answer = client.ask(json.dumps(line).encode())
        assert answer["id"] == "h"
        chain = answer["result"]["chain"]
        assert ("Lisbon", False) in [(c["value"], c["current"]) for c in chain]
        assert client.finish() == ""


def test_a_stated_secret_is_redacted_like_every_other_write(vault: Vault, vault_dir: Path) -> None:
    token = "ghp_" + "Q7fz" * 9
    vault.set_fact("Deploy bot", "token", token, now=JUNE)
    vault.set_fact("Router", "wifi password", "correct horse battery", now=JUNE)
    written = "\n".join(p.read_text() for p in (vault_dir / "semantic").glob("*.md"))
    assert token not in written and "correct horse" not in written
    assert "[REDACTED:github-token]" in written and "[REDACTED:secret]" in written
    assert vault.set_fact("Marco", "email", "marco@example.org", now=JUNE).value == (
        "marco@example.org"
    )


def test_what_each_fact_of_an_answer_replaced_is_read_in_one_statement(vault: Vault) -> None:
    vault.set_fact("Marco", "office", "Porto", now=JUNE)
    vault.set_fact("Marco", "phone", "+351 900 000 000", now=JULY)
    vault.refresh()
    seen: list[str] = []
    vault.index.conn.set_trace_callback(seen.append)
    facts = vault.search("Marco office phone", now=NOW, refresh=False).facts
    vault.index.conn.set_trace_callback(None)
    was = {f.field: (f.value, f.was, f.was_until) for f in facts if f.was is not None}
    assert was == {
        "office": ("Porto", "Lisbon", "2025-06-01"),
        "phone": ("+351 900 000 000", "+351 912 345 678", "2025-07-01"),
    }
    assert sum("superseded = 1" in s and "JOIN facts" in s for s in seen) == 1


def test_an_answer_whose_facts_replaced_nothing_reads_no_replaced_ones(vault: Vault) -> None:
    """Which facts have replaced ones is kept until the index changes: an answer none of
    whose facts is among them asks for none."""
    vault.set_fact("Marco", "office", "Porto", now=JUNE)
    vault.set_fact("Ingrid Solberg", "city", "Bergen", now=JUNE)
    vault.refresh()
    vault.search("Ingrid Solberg city", now=NOW, refresh=False)
    seen: list[str] = []
    vault.index.conn.set_trace_callback(seen.append)
    facts = vault.search("Ingrid Solberg city", now=NOW, refresh=False).facts
    vault.index.conn.set_trace_callback(None)
    assert [(f.value, f.was) for f in facts] == [("Bergen", None)]
    assert not any("superseded = 1" in s for s in seen)
    [office] = [f for f in vault.search("Marco office", now=NOW).facts if f.field == "office"]
    assert (office.value, office.was) == ("Porto", "Lisbon")
