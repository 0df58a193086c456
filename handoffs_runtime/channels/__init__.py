"""What a person sees and how they answer: the ``Channel`` protocol, events, in-memory and console."""
