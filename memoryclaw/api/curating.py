"""The facade's verbs that review and state memories: facts waiting for review, a fact set by
hand and its history, skills, and what is on file about the owner.
:class:`~memoryclaw.api.vault.Vault` takes them from here; each imports what it runs when it
is called."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..consolidate.supersede import SupersedeReport
    from ..recall.results import FactResult
    from ..recall.standing import StandingFact
    from ..vault.pending import PendingFact
    from ..vault.scopes import RecallContext
    from ..vault.skillfiles import SkillInfo
    from .vault import Vault


class CuratingVerbs:
    """Pending facts, facts, skills and the owner's profile: a part of
    :class:`~memoryclaw.api.vault.Vault`."""

    @property
    def _vault(self) -> Vault:
        return cast("Vault", self)  # only ever a base of Vault

    def pending(self) -> list[PendingFact]:
        """Facts waiting for review in ``semantic/_pending.md``."""
        from ..vault.pending import pending_facts

        return pending_facts(self._vault.root)

    def approve_pending(self, ident: str, *, now: datetime | None = None) -> PendingFact:
        """Accept a pending fact: into its semantic file.  A conflict supersedes the old value,
        which stays in its file marked (dated ``now``, default: the current time)."""
        from . import facts

        return facts.approve_pending(self._vault, ident, now=now)

    def set_fact(
        self, entity: str, field: str, value: str, *, now: datetime | None = None
    ) -> SupersedeReport:
        """State ``entity``'s ``field`` as ``value``; its current values stay in their files,
        marked superseded by it on ``now``'s date (never deleted).  Setting the current value
        again writes nothing."""
        from . import facts

        return facts.set_fact(self._vault, entity, field, value, now=now)

    def fact_history(
        self, entity: str, field: str | None = None, *, context: RecallContext | None = None
    ) -> dict[str, Any]:
        """Every value ``entity``'s ``field`` (every field, without one) has had, superseded
        ones first, with the git commits that changed those lines (a git vault)."""
        from . import facts

        return facts.fact_history(self._vault, entity, field, context=context)

    def reject_pending(self, ident: str) -> PendingFact:
        """Drop a pending fact."""
        from . import facts

        return facts.reject_pending(self._vault, ident)

    def skills(self) -> list[SkillInfo]:
        """Every skill under ``skills/`` with its status; unreadable ones have status invalid."""
        from ..consolidate.skills import list_skills

        return list_skills(self._vault.root)

    def approve_skill(self, name: str) -> SkillInfo:
        """Mark the skill approved; ``todos`` says how many TODO markers it still holds."""
        from ..consolidate.skills import approve_skill
        from ..share.teams import refuse

        refuse(self._vault.teams, "skills approve", name)
        return approve_skill(self._vault.root, name)

    def reject_skill(self, name: str) -> SkillInfo:
        """Mark the skill rejected: never active, and never suggested again."""
        from ..consolidate.skills import reject_skill
        from ..share.teams import refuse

        refuse(self._vault.teams, "skills reject", name)
        return reject_skill(self._vault.root, name)

    def profile(self, *, context: RecallContext | None = None) -> list[StandingFact]:
        """The standing instructions and preferences in force for ``context`` (None: the owner
        at the terminal), newest first (:mod:`memoryclaw.recall.standing`)."""
        from .recalling import standing_in_force

        self._vault.refresh()
        return standing_in_force(self._vault, context)

    def about_owner(self, *, context: RecallContext | None = None) -> list[FactResult]:
        """What the owner's own files and turns say of them ("- User (job): nurse", "- Coffee:
        flat white"), current values only, in file order, as ``context`` may see them (none
        where other people read); their standing instructions and preferences are
        :meth:`profile`'s."""
        from .recalling import about_owner

        self._vault.refresh()
        return about_owner(self._vault, context)
