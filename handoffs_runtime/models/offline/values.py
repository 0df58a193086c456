"""What kind of value a parameter holds, and how to read one from a person's words.

A parameter is read by its name, type and docstring, never as "the rest of the sentence": a reference
(``booking_ref``, ``tag``, ``invoice_number``) is a code with a digit (``SKY456``, ``BG2002``); a date
(``new_date``) a day people write (``the 20th of December`` → ``20 December``, ``tomorrow``, ``next
Monday``); an amount (``amount``, ``price``, a ``number``) a figure; a quantity (an ``integer``) a count;
a name (``doctor_name``, ``city``) capitalised words. What one parameter took is masked for the others,
so two parameters never get the same words. Free text is read elsewhere (the object of the request).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

_MONTHS = (
    "january february march april may june july august september october november december".split()  # noqa: SIM905
)
_MONTH = (
    r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_DATES = (
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    re.compile(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}\b", re.IGNORECASE),
    re.compile(r"\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"),
    re.compile(
        rf"\b(?:today|tomorrow|day after tomorrow|(?:next|this|on)\s+(?:{_WEEKDAY}|week))\b", re.IGNORECASE
    ),
    re.compile(rf"\b{_WEEKDAY}\b", re.IGNORECASE),
    re.compile(rf"\bthe\s+{_DAY}\b", re.IGNORECASE),
)
"""Dates as people write them, the most precise first."""
_ORDINAL = re.compile(r"^[0-3]?\d(?:st|nd|rd|th)$", re.IGNORECASE)
_CODE = re.compile(r"(?<![\w.,])(?=[\w-]*\d)[A-Za-z0-9][\w-]*[A-Za-z0-9]\b|(?<![\w.,])\d\b")
_FIGURE = re.compile(
    r"(?P<currency>[$€£¥])?\s?(?P<figure>\d+(?:[.,]\d+)?)(?:\s?(?:dollars?|euros?|pounds?|usd|eur|gbp|quid|bucks))?",
    re.IGNORECASE,
)
_COUNTS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}  # noqa: SIM905
_NAME = re.compile(
    r"\b(?:(?:Dr|Mr|Mrs|Ms|Miss|Prof)\.?\s+)?[A-Z][A-Za-z'’-]+(?:\s+[A-Z][A-Za-z'’-]+)*\b(?![\w-])"
)
_NOT_NAMES = frozenset({"I", "I'm", "I'd", "I'll", "Hi", "Hello", "Please", "Could", "Can", "Would"})


class Kind(Enum):
    """What a parameter holds, as the offline model reads it. A ``PRICE`` is the seller's figure: read
    when the person names one, else left to the tool (which knows its catalogue), never asked for."""

    REFERENCE = "reference"
    DATE = "date"
    AMOUNT = "amount"
    QUANTITY = "quantity"
    PRICE = "price"
    NAME = "name"
    TEXT = "text"


_BY_WORD = {
    Kind.REFERENCE: {"id", "ref", "reference", "code", "tag", "number", "no", "serial", "pnr", "locator"},
    Kind.DATE: {"date", "day", "when", "deadline"},
    Kind.AMOUNT: {"amount", "cost", "total", "sum", "fee", "fare", "value"},
    Kind.QUANTITY: {"quantity", "count", "qty", "copies", "seats", "nights", "people", "units", "items"},
    Kind.NAME: {
        "name",
        "city",
        "destination",
        "doctor",
        "passenger",
        "person",
        "recipient",
        "town",
        "country",
    },
}


def kind_of(name: str, spec: dict[str, Any]) -> Kind:
    """The kind of parameter ``name`` with JSON schema ``spec``: by its type, then its name's words,
    then the words of its description."""
    kind = spec.get("type")
    parts = set(name.lower().split("_"))
    if kind in ("integer", "number"):
        if "price" in parts:
            return Kind.PRICE
        if kind == "integer" and parts & _BY_WORD[Kind.QUANTITY]:
            return Kind.QUANTITY
        return Kind.AMOUNT if kind == "number" or parts & _BY_WORD[Kind.AMOUNT] else Kind.QUANTITY
    for found in (Kind.DATE, Kind.REFERENCE, Kind.AMOUNT, Kind.NAME):
        if parts & _BY_WORD[found]:
            return found
    described = set(re.findall(r"[a-z]+", str(spec.get("description", "")).lower()))
    for found in (Kind.DATE, Kind.REFERENCE):
        if described & _BY_WORD[found]:
            return found
    return Kind.TEXT


@dataclass(frozen=True)
class Found:
    """A value read from the words, and where its words are (to mask them for other parameters)."""

    value: Any
    start: int
    end: int


def read(kind: Kind, text: str) -> Found | None:
    """The first value of ``kind`` in ``text``, or ``None`` (free text is never read here)."""
    if kind is Kind.DATE:
        return _date(text)
    if kind is Kind.REFERENCE:
        return _code(text)
    if kind in (Kind.AMOUNT, Kind.PRICE):
        return _figure(text, whole=False)
    if kind is Kind.QUANTITY:
        return _count(text)
    if kind is Kind.NAME:
        return _name(text)
    return None


def masked(text: str, found: Found) -> str:
    """``text`` with ``found``'s words blanked, so no other parameter reads them."""
    return text[: found.start] + " " * (found.end - found.start) + text[found.end :]


