"""A client of the Compactor HTTP API (docs/API.md), standard library only.

from compactor_client import Client, CompactorApiError

client = Client("http://127.0.0.1:3000", api_key="...")
client.create_session({"id": "support-42", "model": {"id": "gpt-4o"}})
"""

from ._version import __version__
from .client import Client, CompactorClient
from .errors import CompactorApiError, CompactorError, CompactorResponseError, CompactorTransportError
from .events import EventStream
from .recall_tool import (
    INVALID_RECALL_ARGUMENTS,
    RECALL_TOOL_NAME,
    ChatTool,
    OpenAIContextWithTools,
    RecallHit,
    RecallOutput,
    RecallResponse,
    RecallSearch,
    execute_recall_tool_call,
    recall_answer_text,
    recall_query_of,
)
from .retry import RETRYABLE_STATUSES, RetryPolicy, may_retry, parse_retry_after, retry_delay
from .sse import SseBlock, read_sse
from .types import (
    SESSION_DELETED_EVENT,
    SESSION_EVENT_TYPES,
    AppendMessagesResponse,
    Compaction,
    CompactionPage,
    CompactionRequestResult,
    RevertCompactionResult,
    CompactionWithSteps,
    Context,
    CreateSessionRequest,
    HistoryPage,
    Message,
    MessageIn,
    NativeContext,
    OpenAIContext,
    OpenAIMessage,
    OverflowRequest,
    OverflowResponse,
    PatchMessageRequest,
    PatchMessageResponse,
    PatchSessionRequest,
    Session,
    SessionEvent,
    SessionStatus,
)
from .message_ids import new_message_id, with_message_ids
from .usage import usage_from_anthropic, usage_from_openai

__all__ = [
    "__version__",
    "Client",
    "CompactorClient",
    "CompactorError",
    "CompactorApiError",
    "CompactorResponseError",
    "CompactorTransportError",
    "EventStream",
    "INVALID_RECALL_ARGUMENTS",
    "RECALL_TOOL_NAME",
    "ChatTool",
    "OpenAIContextWithTools",
    "RecallHit",
    "RecallOutput",
    "RecallResponse",
    "RecallSearch",
    "execute_recall_tool_call",
    "recall_answer_text",
    "recall_query_of",
    "RETRYABLE_STATUSES",
    "RetryPolicy",
    "may_retry",
    "parse_retry_after",
    "retry_delay",
    "SseBlock",
    "read_sse",
    "SESSION_DELETED_EVENT",
    "SESSION_EVENT_TYPES",
    "AppendMessagesResponse",
    "Compaction",
    "CompactionPage",
    "CompactionRequestResult",
    "RevertCompactionResult",
    "CompactionWithSteps",
    "Context",
    "CreateSessionRequest",
    "HistoryPage",
    "Message",
    "MessageIn",
    "NativeContext",
    "OpenAIContext",
    "OpenAIMessage",
    "OverflowRequest",
    "OverflowResponse",
    "PatchMessageRequest",
    "PatchMessageResponse",
    "PatchSessionRequest",
    "Session",
    "SessionEvent",
    "SessionStatus",
    "usage_from_anthropic",
    "usage_from_openai",
    "new_message_id",
    "with_message_ids",
]
