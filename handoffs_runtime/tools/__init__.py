"""Tools a team gives its agents: what a tool knows of its session, irreversible effects, approval,
workers, the Python sandbox.
"""
