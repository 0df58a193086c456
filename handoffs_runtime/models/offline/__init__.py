"""The built-in offline model in a package of its own: the model, and how it reads what was said.

Only :class:`~handoffs_runtime.models.offline.model.OfflineModel` is for use from outside; the other
modules are its reading of words, intents and arguments, and its choice of tool or handoff.
"""

from handoffs_runtime.models.offline.model import OfflineModel

__all__ = ["OfflineModel"]
