"""What a person sees and how they answer: the ``Channel`` protocol, the event vocabulary, in-memory
and console channels.
"""
