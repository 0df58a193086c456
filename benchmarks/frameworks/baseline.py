"""The handoffs design pattern as autogen-core's documentation notebook writes it, with nothing of ours.

The agents, messages and delegate tools follow the notebook; only ``input()`` is replaced by the
scripted person (one message, then "exit"), and the end of a session resolves a future.
"""

from __future__ import annotations

import asyncio
import json

from autogen_core import (
    FunctionCall,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
    TypeSubscription,
    message_handler,
)
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool, Tool
from pydantic import BaseModel

from ..scenario import (
    HANDOFF_TOOL,
    SALES,
    SALES_PROMPT,
    SALES_TEXT,
    TRIAGE,
    TRIAGE_PROMPT,
    USER_TEXT,
    CallCounter,
    Outcome,
)
from .autogen_fake import ScriptedClient

USER = "User"


class UserLogin(BaseModel):
    pass


class UserTask(BaseModel):
    context: list[LLMMessage]


class AgentResponse(BaseModel):
    reply_to_topic_type: str
    context: list[LLMMessage]


class AIAgent(RoutedAgent):
    def __init__(
        self,
        description: str,
        system_message: SystemMessage,
        model_client: ChatCompletionClient,
        tools: list[Tool],
        delegate_tools: list[Tool],
        agent_topic_type: str,
        user_topic_type: str,
    ) -> None:
        super().__init__(description)
        self._system_message = system_message
        self._model_client = model_client
        self._tools = {tool.name: tool for tool in tools}
        self._tool_schema = [tool.schema for tool in tools]
        self._delegate_tools = {tool.name: tool for tool in delegate_tools}
        self._delegate_tool_schema = [tool.schema for tool in delegate_tools]
        self._agent_topic_type = agent_topic_type
        self._user_topic_type = user_topic_type

    @message_handler
    async def handle_task(self, message: UserTask, ctx: MessageContext) -> None:
        llm_result = await self._model_client.create(
            messages=[self._system_message, *message.context],
            tools=self._tool_schema + self._delegate_tool_schema,
            cancellation_token=ctx.cancellation_token,
        )
        while isinstance(llm_result.content, list) and all(
            isinstance(m, FunctionCall) for m in llm_result.content
        ):
            tool_call_results: list[FunctionExecutionResult] = []
            delegate_targets: list[tuple[str, UserTask]] = []
            for call in llm_result.content:
                arguments = json.loads(call.arguments)
                if call.name in self._tools:
                    result = await self._tools[call.name].run_json(arguments, ctx.cancellation_token)
                    result_as_str = self._tools[call.name].return_value_as_string(result)
                    tool_call_results.append(
                        FunctionExecutionResult(
                            call_id=call.id, content=result_as_str, is_error=False, name=call.name
                        )
                    )
                elif call.name in self._delegate_tools:
                    result = await self._delegate_tools[call.name].run_json(arguments, ctx.cancellation_token)
                    topic_type = self._delegate_tools[call.name].return_value_as_string(result)
                    delegate_messages = [
                        *message.context,
                        AssistantMessage(content=[call], source=self.id.type),
                        FunctionExecutionResultMessage(
                            content=[
                                FunctionExecutionResult(
                                    call_id=call.id,
                                    content=f"Transferred to {topic_type}. Adopt persona immediately.",
                                    is_error=False,
                                    name=call.name,
                                )
                            ]
                        ),
                    ]
                    delegate_targets.append((topic_type, UserTask(context=delegate_messages)))
                else:
                    raise ValueError(f"Unknown tool: {call.name}")
            if len(delegate_targets) > 0:
                for topic_type, task in delegate_targets:
                    await self.publish_message(task, topic_id=TopicId(topic_type, source=self.id.key))
            if len(tool_call_results) > 0:
                message.context.extend(
                    [
                        AssistantMessage(content=llm_result.content, source=self.id.type),
                        FunctionExecutionResultMessage(content=tool_call_results),
                    ]
                )
                llm_result = await self._model_client.create(
                    messages=[self._system_message, *message.context],
                    tools=self._tool_schema + self._delegate_tool_schema,
                    cancellation_token=ctx.cancellation_token,
                )
            else:
                return
        assert isinstance(llm_result.content, str)
        message.context.append(AssistantMessage(content=llm_result.content, source=self.id.type))
        await self.publish_message(
            AgentResponse(context=message.context, reply_to_topic_type=self._agent_topic_type),
            topic_id=TopicId(self._user_topic_type, source=self.id.key),
        )


