"""Models: OpenAI-compatible endpoints with a deadline, failures explained, the in-process base,
scripted doubles, the offline model.
"""
