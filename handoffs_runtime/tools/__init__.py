"""Tools a team gives its agents: their context, irreversible effects, approval, workers, the sandbox."""
