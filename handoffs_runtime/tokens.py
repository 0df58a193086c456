"""How guessable a token is: a token file whose token has too little randomness is refused when read.

A token is the only thing between a stranger and a role, and a person who writes one by hand tends to
repeat themselves (``aaaaaaaaaaaaaaaa``, ``abcdabcd...``, ``abcdefgh...``). The estimate is generous to
real secrets (``new_token()``, ``openssl rand -hex 16``, ``token_urlsafe(16)`` all pass with room) and
counts repetition, both of characters and of the steps between them::

    token_weakness("aaaaaaaaaaaaaaaa")  # 'about 0 bits of randomness; at least 64 are needed'
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence

MIN_TOKEN_BITS = 64
"""Guessing among 2**64 tokens at any rate a network allows takes longer than any deployment lives;
a hand-written 16-character token estimates far below it, a random one of 16 bytes well above."""


def estimated_bits(token: str) -> float:
    """At most how many random bits ``token`` holds: its length times the entropy per symbol of its
    characters, or of the steps between neighbours if those repeat more (a run ``abcdef...``)."""
    if not token:
        return 0.0
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(token)]
    per_symbol = min(_entropy(token), _entropy(steps)) if steps else 0.0
    bits = per_symbol * len(token)
    return bits if bits > 0 else 0.0  # never "-0"


def token_weakness(token: str) -> str | None:
    """Why ``token`` is too easy to guess (one phrase), or ``None`` if it is strong enough."""
    bits = estimated_bits(token)
    if bits >= MIN_TOKEN_BITS:
        return None
    return f"about {bits:.0f} bits of randomness; at least {MIN_TOKEN_BITS} are needed"


def _entropy(symbols: Sequence[object] | str) -> float:
    """The Shannon entropy of ``symbols`` per symbol, in bits, from their own frequencies."""
    counts: Iterable[int] = Counter(symbols).values()
    total = len(symbols)
    return -sum(c / total * math.log2(c / total) for c in counts)
