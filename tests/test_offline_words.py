"""The offline model keeps the person's words as written: in tool arguments, in quotes, in answers."""

from __future__ import annotations

from autogen_core import CancellationToken
from autogen_core.tools import BaseTool
from pydantic import BaseModel, Field

from handoffs_runtime import AgentSpec, OfflineModel, TeamSpec, irreversible
from handoffs_runtime.channels.memory import ScriptedChannel

from .support import run_sessions, texts

ordered: list[str] = []


def order_book(title: str) -> str:
    """Buy a book."""
    ordered.append(title)
    return f"ordered {title}"


class _PlainTitle(BaseModel):
    title: str = Field(pattern=r"^[\w\s-]+$", max_length=40, description="Letters, digits and spaces only.")


class OrderPlainTitle(BaseTool[_PlainTitle, BaseModel]):
    """A tool whose parameter cannot hold emoji: its schema's pattern refuses them."""

    def __init__(self) -> None:
        super().__init__(_PlainTitle, BaseModel, "order_book", "Buy a book.")

    async def run(self, args: _PlainTitle, cancellation_token: CancellationToken) -> BaseModel:
        ordered.append(args.title)
        return args


def bookshop(tool: object = order_book) -> TeamSpec:
    shop = AgentSpec("Shop", description="A bookshop.", tools=[irreversible(tool)])  # type: ignore[arg-type]
    return TeamSpec(name="books", entry="Shop", agents=[shop])


def propose(item: str) -> str:
    return f"I can order book with title “{item}”. Shall I go ahead? (yes/no)"


async def test_accents_emoji_other_scripts_and_articles_reach_the_tool_as_written() -> None:
    ordered.clear()
    said = {
        "s1": ["I want to buy the hobbit", "yes"],
        "s2": ["I'd like to buy a book", "the hobbit", "yes"],
        "s3": ["buy naïve café poems 📚", "yes"],
        "s4": ["I'd like to buy 三体 please", "yes"],
        "s5": ["order a book", "Война и мир.", "yes"],
    }
    channel = ScriptedChannel.for_sessions(said)
    await run_sessions(bookshop(), channel, model=OfflineModel(), sessions=said)
    assert texts(channel, "s1")[0] == ("Shop", propose("the hobbit"))
    assert texts(channel, "s2")[:2] == [
        ("Shop", "To order book I need the title. Which title?"),
        ("Shop", propose("the hobbit")),
    ]
    assert texts(channel, "s3")[0] == ("Shop", propose("naïve café poems 📚"))
    assert texts(channel, "s4")[0] == ("Shop", propose("三体"))
    assert texts(channel, "s5")[1] == ("Shop", propose("Война и мир"))
    assert sorted(ordered) == sorted(
        ["the hobbit", "the hobbit", "naïve café poems 📚", "三体", "Война и мир"]
    )


async def test_emoji_are_dropped_only_where_the_parameter_cannot_hold_them() -> None:
    ordered.clear()
    channel = ScriptedChannel.for_sessions({"s1": ["buy naïve café poems 📚", "yes"]})
    await run_sessions(bookshop(OrderPlainTitle()), channel, model=OfflineModel())
    assert texts(channel)[0] == ("Shop", propose("naïve café poems 📚"))  # what the person said
    assert ordered == ["naïve café poems"]  # what the tool can hold: the accents stay


async def test_a_quote_is_the_whole_message_cut_with_an_ellipsis_only_when_long() -> None:
    short = "my skates broke after one day, the left wheel fell off. Très déçu 😞"
    long = "my anvil is broken " + "and it is really very heavy " * 8
    channel = ScriptedChannel.for_sessions({"s1": [short], "s2": [long]})
    team = TeamSpec(
        name="t", entry="Repairs", agents=[AgentSpec("Repairs", description="Repairs broken things.")]
    )
    await run_sessions(team, channel, model=OfflineModel(), sessions=["s1", "s2"])
    assert f"You asked: “{short}”." in texts(channel, "s1")[0][1]
    quoted = texts(channel, "s2")[0][1].split("“")[1].split("”")[0]
    assert quoted.endswith("…") and len(quoted) <= 120 and long.startswith(quoted[:-1])
