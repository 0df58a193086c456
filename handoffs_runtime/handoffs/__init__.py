"""The handoff as data: ``handoff()``, input filters and nesting, the team policy and its loop guard,
prompts, strict schemas.
"""
