"""How the offline model reads words: stems, a few concepts, clauses, negation and objects as written.

Deliberately small and deterministic. Both sides of every comparison (the person's words, and the
names, descriptions and example requests of tools and agents) go through the same :func:`normalise`,
so ``invoices`` meets ``invoice`` and ``arrived`` meets ``arrive`` without a dictionary. Words are
letters of any language; what the person wrote is kept by position, so an object is quoted back as
written (``naïve café shoes 👟``, ``the hobbit``), never rebuilt from stems.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Set
from functools import lru_cache
from typing import NamedTuple

STOPWORDS = frozenset(
    """
    a about after all also am an and any anything are as asked at be been being but by call calls can could
    did do does doing don for from get got had has have having hello hey hi how i if in including into is
    it its just let like me might more must my need no not now of off ok okay on only or our please related
    should so some something than thank thanks that the their them then there these they this to too use
    used very wanna want was we were what when where which who why will with would yes you your explicitly
    brings user up always i'd i'm i'll i've let's it's that's agent assistant take
    """.split()  # noqa: SIM905
)

_CONCEPTS = {
    "buy": "buy purchase order sale shop shopping checkout",
    "refund": "refund return reimburse reimbursement money",
    "human": "human person operator someone representative manager people somebody real",
    "problem": (
        "problem issue repair broken broke fix damaged defect defective faulty cancel never arrive missing "
        "late lost wrong stuck stop complaint complain trouble unhappy"
    ),
    "find": "find search look lookup",
    "status": "status track tracking whereabouts",
}
"""Words that mean the same to a router. Values are concept names; keys are listed words."""
CONCEPTS = frozenset(_CONCEPTS) | {"billing"}
"""Every concept a word or a phrase (see ``intents``) can stand for."""
_NOT_OBJECTS = CONCEPTS - {"problem"}
"""Concepts that are never what a request acts on (``broken`` in ``refund my broken anvil`` is)."""

ACTIONS = frozenset({"buy", "refund"})
"""Concepts that request an action only when they are verbs of the present: ``buy``, not ``my order``."""

_PAST = frozenset({"ordered", "bought", "purchased", "shopped", "refunded", "returned", "reimbursed"})
"""Past forms of actions: a report of what happened (``I ordered it last week``), never a request."""

NEGATIONS = frozenset(
    "not never no don't dont didn't didnt won't wont cancel cancelled canceled stop without".split()  # noqa: SIM905
)
"""Words that turn a request for an action into its opposite, or into a complaint about it."""

VAGUE = frozenset(
    """
    help question thing things stuff one ones new item items product products order orders today tomorrow
    now info information detail details status back money
    """.split()  # noqa: SIM905
)
"""Words that name no particular object: never enough to act on."""

WEAK = frozenset({"help", "question"})
"""Words that count half when routing: they say a request exists, not what it is about."""

_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})
_CLAUSE_BREAKS = re.compile(r"[,;!?¿¡]+|\.(?!\d)|\b(?:and then|and|then|but|also)\b", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W_](?:[\w'’-]*[^\W_])?")
_ARTICLE_BEFORE = re.compile(r"\bthe\s+$", re.IGNORECASE)
"""The article that belongs to a name (``the hobbit``): kept in front of an object, unlike ``a``, ``my``."""


_SAME_STEM = {"complaint": "complain"}
"""Nouns whose verb the endings above do not reach."""


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
    return _SAME_STEM.get(w, w)


_CONCEPT_OF = {stem(word): concept for concept, words in _CONCEPTS.items() for word in words.split()}


class Word(NamedTuple):
    raw: str  # as the person wrote it ("" for a word an intent phrase stands for)
    norm: str  # stem, or the concept it belongs to
    start: int = -1  # where ``raw`` begins in the text it was read from
    end: int = -1


def normalise(word: str) -> str:
    base = stem(word)
    return _CONCEPT_OF.get(base, base)


def tokens(text: str) -> list[str]:
    """Every word of ``text``, lower case, apostrophes straightened."""
    return [t.lower().replace("’", "'") for t in _TOKEN.findall(text)]


def words(text: str) -> list[Word]:
    """The content words of ``text``. After ``my``/``your``..., and in the past tense, an action word is
    a thing: ``my order`` and ``I ordered it`` are an order that exists (no purchase); ``buy`` in ``buy an
    anvil`` is the action."""
    return list(_words(text))


@lru_cache(maxsize=4096)
def _words(text: str) -> tuple[Word, ...]:
    """:func:`words`, read once per text: a conversation is read again at every turn."""
    found: list[Word] = []
    previous = ""
    for match in _TOKEN.finditer(text):
        raw = match.group()
        low = raw.lower().replace("’", "'").strip("'")
        owned = previous in _POSSESSIVES
        previous = low
        if low in STOPWORDS:
            continue
        base = stem(low)
        concept = _CONCEPT_OF.get(base, base)
        thing = concept in ACTIONS and (owned or low in _PAST)
        norm = base if thing else concept
        if norm and norm not in STOPWORDS:
            found.append(Word(raw, norm, match.start(), match.end()))
    return tuple(found)


def terms(text: str) -> set[str]:
    """The norms of ``text``'s words, and the :func:`literal` of each word that stands for a concept."""
    found = words(text)
    return {w.norm for w in found} | {literal(w) for w in found if w.norm in CONCEPTS and w.raw}


