"""Models: OpenAI-compatible endpoints with a deadline, the in-process base, scripted doubles, offline."""
