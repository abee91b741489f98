"""``memoryclaw.Vault``, the one facade, and the reports its verbs return."""

from .forgetting import ForgetReport
from .importing import IngestReport
from .vault import Vault

__all__ = ["ForgetReport", "IngestReport", "Vault"]
