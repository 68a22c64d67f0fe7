"""An agent loop on Compactor (the README's example; tests/test_agent_loop.py runs it against the
real API and the LLM stub): append the user's turn, read the context the model should see with
the recall tool, call the model, append its answer and its tool results (recall calls executed by
the client); when the provider says the prompt is too long, report it, wait for the emergency
compaction, and try again. 429/503 from Compactor are retried by the client itself.
"""

import json
import urllib.error
import urllib.request
from typing import Any, Callable, List, Mapping, NamedTuple, Optional

from compactor_client import RECALL_TOOL_NAME, ChatTool, CompactorClient, usage_from_openai
from compactor_client.types import MessageIn, OpenAIMessage, PartIn, ToolPartIn, UsageIn


class ProviderError(Exception):
    """A provider's refusal, with what Compactor's overflow classifier reads."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__("the model answered {}: {}".format(status, body[:200]))
        self.status = status
        self.body = body


class ToolCall(NamedTuple):
    id: str
    name: str
    arguments: Any


class Reply(NamedTuple):
    """One completion: its text, the tools it calls, and the usage Compactor calibrates with, in
    Compactor's terms (``input`` leaves out the cached tokens: ``usage_from_openai`` maps it)."""

    text: str
    tool_calls: List[ToolCall]
    usage: UsageIn


#: Chat Completions messages and the tools Compactor offers in, a :class:`Reply` out; raises
#: :class:`ProviderError` on a refusal.
Complete = Callable[[List[OpenAIMessage], List[ChatTool]], Reply]


def parse_completion(answer: Mapping[str, Any]) -> Reply:
    """A Chat Completions answer (JSON, or the ``openai`` package's ``.model_dump()``) as a Reply."""
    message = answer["choices"][0]["message"]
    calls = []
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads(call["function"]["arguments"] or "{}")
        except ValueError:
            arguments = call["function"]["arguments"]
        calls.append(ToolCall(call["id"], call["function"]["name"], arguments))
    return Reply(
        text=message.get("content") or "",
        tool_calls=calls,
        # prompt_tokens counts the cached prefix too: the helper moves it to cacheRead, counted once.
        usage=usage_from_openai(answer.get("usage")),
    )


def chat_completions(
    base_url: str, api_key: str, model: str, headers: Optional[Mapping[str, str]] = None
) -> Complete:
    """A :data:`Complete` over any OpenAI-compatible ``/chat/completions`` endpoint, with urllib."""

    def complete(messages: List[OpenAIMessage], tools: List[ChatTool]) -> Reply:
        body = {"model": model, "messages": messages, "tools": tools, "max_tokens": 256}
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Authorization": "Bearer " + api_key,
                **(headers or {}),
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return parse_completion(json.load(response))
        except urllib.error.HTTPError as error:
            raise ProviderError(error.code, error.read().decode("utf-8", "replace")) from None

    return complete


def run_tool(tools: Mapping[str, Callable[..., str]], call: ToolCall) -> ToolPartIn:
    """Runs one tool call; its result (or its failure) becomes a tool part of the assistant's turn."""
    part: ToolPartIn = {"type": "tool", "callId": call.id, "tool": call.name, "status": "pending"}
    part["input"] = call.arguments
    try:
        if call.name not in tools:
            raise LookupError("no tool named " + call.name)
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        part["output"] = str(tools[call.name](**arguments))
        part["status"] = "completed"
    except Exception as error:  # The model reads the failure and carries on.
        part["error"] = "{}: {}".format(type(error).__name__, error)
        part["status"] = "error"
    return part


def recall(client: CompactorClient, session_id: str, call: ToolCall) -> ToolPartIn:
    """Runs a recall call with the client: what it finds (or why it found nothing) is its output."""
    message = client.execute_recall_tool_call(session_id, call)
    part: ToolPartIn = {"type": "tool", "callId": call.id, "tool": call.name, "status": "completed"}
    part["input"] = call.arguments
    part["output"] = message["content"]
    return part


class AgentRun(NamedTuple):
    """What a run did, for the caller (and the test) to see."""

    replies: List[str]
    #: Compactions an overflow report started (or found running).
    overflow_compactions: List[str]


def run_agent(
    client: CompactorClient,
    complete: Complete,
    session_id: str,
    user_turns: List[str],
    tools: Optional[Mapping[str, Callable[..., str]]] = None,
    max_overflow_retries: int = 2,
    max_steps: int = 8,
) -> AgentRun:
    """Runs one session through the user's turns.

    Each turn: append it, read the context in OpenAI's format with the recall tool, complete,
    append the answer with its tool results (and complete again while the model calls tools, at
    most ``max_steps`` times); on a provider error, report it and, when it was an overflow, wait
    for the compaction and retry (at most ``max_overflow_retries`` times per turn). ``recall``
    calls (the model asking for what compaction cleared or summarized) are run by the client.
    """
    run = AgentRun(replies=[], overflow_compactions=[])
    for text in user_turns:
        client.append_messages(session_id, [{"role": "user", "parts": [{"type": "text", "text": text}]}])
        overflows = 0
        for _ in range(max_steps):
            context = client.get_context(session_id, format="openai", tools="recall")
            try:
                reply = complete(context["messages"], context["tools"])
            except ProviderError as error:
                if overflows >= max_overflow_retries:
                    raise
                # Compactor's classifier knows every provider's wording; anything else is not ours to fix.
                verdict = client.report_overflow(session_id, {"error": error.body, "status": error.status})
                if not verdict["overflow"] or not verdict["compaction"]:
                    raise
                overflows += 1
                run.overflow_compactions.append(verdict["compaction"]["id"])
                client.wait_for_compaction(verdict["compaction"]["id"])
                continue
            parts: List[PartIn] = [{"type": "text", "text": reply.text}] if reply.text else []
            for call in reply.tool_calls:
                is_recall = call.name == RECALL_TOOL_NAME
                parts.append(recall(client, session_id, call) if is_recall else run_tool(tools or {}, call))
            answer: MessageIn = {
                "role": "assistant",
                "parts": parts,
                "finish": "tool-calls" if reply.tool_calls else "stop",
                "usage": reply.usage,
            }
            client.append_messages(session_id, [answer])
            if not reply.tool_calls:
                run.replies.append(reply.text)
                break
        else:
            raise RuntimeError("the model kept calling tools for {} steps".format(max_steps))
    return run
