"""The ``recall`` tool a model is offered with its context (``get_context(..., tools="recall")``).

:func:`execute_recall_tool_call` turns a model's recall call into a recall request and its answer
into the text of the tool message. What a model can get wrong (its arguments, an unknown or purged
call id) is said in that text, for the model to read and do better; what the caller got wrong
(another tool, a missing session) raises. The texts are those of ``@compactor/client``
(``packages/client/src/recall-tool.ts``); the tool's definition is the API's (``RECALL_TOOL`` of
``@compactor/contract``), served in the context's ``tools``.
"""

import json
import re
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Tuple, TypedDict, Union

from .errors import CompactorApiError
from .recall_ledger import RECALL_LEDGER_KINDS, RecallLedger, ledger_text
from .types import OpenAIContext, OpenAIToolMessage

#: The recall tool's name, as the model calls it.
RECALL_TOOL_NAME = "recall"

#: The longest call id and query the recall route takes, and the most passages a search returns.
MAX_CALL_ID_LENGTH = 200
MAX_RECALL_QUERY_LENGTH = 500
MAX_RECALL_LIMIT = 20
#: A media id as an older image's marker names it: 16 to 64 lowercase hex digits.
MEDIA_ID_PATTERN = re.compile(r"[0-9a-f]{16,64}")

#: What the model is told when its arguments cannot be a recall request.
INVALID_RECALL_ARGUMENTS = (
    'recall was not run: its arguments must be {"callId": "<the call id a cleared output names>"}, '
    '{"query": "<words to look for>", "limit": <1 to 20, optional>} '
    'or {"kind": "files" | "commands" | "facts"}.'
)


class RecallOutput(TypedDict):
    """``GET …/recall?callId=``: one tool call's original output, as stored."""

    kind: Literal["call"]
    callId: str
    tool: str
    status: Literal["completed", "error"]
    output: Optional[str]
    error: Optional[str]
    messageId: str
    seq: int
    tokens: int
    prunedAt: Optional[str]


class RecallHit(TypedDict):
    """One passage of a recall search."""

    messageId: str
    seq: int
    role: str
    #: ``summarized``: a message before the boundary; ``cleared``: a pruned tool output.
    source: Literal["summarized", "cleared"]
    callId: Optional[str]
    tool: Optional[str]
    excerpt: str
    rank: float


class RecallSearch(TypedDict):
    """``GET …/recall?q=``: passages of the history out of the model's view, best first."""

    kind: Literal["search"]
    query: str
    results: List[RecallHit]


class RecallMediaPart(TypedDict):
    type: Literal["file"]
    mime: str
    filename: Optional[str]
    #: The original bytes as a ``data:`` URL.
    url: str


class RecallMedia(TypedDict):
    """``GET …/recall?mediaId=``: the image or document a media marker replaced, whole."""

    kind: Literal["media"]
    mediaId: str
    messageId: str
    seq: int
    callId: Optional[str]
    part: RecallMediaPart
    bytes: int
    width: Optional[int]
    height: Optional[int]
    tokens: int


RecallResponse = Union[RecallOutput, RecallSearch, RecallLedger, RecallMedia]


class _ToolFunction(TypedDict):
    name: str
    description: str
    parameters: Dict[str, Any]


class ChatTool(TypedDict):
    """A Chat Completions ``tools`` entry, as the OpenAI SDK spells it."""

    type: Literal["function"]
    function: _ToolFunction


class OpenAIContextWithTools(OpenAIContext):
    """``format="openai"`` with ``tools="recall"``: the messages and the tools to send with them."""

    tools: List[ChatTool]


def _is_text(value: Any, longest: int) -> bool:
    # Lengths in code points, as the API's schema (zod) counts them: an emoji is one.
    return isinstance(value, str) and 1 <= len(value) <= longest