def literal(word: Word) -> str:
    """A concept word as itself (``=complaint``): among words of one concept (``cancel``, ``complaint``)
    the very word the person used says more, so a match of it adds to the concept's."""
    return "=" + stem(word.raw)


def clauses(text: str) -> list[str]:
    """``text`` cut where one request may end and another begin (``return X and buy Y``)."""
    return [c.strip() for c in _CLAUSE_BREAKS.split(text) if c and c.strip()]


def negated(text: str) -> bool:
    """Whether ``text`` asks for the opposite of an action, or complains (``don't``, ``never arrived``)."""
    found = set(tokens(text))
    return bool(found & NEGATIONS) or bool(re.search(r"\bdo not\b|n['’]t\b", text, re.IGNORECASE))


def score(found: list[Word], vocabulary: Set[str]) -> float:
    """How well ``found`` matches ``vocabulary``: one per shared word, half for a :data:`WEAK` one, three
    for a concept (what a request is about outweighs the things it names). Vague words (``item``,
    ``back``) match nothing unless they stand for a concept (``order`` as in ``buy``)."""
    kept = CONCEPTS | WEAK
    shared = {w.norm for w in found if w.norm in kept or w.raw.lower() not in VAGUE} & vocabulary
    same = {literal(w) for w in found if w.norm in CONCEPTS and w.raw} & vocabulary
    return sum(0.5 if norm in WEAK else 3.0 if norm in CONCEPTS else 1.0 for norm in shared) + len(same)


def object_text(text: str, found: list[Word], exclude: Set[str]) -> str:
    """What ``text`` is about, as written: from its first to its last object word (words not in
    ``exclude``, the tool's own, nor vague), with a leading ``the`` and any emoji right after it."""
    objects = [
        w
        for w in found
        if w.raw and w.norm not in exclude and w.norm not in _NOT_OBJECTS and w.raw.lower() not in VAGUE
    ]
    if not objects:
        return ""
    start, end = objects[0].start, objects[-1].end
    article = _ARTICLE_BEFORE.search(text[:start])
    if article is not None:
        start = article.start()
    while end < len(text) and (text[end].isspace() or _is_symbol(text[end])):
        end += 1
    return text[start:end].strip()


def _is_symbol(char: str) -> bool:
    """Emoji and their joiners and variation selectors: part of what a person names, not punctuation."""
    return unicodedata.category(char) in ("So", "Sk", "Cf", "Mn") or char == "\u200d"


def without_symbols(text: str) -> str:
    """``text`` with emoji and other symbols dropped, for a parameter that cannot hold them."""
    kept = "".join(c for c in text if unicodedata.category(c) not in ("So", "Sk", "Cs", "Co", "Cf"))
    return " ".join(kept.split())
