"""``memoryclaw.Vault``, the one facade, and the reports its verbs return.

``vault`` holds the class; each of its verbs that spans several stages delegates to the module
here named for its concern, which works on the Vault it is given (its state included).  Those
modules are imported when a verb first needs them, so a process that only recalls does not
load what forgetting, importing or consolidating need."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .vault import Vault

if TYPE_CHECKING:
    from .forgetting import ForgetReport
    from .importing import IngestReport

__all__ = ["ForgetReport", "IngestReport", "Vault"]


def __getattr__(name: str) -> Any:
    """The reports, imported from their modules on first use (PEP 562)."""
    if name == "ForgetReport":
        from .forgetting import ForgetReport

        return ForgetReport
    if name == "IngestReport":
        from .importing import IngestReport

        return IngestReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