def recall_query_of(arguments: Any) -> Optional[Dict[str, Any]]:
    """The recall request a call's arguments make (``{"callId"}``, ``{"q", "limit"?}``,
    ``{"kind"}`` or ``{"mediaId"}``), or None: exactly one of ``callId``, ``query``, ``kind`` and
    ``mediaId``, ``limit`` with ``query`` only, as ``RecallToolArguments`` of ``@compactor/contract``
    has it.

    ``arguments``: the JSON text a model wrote, or that text already parsed.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            return None
    allowed = {"callId", "query", "kind", "limit", "mediaId"}
    if not isinstance(arguments, Mapping) or not set(arguments) <= allowed:
        return None
    if "mediaId" in arguments:
        media_id = arguments["mediaId"]
        only = len(arguments) == 1
        valid = isinstance(media_id, str) and MEDIA_ID_PATTERN.fullmatch(media_id) is not None
        return {"mediaId": media_id} if only and valid else None
    if "callId" in arguments:
        call_id = arguments["callId"]
        only = len(arguments) == 1
        return {"callId": call_id} if only and _is_text(call_id, MAX_CALL_ID_LENGTH) else None
    if "kind" in arguments:
        kind = arguments["kind"]
        only = len(arguments) == 1
        return {"kind": kind} if only and isinstance(kind, str) and kind in RECALL_LEDGER_KINDS else None
    query = arguments.get("query")
    if not _is_text(query, MAX_RECALL_QUERY_LENGTH):
        return None
    if "limit" not in arguments:
        return {"q": query}
    limit = arguments["limit"]
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)  # JSON has one number type: 3.0 is 3.
    # bool is an int in Python, never a count in JSON.
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        return None
    return {"q": query, "limit": limit}


def recall_answer_text(answer: Mapping[str, Any]) -> str:
    """The tool message's text for an answer of the recall route."""
    if answer["kind"] == "ledger":
        return ledger_text(answer)
    # A tool message holds text: the image itself is for a caller that sends it as a user part.
    if answer["kind"] == "media":
        return "media {}: {}, {} bytes, message {}".format(
            answer["mediaId"][:16], answer["part"]["mime"], answer["bytes"], answer["messageId"]
        )
    if answer["kind"] == "call":
        call = 'Tool call "{}" ({})'.format(answer["callId"], answer["tool"])
        if answer["status"] == "error":
            error = answer.get("error")
            return "{} failed:\n{}".format(call, "(no error text)" if error is None else error)
        output = answer.get("output")
        if output is None:
            return "{} completed with no output.".format(call)
        return "{} output:\n{}".format(call, output)
    results = answer["results"]
    if not results:
        return 'Nothing found for "{}" in the history outside your context.'.format(answer["query"])
    head = 'Found {} passage(s) for "{}" in the history outside your context, best first:'.format(
        len(results), answer["query"]
    )
    passages = [_hit_label(hit, i) + "\n" + hit["excerpt"] for i, hit in enumerate(results)]
    return "\n\n".join([head] + passages)


def _hit_label(hit: Mapping[str, Any], index: int) -> str:
    what = "cleared output" if hit["source"] == "cleared" else "summarized"
    call = "" if hit["callId"] is None else ', {} call "{}"'.format(hit["tool"] or "tool", hit["callId"])
    return "[{}] seq {}, {}, {}{}:".format(index + 1, hit["seq"], hit["role"], what, call)


def recall_refusal_text(query: Mapping[str, Any], error: Exception) -> Optional[str]:
    """The text for a recall the API refused because of the model's arguments, or None (raise it)."""
    if not isinstance(error, CompactorApiError):
        return None
    if error.status == 400 and error.code == "validation_error":
        return INVALID_RECALL_ARGUMENTS
    media_id = query.get("mediaId")
    if media_id is not None:
        return media_not_found_text(media_id) if error.status == 404 else None
    # A search or a ledger section cannot miss but for the session itself, which the caller named:
    # not the model's doing.
    call_id = query.get("callId")
    if call_id is None:
        return None
    if error.status == 404:
        return (
            'No tool call "{}" is stored in this session: use the call id a cleared output\'s marker names.'
        ).format(call_id)
    if error.status == 410:
        return 'The output of tool call "{}" is no longer stored: retention has removed it.'.format(call_id)
    return None


def media_not_found_text(media_id: str) -> str:
    """What the model is told when no stored part holds the image its media id names."""
    return (
        'No image with media id "{}" is stored in this session: '
        "use the media id an older image's marker names."
    ).format(media_id)


def _call_parts(tool_call: Any) -> Tuple[str, str, Any]:
    """``(id, name, arguments)`` of a Chat Completions tool call dict, or of an object with
    ``id``, ``name`` and ``arguments`` (the agent loop's ``ToolCall``)."""
    if isinstance(tool_call, Mapping):
        function = tool_call["function"]
        return tool_call["id"], function["name"], function.get("arguments", "")
    return tool_call.id, tool_call.name, tool_call.arguments


def execute_recall_tool_call(
    recall: Callable[[Dict[str, Any]], RecallResponse], tool_call: Any
) -> OpenAIToolMessage:
    """Runs one recall tool call with ``recall`` (a request → its answer) and returns its tool message."""
    call_id, name, arguments = _call_parts(tool_call)
    if name != RECALL_TOOL_NAME:
        raise ValueError('execute_recall_tool_call: "{}" is not the recall tool'.format(name))

    def message(content: str) -> OpenAIToolMessage:
        return {"role": "tool", "tool_call_id": call_id, "content": content}

    query = recall_query_of(arguments)
    if query is None:
        return message(INVALID_RECALL_ARGUMENTS)
    try:
        return message(recall_answer_text(recall(query)))
    except CompactorApiError as error:
        refusal = recall_refusal_text(query, error)
        if refusal is None:
            raise
        return message(refusal)
