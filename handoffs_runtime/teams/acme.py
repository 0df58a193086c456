"""The ACME Inc. customer-service team of the AutoGen handoffs notebook, declared as data.

Triage routes the customer to sales or to issues and repairs, or escalates to a human operator on
request; the specialists send the customer back to triage for anything outside their purview.
"""

from __future__ import annotations

from dataclasses import replace

from autogen_core.tools import FunctionTool

from handoffs_runtime.handoffs.handoff import handoff
from handoffs_runtime.handoffs.policy import TeamPolicy
from handoffs_runtime.team.spec import AgentSpec, TeamSpec, human_agent
from handoffs_runtime.tools.context import ask_person, current_tool_context
from handoffs_runtime.tools.effects import irreversible

TRIAGE_AGENT = "TriageAgent"
SALES_AGENT = "SalesAgent"
ISSUES_AND_REPAIRS_AGENT = "IssuesAndRepairsAgent"
HUMAN_AGENT = "HumanAgent"
"""The team's agent names: each is an agent type and the topic type it subscribes to."""

ITEM_ID = "item_132612938"


ORDER_BOOK: dict[str, str] = {}
"""ACME's orders placed in this process, by the idempotency key each order carried."""


async def execute_order(product: str, price: int) -> str:
    """Place an order after the customer confirms it (asked through the session's channel)."""
    answer = await ask_person(f"Order summary: {product} for ${price}. Confirm order? y/n")
    if answer is not None and answer.strip().lower() in ("y", "yes"):
        ctx = current_tool_context()
        if ctx is not None and ctx.idempotency_key is not None:
            ORDER_BOOK.setdefault(ctx.idempotency_key, f"{product} for ${price}")
        return "Success"
    return "User cancelled order."


def order_placed(idempotency_key: str, arguments: dict[str, object]) -> bool | None:
    """ACME's reconcile: look the order up by its key. Found: it was placed; not found: this process
    cannot tell (the order book of a process that died went with it), so the outcome stays unknown."""
    return True if idempotency_key in ORDER_BOOK else None


def look_up_item(search_query: str) -> str:
    """Find the item id for a description or keywords."""
    return ITEM_ID


def execute_refund(item_id: str, reason: str = "not provided") -> str:
    """Refund an item."""
    return "success"


execute_order_tool = irreversible(
    FunctionTool(execute_order, description="Price should be in USD."), reconcile=order_placed
)
look_up_item_tool = FunctionTool(
    look_up_item, description="Use to find item ID.\nSearch query can be a description or keywords."
)
execute_refund_tool = irreversible(FunctionTool(execute_refund, description=""))

transfer_to_sales_agent = handoff(
    SALES_AGENT,
    tool_name_override="transfer_to_sales_agent",
    tool_description_override="Use for anything sales or buying related.",
)
transfer_to_issues_and_repairs = handoff(
    ISSUES_AND_REPAIRS_AGENT,
    tool_name_override="transfer_to_issues_and_repairs",
    tool_description_override="Use for issues, repairs, refunds, or help.",
)
transfer_back_to_triage = handoff(
    TRIAGE_AGENT,
    tool_name_override="transfer_back_to_triage",
    tool_description_override=(
        "Call this if the user brings up a topic outside of your purview,\nincluding escalating to human."
    ),
)
escalate_to_human = handoff(
    HUMAN_AGENT,
    tool_name_override="escalate_to_human",
    tool_description_override="Only call this if explicitly asked to.",
)

