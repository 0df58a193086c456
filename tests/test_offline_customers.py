"""The offline model tried as new customers try it, in their own words: a table of conversations with
the agents each is handed to, the reply to its last message, and what may then run.

Every conversation is followed by ``yes`` and ``y``: only a row that proposes an irreversible tool may
then run it; every status, tracking, billing, complaint, cancellation or negated request ends with
nothing ordered, refunded, booked or sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from handoffs_runtime import OfflineModel, TeamSpec
from handoffs_runtime.channels.memory import ScriptedChannel
from handoffs_runtime.models.offline.intents import FOREIGN_REPLY
from handoffs_runtime.teams.acme import acme_team

from .parcel_team import CLAIMS, CLERK_REPLY, COUNTER, PERSON, SHIPPING, TRACKING, parcel_team
from .support import run_sessions, texts

TRIAGE, SALES, ISSUES, HUMAN = "TriageAgent", "SalesAgent", "IssuesAndRepairsAgent", "HumanAgent"
OPERATOR = "Hi, Sam here."

ANSWER = "answer"  # the honest offline reply, quoting the person's last message whole
UNSURE = "I'm not sure I follow."
HELLO = "Hello, this is "
DECLINED = "All right, I won't. Is there anything else I can help with?"
NO_ACTION = frozenset({"status", "billing", "complaint", "cancel", "negated"})


ONE_ARGUMENT = {
    "track parcel": "tracking number",
    "book shipment": "destination",
    "refund postage": "shipment",
}
"""The parcel team's tools of one argument: the proposal names it (ACME's look their arguments up)."""


def propose(tool: str, item: str) -> str:
    named = f"with {ONE_ARGUMENT[tool]}" if tool in ONE_ARGUMENT else "for"
    return f"I can {tool} {named} “{item}”. Shall I go ahead? (yes/no)"


def ask(tool: str, what: str) -> str:
    return f"To {tool} I need the {what}. Which {what}?"


@dataclass(frozen=True)
class Row:
    said: tuple[str, ...]
    route: tuple[str, ...]  # every agent the conversation is handed to, in order
    agent: str  # who answers the last message
    reply: str  # that answer: exact, or ANSWER, UNSURE, HELLO (its beginning)
    kind: str  # what the customer wants: status, billing, complaint, cancel, negated, refund, buy, ...


def row(said: str | tuple[str, ...], route: tuple[str, ...], agent: str, reply: str, kind: str) -> Row:
    return Row((said,) if isinstance(said, str) else said, route, agent, reply, kind)


def _acme_status() -> list[Row]:
    """What is answered in words or declined: nothing may then run."""
    status = [
        "hi, where is my order? I ordered it 2 weeks ago",
        "I ordered a jetpack last week and it hasn't shown up",
        "where is my order?",
        "where is my order",
        "Where's my parcel?",
        "when will my rocket skates arrive?",
        "my package still hasn't arrived",
        "has my order shipped yet?",
        "I'm still waiting for my anvil",
        "can you track my order please",
        "what's the status of my refund?",
        "has my refund been processed?",
        "when will I get my refund",
        "did you refund me?",
        "I bought skates yesterday, can you tell me the price?",
        "I ordered an anvil on Monday and it's still not here",
        "my delivery was late",
        "the package is missing",
        "my order never arrived",
        "where are my giant magnets?",
        "any update on my order?",
        "my shoes never arrived and I want a refund",
    ]
    billing = [
        "I was charged twice for the same thing",
        "there is a double charge on my card",
        "you overcharged me for the anvil",
        "I got billed twice",
        "why was I charged twice?",
    ]
    complaints = [
        "my skates broke after one day, the left wheel fell off",
        "my anvil is broken",
        "my rocket skates are damaged",
        "the anvil I bought is faulty",
        "I have a problem with my order",
        "I need help with my order",
        "the magnet doesn't work",
        "I never ordered this",
        "I got the wrong item",
    ]
    cancel = [
        "can I cancel my order?",
        "cancel my subscription",
        "stop my order",
        "I want to cancel the anvil I ordered",
    ]
    kinds = {"status": status, "billing": billing, "complaint": complaints, "cancel": cancel}
    negated = [
        row("I don't want to buy anything", (SALES,), SALES, DECLINED, "negated"),
        row("please don't refund my anvil", (ISSUES,), ISSUES, DECLINED, "negated"),
        row("don't order anything yet", (SALES,), SALES, DECLINED, "negated"),
    ]
    return [row(s, (ISSUES,), ISSUES, ANSWER, kind) for kind, said in kinds.items() for s in said] + negated


def _acme_requests() -> list[Row]:
    """What may run after a yes: a refund or an order, of the item named (or asked for when there is none)."""
    # what the customer says (a tuple: one message after another): the item named; None: none is named
    refunds: dict[str | tuple[str, ...], str | None] = {
        "I want to return my shoes and buy new ones": "shoes",
        "I want a refund for my shoes": "shoes",
        "I'd like to return my anvil": "anvil",
        "refund my broken anvil": "broken anvil",
        "I want my money back for the skates": "the skates",
        "I want refunds for my rocket skates": "rocket skates",
        "I want a refund": None,
        "I want a refund for my order": None,
        "refund it": None,
        ("can I get my money back?", "skates"): "skates",
        ("I want a refund please.", "skates"): "skates",
        ("ok can I just get my money back then", "skates"): "skates",
        ("I want to return something", "the left roller skate"): "the left roller skate",
        "refund my naïve café shoes 👟": "naïve café shoes 👟",
        "please take it back and refund me": None,
        "I'd like a refund for the 抹茶 whisk": "the 抹茶 whisk",
    }
    purchases: dict[str | tuple[str, ...], str | None] = {
        "I'd like to buy rocket skates": "rocket skates",
        "I'd like to buy rocket skates.": "rocket skates",
        "I want to purchase an anvil": "anvil",
        "I want to order giant magnets": "giant magnets",
        "I'd like to shop for roadrunner traps": "roadrunner traps",
        "buying a jet-propelled unicycle": "jet-propelled unicycle",
        "I want to buy skates and return my anvil": "skates",
        "ok I'll take one anvil please": "anvil",
        "I'll have a box of bird seed": "box of bird seed",
        "get me a portable hole": "portable hole",
        "I want to buy Ωmega glue": "Ωmega glue",
        "can I order the giant slingshot?": "the giant slingshot",
        "I want to buy something": None,
        "buy new ones": None,
        "I want to order": None,
        "can you help me buy it": None,
    }
    requests = [(said, "refund", item) for said, item in refunds.items()]
    requests += [(said, "buy", item) for said, item in purchases.items()]
    tools = {"refund": (ISSUES, "execute refund", "item"), "buy": (SALES, "execute order", "product")}

    def request(said: str | tuple[str, ...], kind: str, item: str | None) -> Row:
        agent, tool, what = tools[kind]
        return row(said, (agent,), agent, propose(tool, item) if item else ask(tool, what), kind)

    prices = [
        row("how much is an anvil?", (SALES,), SALES, ANSWER, "price"),
        row("what do you sell?", (SALES,), SALES, ANSWER, "price"),
    ]
    return [request(*r) for r in requests] + prices


def _acme_people_and_others() -> list[Row]:
    people = [
        "I need to talk to an agent",
        "let me talk to a person",
        "let me talk to a human",
        "get me a manager",
        "operator",
        "I want to speak to a person",
        "can I talk to a real person please",
        "I'd like a representative",
        "I want to speak with someone",
        "is there a human I can talk to?",
    ]
    foreign = [
        "je voudrais un remboursement pour mes chaussures",
        "où est ma commande ?",
        "我想退货",
        "我的订单在哪里？",
        "quiero comprar un yunque",
        "wo ist meine Bestellung?",
    ]
    return (
        [row(s, (HUMAN,), HUMAN, OPERATOR, "person") for s in people]
        + [
            row(
                ("I want to buy rocket skates", "this isn't helping, I want to talk to a real person please"),
                (SALES, TRIAGE, HUMAN),
                HUMAN,
                OPERATOR,
                "person",
            ),
            row(
                ("my anvil is broken", "let me speak to a supervisor"),
                (ISSUES, TRIAGE, HUMAN),
                HUMAN,
                OPERATOR,
                "person",
            ),
        ]
        + [row(s, (), TRIAGE, FOREIGN_REPLY, "foreign") for s in foreign]
        + [
            row("hello", (), TRIAGE, HELLO, "other"),
            row("hi there", (), TRIAGE, HELLO, "other"),
            row("thanks", (), TRIAGE, HELLO, "other"),
            row("what time do you open", (), TRIAGE, UNSURE, "other"),
        ]
    )


ACME = _acme_status() + _acme_requests() + _acme_people_and_others()


def _parcels() -> list[Row]:
    track, ship, postage = "track parcel", "book shipment", "refund postage"
    tracking = [
        (("where is my parcel?", "TRK-42"), propose(track, "TRK-42")),
        (("where is my parcel", "TRK-42"), propose(track, "TRK-42")),
        ("track TRK-7", propose(track, "TRK-7")),
        ("when will my package arrive?", ask(track, "tracking number")),
        ("has my package been delivered?", ask(track, "tracking number")),
        ("my parcel hasn't arrived", ask(track, "tracking number")),
        ("is my box still in transit", ask(track, "tracking number")),
        ("the courier hasn't come", ask(track, "tracking number")),
    ]
    shipping = [
        ("I want to send a parcel to Lyon", propose(ship, "Lyon"), "buy"),
        ("I need to ship a box to my mother", propose(ship, "box to my mother"), "buy"),
        ("book a courier for tomorrow", ask(ship, "destination"), "buy"),
        ("how much does it cost to post a letter abroad?", ANSWER, "price"),
        ("do you deliver to Iceland?", ANSWER, "price"),
        ("don't send anything yet", DECLINED, "negated"),
    ]
    claims = [
        ("my parcel arrived damaged", ANSWER, "complaint"),
        ("the box was crushed", ANSWER, "complaint"),
        ("you lost my package", ANSWER, "complaint"),
        ("I want compensation", ANSWER, "complaint"),
        ("I was charged twice for postage", ANSWER, "billing"),
        (("can I get my money back?", "skates"), propose(postage, "skates"), "refund"),
        (("I want a refund please.", "skates"), propose(postage, "skates"), "refund"),
        (("ok can I just get my money back then", "skates"), propose(postage, "skates"), "refund"),
        ("refund the postage for TRK-9", propose(postage, "TRK-9"), "refund"),
    ]
    return (
        [row(s, (TRACKING,), TRACKING, r, "status") for s, r in tracking]
        + [row(s, (SHIPPING,), SHIPPING, r, k) for s, r, k in shipping]
        + [row(s, (CLAIMS,), CLAIMS, r, k) for s, r, k in claims]
        + [
            row(s, (PERSON,), PERSON, CLERK_REPLY, "person")
            for s in ("I need to talk to an agent", "get me a manager")
        ]
        + [
            row(
                ("where is my parcel?", "this isn't helping, I want to talk to a real person please"),
                (TRACKING, COUNTER, PERSON),
                PERSON,
                CLERK_REPLY,
                "person",
            ),
            row("je veux envoyer un colis", (), COUNTER, FOREIGN_REPLY, "foreign"),
            row("hello", (), COUNTER, HELLO, "other"),
            row("what time do you open", (), COUNTER, UNSURE, "other"),
        ]
    )


PARCELS = _parcels()


def _quote(said: str) -> str:
    return f"You asked: “{said}”."


def _matches(reply: str, expected: str, said: str) -> bool:
    if expected == ANSWER:
        return "offline demo model" in reply and _quote(said) in reply
    if expected in (UNSURE, HELLO):
        return reply.startswith(expected)
    return reply == expected


async def _wrong_rows(
    team: TeamSpec, table: list[Row], operator: str, irreversible: set[str]
) -> list[object]:
    """Run every row as its own session on one runtime; the rows that went wrong, with what happened."""
    sessions = {f"s{i}": [*r.said, "yes", "y"] for i, r in enumerate(table)}
    channel = ScriptedChannel.for_sessions(sessions, operator=[operator] * len(table))
    await run_sessions(team, channel, model=OfflineModel(), sessions=sessions)
    wrong: list[object] = []
    for i, r in enumerate(table):
        session = f"s{i}"
        routes = tuple(e.target for e in channel.handoffs(session))[: len(r.route)]
        replies = texts(channel, session)
        answer = replies[len(r.said) - 1] if len(replies) >= len(r.said) else ("", "")
        if routes != r.route or answer[0] != r.agent or not _matches(answer[1], r.reply, r.said[-1]):
            wrong.append((r.said, routes, answer))
            continue
        names = [t.replace("_", " ") for t in irreversible]
        proposed = any(r.reply.startswith((f"I can {name} for", f"I can {name} with")) for name in names)
        ran = any(t.startswith("Done:") and any(f"{n} →" in t for n in names) for _, t in replies)
        ordered = any("Confirm order?" in prompt for _, prompt in channel.asked[session])
        if (ran or ordered) != proposed or (r.kind in NO_ACTION and (ran or ordered)):
            wrong.append((r.said, "acted" if ran or ordered else "did not act", replies))
    return wrong


def test_the_tables_are_large_and_cover_what_must_never_act() -> None:
    assert len(ACME) + len(PARCELS) >= 120
    assert len([r for r in ACME + PARCELS if r.kind in NO_ACTION]) >= 40


async def test_acme_customers_reach_the_right_agent_and_action() -> None:
    wrong = await _wrong_rows(acme_team(), ACME, OPERATOR, {"execute_order", "execute_refund"})
    assert wrong == []


async def test_parcel_customers_reach_the_right_agent_and_action() -> None:
    wrong = await _wrong_rows(parcel_team(), PARCELS, CLERK_REPLY, {"book_shipment", "refund_postage"})
    assert wrong == []
    assert all(r.kind not in NO_ACTION for r in PARCELS if r.reply.startswith("I can book"))


async def test_the_canned_line_speaks_the_teams_words_never_tool_names() -> None:
    channel = ScriptedChannel.for_sessions({"s1": ["what time do you open"]})
    await run_sessions(acme_team(), channel, model=OfflineModel())
    examples = "“where is my order?”; “I'd like to buy rocket skates”; “let me talk to a person”"
    assert texts(channel) == [(TRIAGE, f"{UNSURE} You can say, for example: {examples}.")]
