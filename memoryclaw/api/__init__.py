"""``memoryclaw.Vault``, the one facade, and the reports its verbs return.

``vault`` holds the class; each of its verbs that spans several stages delegates to the module
here named for its concern, which works on the Vault it is given (its state included)."""

from .forgetting import ForgetReport
from .importing import IngestReport
from .vault import Vault

__all__ = ["ForgetReport", "IngestReport", "Vault"]
