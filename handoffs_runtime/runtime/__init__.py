"""Running agents in one process: ``HandoffsRuntime``, topic-type subscriptions, releasing idle sessions."""
