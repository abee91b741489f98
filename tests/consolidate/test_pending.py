"""What the owner said of themselves before consolidation files it: ``profile`` and "what do
you know about me?" show it from the next turn on."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryclaw import RecallContext, Vault
from memoryclaw.consolidate.pending import with_pending
from memoryclaw.recall.results import FactResult

SAID = "Hi, I'm 34 now and I work as a nurse. My sister Ana is a doctor."


def _about(vault: Vault, context: RecallContext | None = None) -> set[tuple[str, str, bool]]:
    return {(f.field, f.value, f.pending) for f in vault.about_owner(context=context)}


@pytest.fixture
def told(tmp_path: Path) -> Vault:
    vault = Vault.init(tmp_path / "v", env={})
    (vault.root / "semantic" / "facts.md").write_text("- User (age): 33\n", encoding="utf-8")
    vault.log_turn("agent:main:first", "user", SAID)
    vault.log_turn("agent:main:first", "assistant", "Happy birthday!")
    return vault


def test_what_the_owner_said_is_listed_before_consolidation(told: Vault) -> None:
    """The owner's own facts are listed, marked, beside the value on file; what they said of
    somebody else is not the owner's."""
    with told as vault:
        about = _about(vault)
        assert {("age", "33", False), ("age", "34", True), ("job", "nurse", True)} <= about
        assert ("sister", "Ana", True) in about
        assert not any(value == "doctor" for _, value, _ in about)
        (pending,) = [f for f in vault.about_owner() if f.value == "34"]
        assert pending.path.startswith("logs/") and pending.line == 1
        assert pending.as_dict()["pending"] is True
        context = vault.retrieve("what do you know about me?").context
        assert "User age 34" in context and "User job nurse" in context


def test_once_consolidated_it_is_listed_once_and_no_longer_pending(told: Vault) -> None:
    with told as vault:
        vault.consolidate(all_logs=True)
        about = [(f.field, f.value) for f in vault.about_owner()]
        assert about.count(("job", "nurse")) == 1
        assert not any(f.pending for f in vault.about_owner())


def test_the_asking_session_and_a_group_see_none_of_it(told: Vault) -> None:
    """The asking session's host sends its open log as the conversation; in a group, "me" is
    whoever asks."""
    with told as vault:
        same = _about(vault, RecallContext(session="agent:main:first"))
        assert not any(pending for _, _, pending in same)
        assert ("age", "33", False) in same
        group = RecallContext(session="agent:main:telegram:group:-100")
        assert vault.about_owner(context=group) == []


def test_a_turn_the_agent_never_answered_is_not_read(tmp_path: Path) -> None:
    """As consolidation files it: said to the agent, who answers within a few turns."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        vault.log_turn("agent:main:first", "user", SAID)
        assert vault.about_owner() == []


def _fact(value: str, pending: bool) -> FactResult:
    return FactResult(
        id=value, entity="User", field="job", value=value, path="p", line=1, updated="",
        age_days=None, confidence="medium", source="", matched=(), pending=pending,
    )  # fmt: skip


def test_a_pending_value_already_on_file_is_not_listed_again() -> None:
    on_file = [_fact("Nurse", False)]
    said = [_fact("nurse", True), _fact("midwife", True)]
    assert [f.value for f in with_pending(on_file, said)] == ["Nurse", "midwife"]


def _said(vault: Vault, session: str, text: str, reply: str = "Noted that for the plan.") -> None:
    vault.log_turn(session, "user", text)
    vault.log_turn(session, "assistant", reply)


def test_a_forgotten_fact_does_not_come_back_from_a_log_that_says_it_again(
    tmp_path: Path,
) -> None:
    """``forget`` of a fact tombstones its line, not the turns that said it: consolidation
    drops it when it reads them again, so the pending listing must not show it meanwhile."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        _said(vault, "agent:main:first", "I work as a nurse at the clinic.")
        vault.consolidate(all_logs=True)
        _said(vault, "agent:main:second", "As I said, I work as a nurse at the clinic.")
        (fact,) = [f for f in vault.about_owner() if f.field == "job"]
        vault.forget(fact_id=fact.id)
        assert not any(f.value == "nurse" for f in vault.about_owner())
        assert "nurse" not in vault.retrieve("what do you know about me?").context
        vault.consolidate(all_logs=True)  # as consolidation files it: not at all
        assert not any(f.value == "nurse" for f in vault.about_owner())


def test_a_forgotten_instruction_is_not_in_force_again_from_a_log_that_says_it(
    tmp_path: Path,
) -> None:
    """The same for a standing instruction: not in ``profile``, nor leading a recall."""
    said = "Always answer in metric units from now on."
    with Vault.init(tmp_path / "v", env={}) as vault:
        _said(vault, "agent:main:first", said, "Metric units it is, for every answer.")
        vault.consolidate(all_logs=True)
        _said(vault, "agent:main:second", said, "Metric units it is, for every answer.")
        (fact,) = vault.profile()
        vault.forget(fact_id=fact.id)
        assert vault.profile() == []
        assert "metric" not in vault.retrieve("how far is the moon?").context


