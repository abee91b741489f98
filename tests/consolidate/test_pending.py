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
