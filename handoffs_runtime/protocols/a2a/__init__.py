"""A2A: a team served as an A2A agent, and remote A2A agents as members; needs the ``a2a`` extra."""