def test_a_forgotten_turn_a_log_still_holds_states_nothing(tmp_path: Path) -> None:
    """A tombstone another device's forget brought (a sync) finds the turn still in a local
    log: consolidation blanks it, and the pending listing reads nothing from it."""
    from memoryclaw.vault.tombstones import new_stone, tombstone_path, write

    with Vault.init(tmp_path / "v", env={}) as vault:
        _said(vault, "agent:main:first", "I'm 52 and I live in Lisbon.")
        # read before the tombstone came: a long-lived process sees the new one all the same
        assert any(f.value == "52" for f in vault.about_owner())
        stone = new_stone()
        stone.add_line("I'm 52 and I live in Lisbon.")
        write(vault.root, tombstone_path(), stone)
        assert not any(f.value in ("52", "Lisbon") for f in vault.about_owner())


def test_what_consolidation_holds_for_review_is_not_listed_as_the_owners(tmp_path: Path) -> None:
    """A value whose owner is only guessed (a number to call) is low confidence:
    consolidation holds it in _pending.md for review, never files it about the owner."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        _said(vault, "agent:main:first", "Please call the restaurant at 020 7946 0018 to book.")
        assert not any(f.field == "phone" for f in vault.about_owner())
        vault.consolidate(all_logs=True)
        assert not any(f.field == "phone" for f in vault.about_owner())


def test_a_log_dated_in_the_first_centuries_is_listed_not_a_crash(tmp_path: Path) -> None:
    """A log written by hand or by another tool may date its turns in year 1: valid ISO
    text, which the index must keep in a form it reads back."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        (vault.root / "logs" / "2001-01-01_00-00-00_cli_raw.md").write_text(
            "---\nid: old\nsession: agent:main:old\nscope: direct\nagent: main\n---\n\n"
            "### user · 0001-01-01T00:00:00Z\nI'm 41 and I work as a chef.\n\n"
            "### assistant · 0001-01-01T00:00:05Z\nChef life noted for the plan.\n",
            encoding="utf-8",
        )
        about = _about(vault, RecallContext(session="agent:main:other"))
        assert ("job", "chef", True) in about
        assert "chef" in vault.retrieve("what do you know about me?").context


def test_a_secret_phrase_answering_the_turn_before_is_no_fact(tmp_path: Path) -> None:
    """With ``privacy.redactSecrets`` off a log keeps what was said, and consolidation
    redacts it, a phrase answering "my recovery phrase is" included: what is listed before
    consolidation is read from text redacted the same way."""
    root = tmp_path / "v"
    Vault.init(root, env={}).close()
    (root / "memoryclaw.yaml").write_text("privacy:\n  redactSecrets: false\n", encoding="utf-8")
    with Vault(root, env={}) as vault:
        vault.log_turn("agent:main:first", "user", "Keep this safe, my recovery phrase is:")
        _said(vault, "agent:main:first", "call me Orbit Tiger Nebula Kettle")
        assert not any("Orbit" in f.value for f in vault.about_owner())
        found = vault.search("Orbit Tiger Nebula")
        assert not any("Orbit" in p.text for p in found.passages)


def test_a_secret_phrase_in_a_log_written_elsewhere_is_not_indexed(tmp_path: Path) -> None:
    """The same for a log another writer made, which the index reads whole."""
    with Vault.init(tmp_path / "v", env={}) as vault:
        (vault.root / "logs" / "2025-05-01_10-00-00_cli_raw.md").write_text(
            "---\nid: elsewhere\nsession: agent:main:x\nscope: direct\nagent: main\n---\n\n"
            "### user · 2025-05-01T10:00:00Z\nKeep this safe, my recovery phrase is:\n\n"
            "### user · 2025-05-01T10:00:05Z\ncall me Orbit Tiger Nebula Kettle\n\n"
            "### assistant · 2025-05-01T10:00:09Z\nNoted that for the plan.\n",
            encoding="utf-8",
        )
        assert not any("Orbit" in f.value for f in vault.about_owner())
        assert not any("Orbit" in p.text for p in vault.search("Orbit Tiger Nebula").passages)


def test_what_the_owner_quotes_somebody_else_saying_is_not_about_them(tmp_path: Path) -> None:
    with Vault.init(tmp_path / "v", env={}) as vault:
        _said(vault, "agent:main:first", 'My friend said "I\'m 45 and I work as a pilot."')
        assert vault.about_owner() == []
        vault.consolidate(all_logs=True)
        assert vault.about_owner() == []
