"""The handoff as data: ``handoff()``, filters and nesting, the policy and its loop guard, prompts."""