def corrected(kind: Kind, before: Any, said: str) -> Any:
    """The value ``said`` gives a parameter of ``kind`` that held ``before``, or ``None``: ``the 21st``
    corrects ``20 December`` to ``21 December``."""
    found = read(kind, said)
    if found is None:
        return None
    value = found.value
    if kind is Kind.DATE and isinstance(value, str) and isinstance(before, str):
        day = re.fullmatch(r"the ([0-3]?\d)(?:st|nd|rd|th)?", value, re.IGNORECASE)
        month = re.fullmatch(r"[0-3]?\d (\w+)", before)
        if day is not None and month is not None:
            return f"{int(day.group(1))} {month.group(1)}"
    return value


def _date(text: str) -> Found | None:
    hits = [(rank, m.start(), m) for rank, pattern in enumerate(_DATES) for m in pattern.finditer(text)]
    if not hits:
        return None
    best = min(hits, key=lambda h: (h[0], h[1]))[2]
    groups = best.groupdict()
    value = best.group().strip()
    if groups.get("day") and groups.get("month"):
        month = next(m for m in _MONTHS if m.startswith(groups["month"].lower()[:3]))
        value = f"{int(groups['day'])} {month.capitalize()}"
    elif value.lower().startswith("on "):
        value = value[3:]
    return Found(value, best.start(), best.end())


def _code(text: str) -> Found | None:
    for m in _CODE.finditer(text):
        token = m.group()
        if not _ORDINAL.match(token) and _date(token) is None:
            return Found(token, m.start(), m.end())
    return None


def _figure(text: str, *, whole: bool) -> Found | None:
    for m in _FIGURE.finditer(text):
        if _ORDINAL.match(text[m.start("figure") : m.end() + 2].split(" ")[0]) or re.match(
            r"[A-Za-z-]", text[m.start("figure") - 1 : m.start("figure")] or " "
        ):
            continue  # part of a code (INV-204) or an ordinal (the 20th)
        figure = m.group("figure").replace(",", ".")
        number: float = float(figure)
        value: Any = int(number) if whole or (number.is_integer() and "." not in figure) else number
        return Found(value, m.start(), m.end())
    return None


def _count(text: str) -> Found | None:
    found = _figure(text, whole=True)
    for m in re.finditer(r"[a-z]+", text.lower()):
        if m.group() in _COUNTS and (found is None or m.start() < found.start):
            return Found(_COUNTS[m.group()], m.start(), m.end())
    return found


def _name(text: str) -> Found | None:
    for m in _NAME.finditer(text):
        words = m.group().split()
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        if words and not (m.start() == 0 and len(words) == 1 and not words[0].startswith(("Dr", "Mr", "Ms"))):
            start = m.end() - len(" ".join(words))
            return Found(" ".join(words), start, m.end())
    return None
