"""A2A: a team served as an A2A agent (``handoffs a2a serve``); needs the ``a2a`` extra."""
