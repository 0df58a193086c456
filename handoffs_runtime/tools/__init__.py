"""Handoff specs, input filters, prompts and the demo teams' business tools."""
