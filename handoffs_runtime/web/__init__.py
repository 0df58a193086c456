"""``handoffs serve``: a web chat for customers and a console for operators (extra ``web``)."""

from handoffs_runtime.web.hub import SessionHub

__all__ = ["SessionHub"]