TRIAGE_PROMPT = (
    "You are a customer service bot for ACME Inc. Introduce yourself. Always be very brief. Gather "
    "information to direct the customer to the right department. But make your questions subtle and natural."
)
SALES_PROMPT = (
    "You are a sales agent for ACME Inc. Always answer in a sentence or less. Follow the following routine "
    "with the user:\n"
    "1. Ask them about any problems in their life related to catching roadrunners.\n"
    "2. Casually mention one of ACME's crazy made-up products can help.\n"
    " - Don't mention price.\n"
    "3. Once the user is bought in, drop a ridiculous price.\n"
    "4. Only after everything, and if the user says yes, tell them a crazy caveat and execute their order.\n"
)
ISSUES_PROMPT = (
    "You are a customer support agent for ACME Inc. Always answer in a sentence or less. Follow the "
    "following routine with the user:\n"
    "1. First, ask probing questions and understand the user's problem deeper.\n"
    " - unless the user has already provided a reason.\n"
    "2. Propose a fix (make one up).\n"
    "3. ONLY if not satisfied, offer a refund.\n"
    "4. If accepted, search for the ID and then execute refund."
)


SALES_EXAMPLES = (
    "I'd like to buy rocket skates",
    "I want to order an anvil",
    "how much is an anvil?",
    "what's the price of rocket skates?",
    "what do you sell?",
    "do you have giant magnets in stock?",
    "I'll take a box of bird seed",
    "can I purchase a jet-propelled unicycle",
    "what would help me catch a roadrunner?",
    "is there a discount on earthquake pills?",
    "get me a portable hole",
)
"""What customers say to ACME's sales: the offline model routes by these (``AgentSpec.examples``)."""
ISSUES_EXAMPLES = (
    "where is my order?",
    "my parcel hasn't arrived",
    "when will my rocket skates be delivered?",
    "I want a refund for my shoes",
    "can I get my money back?",
    "I'd like to return my anvil",
    "my anvil is broken",
    "the skates I bought are faulty",
    "I was charged twice for the same thing",
    "there's a double charge on my card",
    "I want to cancel my order",
    "my delivery is late",
    "the package is missing",
    "the left wheel fell off",
    "it doesn't work",
    "has my refund been processed?",
    "can you track my order",
    "I have a problem with my order",
)
"""What customers say to ACME's issues and repairs (``AgentSpec.examples``)."""
HUMAN_EXAMPLES = (
    "let me talk to a person",
    "I want to speak to a human",
    "get me a manager",
    "can I talk to a real agent",
    "operator",
)
"""How customers ask for ACME's human operator (``AgentSpec.examples``)."""


def acme_team(*, policy: TeamPolicy | None = None) -> TeamSpec:
    """The ACME team: triage, sales, issues and repairs, and a human operator."""
    return TeamSpec(
        name="acme",
        title="ACME Inc. customer service",
        greeting=(
            "Hello! I'm the ACME assistant. I can help you buy something, or sort out a problem with "
            "something you bought."
        ),
        suggestions=("I want to buy an anvil", "My rocket skates broke", "Where is my order?"),
        entry=TRIAGE_AGENT,
        policy=policy or TeamPolicy(),
        agents=[
            AgentSpec(
                TRIAGE_AGENT,
                display_name="ACME assistant",
                system_message=TRIAGE_PROMPT,
                description="A triage agent.",
                handoffs=[transfer_to_issues_and_repairs, transfer_to_sales_agent, escalate_to_human],
            ),
            AgentSpec(
                SALES_AGENT,
                display_name="ACME sales",
                system_message=SALES_PROMPT,
                description="A sales agent.",
                tools=[execute_order_tool],
                handoffs=[transfer_back_to_triage],
                examples=SALES_EXAMPLES,
            ),
            AgentSpec(
                ISSUES_AND_REPAIRS_AGENT,
                display_name="ACME repairs",
                system_message=ISSUES_PROMPT,
                description="An issues and repairs agent.",
                tools=[execute_refund_tool, look_up_item_tool],
                handoffs=[transfer_back_to_triage],
                examples=ISSUES_EXAMPLES,
            ),
            replace(
                human_agent(HUMAN_AGENT, "A human agent.", examples=HUMAN_EXAMPLES),
                display_name="ACME operator",
            ),
        ],
    )
