"""Other vendors' protocols: a team served over A2A, and remote A2A agents as members of a team."""
