"""Running agents in one process: ``HandoffsRuntime``, subscriptions, releasing idle sessions."""
