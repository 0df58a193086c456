"""How the offline model reads words: stems, a few concepts, clauses, negation and vague objects.

Deliberately small and deterministic. Both sides of every comparison (the person's words, and the
names and descriptions of tools and agents) go through the same :func:`normalise`, so ``invoices``
meets ``invoice`` and ``arrived`` meets ``arrive`` without a dictionary.
"""

from __future__ import annotations

import re
from typing import NamedTuple

STOPWORDS = frozenset(
    """
    a about after all also am an and any anything are as asked at be been being but by call calls can could
    did do does doing don for from get got had has have having hello hey hi how i if in including into is
    it its just let like me might more must my need no not now of off ok okay on only or our please related
    should so some something than thank thanks that the their them then there these they this to too use
    used very wanna want was we were what when where which who why will with would yes you your explicitly
    brings user up always i'd i'm i'll i've let's it's that's agent assistant
    """.split()  # noqa: SIM905
)

_CONCEPTS = {
    "buy": "buy purchase order sale shop shopping bought checkout",
    "refund": "refund return reimburse reimbursement money",
    "human": "human person operator someone representative manager people somebody real",
    "problem": (
        "problem issue repair broken broke fix damaged defect defective faulty cancel never arrive missing "
        "late lost wrong stuck stop complaint trouble"
    ),
    "find": "find search look lookup",
}
"""Words that mean the same to a router. Values are concept names; keys are listed words."""

NEGATIONS = frozenset(
    "not never no don't dont didn't didnt won't wont cancel cancelled canceled stop without".split()  # noqa: SIM905
)
"""Words that turn a request for an action into its opposite, or into a complaint about it."""

VAGUE = frozenset(
    """
    help question thing things stuff one ones new item items product products order orders today tomorrow
    now info information detail details status back
    """.split()  # noqa: SIM905
)
"""Words that name no particular object: never enough to act on."""

WEAK = frozenset({"help", "question"})
"""Words that count half when routing: they say a request exists, not what it is about."""

_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})
_CLAUSE_BREAKS = re.compile(r"[,;!?]+|\.(?!\d)|\b(?:and then|and|then|but|also)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9'_-]*[A-Za-z0-9])?")


def stem(word: str) -> str:
    """A light stemmer: plural, ``-ing``, ``-ed``, ``-ment`` and a final ``e`` go, doubled ends merge."""
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed", "ment"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("eed"):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


_CONCEPT_OF = {stem(word): concept for concept, words in _CONCEPTS.items() for word in words.split()}


class Word(NamedTuple):
    raw: str  # as the person wrote it
    norm: str  # stem, or the concept it belongs to


def normalise(word: str) -> str:
    base = stem(word)
    return _CONCEPT_OF.get(base, base)


def words(text: str) -> list[Word]:
    """The content words of ``text``. After ``my``/``your``..., a word is a thing, not an action:
    ``my order`` is an order that exists (no purchase), ``buy`` in ``buy an anvil`` is the action."""
    found: list[Word] = []
    previous = ""
    for raw in _TOKEN.findall(text):
        low = raw.lower().strip("'")
        owned = previous in _POSSESSIVES
        previous = low
        if low in STOPWORDS:
            continue
        base = stem(low)
        norm = base if owned and _CONCEPT_OF.get(base) == "buy" else normalise(low)
        if norm and norm not in STOPWORDS:
            found.append(Word(raw, norm))
    return found


def terms(text: str) -> set[str]:
    return {w.norm for w in words(text)}


def clauses(text: str) -> list[str]:
    """``text`` cut where one request may end and another begin (``return X and buy Y``)."""
    return [c.strip() for c in _CLAUSE_BREAKS.split(text) if c and c.strip()]


def negated(text: str) -> bool:
    """Whether ``text`` asks for the opposite of an action, or complains (``don't``, ``never arrived``)."""
    tokens = {t.lower() for t in _TOKEN.findall(text)}
    return bool(tokens & NEGATIONS) or bool(re.search(r"\bdo not\b|n't\b", text, re.IGNORECASE))


def score(found: list[Word], vocabulary: set[str]) -> float:
    """How well ``found`` matches ``vocabulary``: one per shared word, half for a :data:`WEAK` one."""
    return sum(0.5 if norm in WEAK else 1.0 for norm in {w.norm for w in found} & vocabulary)


def object_words(found: list[Word], exclude: set[str]) -> list[str]:
    """What the words are about: the ones not in ``exclude`` (the tool's own words), vague ones dropped."""
    return [w.raw for w in found if w.norm not in exclude and w.raw.lower() not in VAGUE]
