"""The built-in teams: ACME customer service and the orchestrator, with their agent names."""