class People:
    """The scripted people: each says one thing, then "exit"; a finished session resolves its future."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[Outcome]] = {}

    def finish(self, session: str, context: list[LLMMessage]) -> None:
        handoffs = sum(
            1
            for m in context
            if isinstance(m, FunctionExecutionResultMessage)
            for r in m.content
            if r.name == HANDOFF_TOOL
        )
        last = context[-1]
        text = last.content if isinstance(last, AssistantMessage) and isinstance(last.content, str) else ""
        agent = last.source if isinstance(last, AssistantMessage) else ""
        self.waiting.pop(session).set_result(Outcome(handoffs, agent, text))


class UserAgent(RoutedAgent):
    def __init__(self, description: str, user_topic_type: str, agent_topic_type: str, people: People) -> None:
        super().__init__(description)
        self._user_topic_type = user_topic_type
        self._agent_topic_type = agent_topic_type
        self._people = people

    @message_handler
    async def handle_user_login(self, message: UserLogin, ctx: MessageContext) -> None:
        user_input = USER_TEXT  # the notebook: input("User login, session ID: ...")
        await self.publish_message(
            UserTask(context=[UserMessage(content=user_input, source="User")]),
            topic_id=TopicId(self._agent_topic_type, source=self.id.key),
        )

    @message_handler
    async def handle_task_result(self, message: AgentResponse, ctx: MessageContext) -> None:
        user_input = "exit"  # the notebook: input("User (type 'exit' to close the session): ")
        if user_input.strip() == "exit":
            self._people.finish(self.id.key, message.context)
            return
        message.context.append(UserMessage(content=user_input, source="User"))
        await self.publish_message(
            UserTask(context=message.context),
            topic_id=TopicId(message.reply_to_topic_type, source=self.id.key),
        )


def transfer_to_sales() -> str:
    return SALES


class Baseline:
    def __init__(self, runtime: SingleThreadedAgentRuntime, people: People, calls: CallCounter) -> None:
        self._runtime = runtime
        self._people = people
        self.calls = calls

    async def session(self, index: int) -> Outcome:
        session = f"s{index}"
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._people.waiting[session] = done
        await self._runtime.publish_message(UserLogin(), topic_id=TopicId(USER, source=session))
        return await done

    async def close(self) -> None:
        await self._runtime.stop()


async def create(latency: float) -> Baseline:
    calls = CallCounter()

    def count_triage() -> None:
        calls.triage += 1

    def count_sales() -> None:
        calls.sales += 1

    triage_model = ScriptedClient(tool=HANDOFF_TOOL, latency=latency, on_call=count_triage)
    sales_model = ScriptedClient(text=SALES_TEXT, latency=latency, on_call=count_sales)
    delegate = FunctionTool(transfer_to_sales, description="Use for anything sales or buying related.")
    runtime = SingleThreadedAgentRuntime()
    people = People()
    await AIAgent.register(
        runtime,
        TRIAGE,
        lambda: AIAgent(
            "A triage agent.",
            SystemMessage(content=TRIAGE_PROMPT),
            triage_model,
            [],
            [delegate],
            TRIAGE,
            USER,
        ),
    )
    await AIAgent.register(
        runtime,
        SALES,
        lambda: AIAgent(
            "A sales agent.", SystemMessage(content=SALES_PROMPT), sales_model, [], [], SALES, USER
        ),
    )
    await UserAgent.register(runtime, USER, lambda: UserAgent("A user.", USER, TRIAGE, people))
    for topic in (TRIAGE, SALES, USER):
        await runtime.add_subscription(TypeSubscription(topic_type=topic, agent_type=topic))
    runtime.start()
    return Baseline(runtime, people, calls)
