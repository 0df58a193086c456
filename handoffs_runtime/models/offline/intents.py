"""What a customer means beyond single words: asking for a person, about a status, a billing problem.

The offline model routes by words (see ``words``); a few intents are phrases rather than words:
``where is my order?`` asks about a status, ``I need to talk to an agent`` asks for a person, ``I'll take
one`` buys, ``can I get my money back`` asks for a refund. :func:`intent_words` adds the concept words
those phrases stand for, so the same word matching routes them; :func:`blocks_action` says when a
request only reports or asks about something, so that nothing irreversible is proposed for it.
Regular expressions over lower-case text, in English: :func:`foreign` tells when the text is not.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from handoffs_runtime.models.offline.words import Word, tokens

_FLAGS = re.IGNORECASE

_HUMAN = re.compile(
    r"\b(?:human|person|operator|manager|representative|supervisor)\b"
    r"|\b(?:talk|speak|chat|connect|transfer|put|get|want|need|reach|call)\b(?:\W+\w+){0,4}?\W+"
    r"(?:someone|somebody|people|agent|staff|anyone|anybody|employee)\b",
    _FLAGS,
)
"""Asking for a person: any mention of one, or an agent or someone to talk to."""

_STATUS = re.compile(
    r"\bwhere(?:'s|’s| is| are| the)\b|\bwhen (?:will|does|do|is|can|should|are)\b|\bstatus\b|\btrack"
    r"|\b(?:has|have|hasn't|haven't|has not|have not|didn't|did not|not yet|still not|never|yet to)\b"
    r"(?:\W+\w+){0,4}?\W+(?:arriv\w*|come|came|shown up|show up|turned up|turn up|deliver\w*|ship\w*"
    r"|receiv\w*|got|get|been)\b"
    r"|\b(?:still waiting|not arrived|on (?:its|the|my) way|running late|delayed|is late|are late)\b"
    r"|\b(?:not|isn't|aren't) here\b|\bin transit\b|\bhow long\b|\bany news\b|\bany update",
    _FLAGS,
)
"""Questions about something that exists (an order, a parcel, a refund): where, when, whether yet."""

_BILLING = re.compile(
    r"\b(?:charged|billed|paid)\b(?:\W+\w+){0,3}?\W+(?:twice|two times|2 times|double|too much|again)\b"
    r"|\bdouble[- ]?(?:charg|bill)\w*|\bovercharg\w*|\bwrong amount\b|\bcharges? (?:i|on my)\b",
    _FLAGS,
)
"""A problem with a payment already made."""

_ASKED_ABOUT_PAST = re.compile(
    r"(?:^|[.?!,;]\s*)(?:\w+\s+)?(?:did|have|has|was|were) (?:you|my|i|we|it|they)\b", _FLAGS
)
"""A question about what was done (``did you refund me?``), not a request to do it."""

_ASKED_FOR_INFORMATION = re.compile(
    r"\bhow much\b|\bwhat(?:'s| is| are) the (?:price|cost)\b|\btell me\b|\bdo you (?:have|sell|deliver)\b",
    _FLAGS,
)
"""A question about prices or what exists, answered with words rather than an action."""

_REFUND = re.compile(r"\bmoney back\b|\b(?:send|take|give|bring)\b(?:\W+\w+){0,3}?\W+back\b", _FLAGS)
_BUY = re.compile(
    r"\b(?:i'?ll|i will|i'?d|we'?ll|we will|let me) (?:take|have)\b"
    r"|\bget me (?:a|an|one|some|two|three|\d+|the)\b(?!(?:\W+\w+){0,2}?\W+(?:manager|human|person))",
    _FLAGS,
)
_COMPLAINT = re.compile(
    r"\b(?:isn't|is not|not|doesn't|does not|stopped|won't) (?:help|helping|work|working)\b|\bfell off\b",
    _FLAGS,
)

_ENGLISH = frozenset(
    """
    a an the i i'm i'd i'll i've you your my me we our it is are was were be to of and or but for with on
    in at from this that what where when why how who can could would will should do does did not no yes
    please want need help hi hello hey thanks thank ok okay buy order refund return get have has my there
    """.split()  # noqa: SIM905
)
_OTHER_LANGUAGES = frozenset(
    """
    je tu il elle nous vous mon ma mes le la les des du une est et pour avec pas où voudrais veux bonjour
    merci commande remboursement colis svp el los las una es y por para con mi mis quiero dónde gracias
    hola pedido ich du mein meine ist und nicht mit bitte möchte danke wo bestellung hallo der die das
    io il mio mia voglio dove grazie ciao ordine eu meu minha quero obrigado onde olá het een ik wil waar
    """.split()  # noqa: SIM905
)
FOREIGN_REPLY = (
    "The offline demo understands English; connect a language model with --model for other languages."
)


def _mark(norm: str) -> Word:
    return Word("", norm)


def intent_words(text: str) -> list[Word]:
    """The concept words the phrases of ``text`` stand for, with no text of their own (``raw`` is empty,
    so they are never quoted as an object)."""
    return list(_intent_words(text))


@lru_cache(maxsize=4096)
def _intent_words(text: str) -> tuple[Word, ...]:
    found: list[Word] = []
    if wants_person(text):
        found.append(_mark("human"))
    if _STATUS.search(text):
        found.append(_mark("status"))
    if _BILLING.search(text):
        found += [_mark("problem"), _mark("billing")]
    if _COMPLAINT.search(text):
        found.append(_mark("problem"))
    if _REFUND.search(text):
        found.append(_mark("refund"))
    if _BUY.search(text):
        found.append(_mark("buy"))
    return tuple(found)


def wants_person(text: str) -> bool:
    """Whether ``text`` asks for a person (a human, an operator, someone to talk to)."""
    return _HUMAN.search(text) is not None


def asks_status(text: str) -> bool:
    """Whether ``text`` asks where or when something is, or says it has not come (``hasn't arrived``)."""
    return _STATUS.search(text) is not None


def blocks_action(text: str) -> bool:
    """Whether ``text`` reports or asks about something rather than asks for it to be done: a status or
    tracking question, a billing problem, a question about what was done or what something costs."""
    return any(p.search(text) for p in (_STATUS, _BILLING, _ASKED_ABOUT_PAST, _ASKED_FOR_INFORMATION))


def foreign(text: str) -> bool:
    """Whether ``text`` is written in a language other than English: no English word in it, and either
    letters of a non-Latin script or common words of another language."""
    found = tokens(text)
    if not found or any(t in _ENGLISH for t in found):
        return False
    latin = all(unicodedata.name(c, "LATIN").startswith("LATIN") for c in text if c.isalpha())
    return not latin or any(t in _OTHER_LANGUAGES for t in found)
