"""Request and response shapes of the Compactor HTTP API (docs/API.md), as ``TypedDict``s.

They mirror the zod schemas of ``@compactor/contract``: the ``*Request`` / ``*In`` types are what a
client sends (keys a client may leave out are in a ``total=False`` class), the others what the API
answers. Written with ``typing`` names only (``Optional``, ``List``, ``Dict``) so the module runs
on Python 3.9.
"""

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

Role = Literal["user", "assistant", "system"]
Finish = Literal["stop", "tool-calls", "length", "content-filter", "error", "other"]
ToolStatus = Literal["pending", "running", "completed", "error"]
Strategy = Literal["summarize", "truncate", "topic"]
CompactionStepName = Literal["prune", "summarize", "finalize"]
CompactionStatus = Literal["pending", "running", "completed", "failed", "skipped", "reverted"]
CompactionReason = Literal["auto", "manual", "overflow"]
ContextFormat = Literal["native", "openai"]
SessionEventType = Literal[
    "compaction.requested",
    "compaction.started",
    "compaction.step",
    "compaction.completed",
    "compaction.failed",
    "compaction.skipped",
    "compaction.reverted",
    "session.compacted",
    "prune.completed",
    "prune.skipped",
    "session.deleted",
    "task.started",
    "task.finished",
]

#: Every event type a session's stream carries.
SESSION_EVENT_TYPES = (
    "compaction.requested",
    "compaction.started",
    "compaction.step",
    "compaction.completed",
    "compaction.failed",
    "compaction.skipped",
    "compaction.reverted",
    "session.compacted",
    "prune.completed",
    "prune.skipped",
    "session.deleted",
    "task.started",
    "task.finished",
)
#: The last event of a deleted session's stream: nothing follows it.
SESSION_DELETED_EVENT = "session.deleted"
#: The statuses a compaction ends in (``reverted``: a completed one a client undid since).
SETTLED_COMPACTION_STATUSES = ("completed", "failed", "skipped", "reverted")

# --- What a client sends ---------------------------------------------------------------------


class _UsageRequired(TypedDict):
    input: int
    output: int


class UsageIn(_UsageRequired, total=False):
    """Provider usage of an assistant turn; ``reasoning``, ``cacheRead``, ``cacheWrite`` default to 0."""

    reasoning: int
    cacheRead: int
    cacheWrite: int


class Usage(TypedDict):
    input: int
    output: int
    reasoning: int
    cacheRead: int
    cacheWrite: int


class TextPartIn(TypedDict):
    type: Literal["text"]
    text: str


class ReasoningPartIn(TypedDict):
    type: Literal["reasoning"]
    text: str


class _ToolPartRequired(TypedDict):
    type: Literal["tool"]
    callId: str
    tool: str
    status: ToolStatus


class ToolPartIn(_ToolPartRequired, total=False):
    """A tool call with its result: ``output`` when completed, ``error`` when it failed."""

    input: Any
    output: Optional[str]
    error: Optional[str]


class _FilePartRequired(TypedDict):
    type: Literal["file"]
    mime: str
    url: str


class FilePartIn(_FilePartRequired, total=False):
    filename: Optional[str]


PartIn = Union[TextPartIn, ReasoningPartIn, ToolPartIn, FilePartIn]


class _MessageErrorRequired(TypedDict):
    message: str


class MessageError(_MessageErrorRequired, total=False):
    code: str


class _MessageRequired(TypedDict):
    role: Role
    parts: List[PartIn]


class MessageIn(_MessageRequired, total=False):
    """A message to append: ``id`` makes re-posting it a no-op.

    Tool and reasoning parts and ``usage`` belong to assistant messages.
    """

    id: str
    finish: Optional[Finish]
    error: Union[str, MessageError, None]
    usage: Optional[UsageIn]
    createdAt: str
    metadata: Dict[str, Any]


class PatchMessageRequest(TypedDict, total=False):
    """Finishes a streamed turn: tool parts are upserted by ``callId``, other parts appended."""

    finish: Optional[Finish]
    error: Union[str, MessageError, None]
    usage: Optional[UsageIn]
    parts: List[PartIn]


class _ModelRequired(TypedDict):
    id: str


class ModelPricing(TypedDict):
    """USD per million tokens."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float


class CacheBehaviour(TypedDict):
    kind: Literal["explicit", "automatic", "none"]
    ttlSeconds: int


class ModelIn(_ModelRequired, total=False):
    """``contextWindow`` 0 = unlimited; omitted limits, prices and cache behaviour come from the
    known-model table."""

    provider: str
    contextWindow: int
    maxOutputTokens: int
    inputLimit: Optional[int]
    pricing: ModelPricing
    cache: CacheBehaviour


class ModelPatch(TypedDict, total=False):
    """``pricing``/``cache`` ``None``: back to the known-model table's."""

    id: str
    provider: str
    contextWindow: int
    maxOutputTokens: int
    inputLimit: Optional[int]
    pricing: Optional[ModelPricing]
    cache: Optional[CacheBehaviour]


class _CreateSessionRequired(TypedDict):
    model: ModelIn


class CreateSessionRequest(_CreateSessionRequired, total=False):
    """``POST /v1/sessions``; ``policy`` is a preset plus overrides (see docs/API.md)."""

    id: str
    policy: Dict[str, Any]
    metadata: Dict[str, Any]


class PatchSessionRequest(TypedDict, total=False):
    """``PATCH /v1/sessions/:id``: at least one key; a ``None`` metadata value removes that key."""

    model: ModelPatch
    policy: Dict[str, Any]
    metadata: Dict[str, Any]


class OverflowRequest(TypedDict, total=False):
    """What the provider said: its error (message, status, raw body) and/or the turn's usage."""

    error: Optional[str]
    status: Optional[int]
    body: Optional[str]
    usage: Optional[UsageIn]
    finish: Optional[Finish]


# --- What the API answers --------------------------------------------------------------------


class CompactionError(TypedDict):
    code: str
    message: str


class CompactionUsage(TypedDict):
    input: int
    output: int


class CacheEffect(TypedDict):
    """What a compaction or prune cost in the provider's prompt cache (USD; null without prices)."""

    invalidatedTokens: int
    rewriteCostUsd: Optional[float]
    savingPerTurnUsd: Optional[float]
    breakEvenTurns: Optional[int]


class Compaction(TypedDict):
    id: str
    sessionId: str
    reason: CompactionReason
    strategy: Strategy
    status: CompactionStatus
    step: Optional[CompactionStepName]
    attempts: int
    keepRecentTokens: Optional[int]
    force: bool
    tokensBefore: Optional[int]
    tokensAfter: Optional[int]
    prunedParts: int
    prunedTokens: int
    messagesBefore: Optional[int]
    messagesAfter: Optional[int]
    boundarySeq: Optional[int]
    summaryMessageId: Optional[str]
    summaryMessageIds: List[str]
    model: Optional[str]
    usage: Optional[CompactionUsage]
    costUsd: Optional[float]
    error: Optional[CompactionError]
    fallback: Optional[CompactionError]
    requestedAt: str
    startedAt: Optional[str]
    finishedAt: Optional[str]
    revertedAt: Optional[str]
    cache: Optional[CacheEffect]


class CompactionStep(TypedDict):
    step: CompactionStepName
    attempt: int
    status: Literal["running", "completed", "failed"]
    startedAt: str
    finishedAt: Optional[str]
    detail: Dict[str, Any]


class CompactionWithSteps(Compaction):
    steps: List[CompactionStep]


class CompactionRequestResult(TypedDict):
    """``created``: a new compaction (202); False: the active one or an idempotency key's (200)."""

    compaction: Compaction
    created: bool


class CompactionPage(TypedDict):
    compactions: List[Compaction]
    nextBefore: Optional[str]


class TriggeredCompaction(TypedDict):
    id: str
    status: CompactionStatus
    reason: CompactionReason


class PruneResponse(TypedDict):
    jobId: str


class SkippedTurnPrune(TypedDict):
    """A finished turn's prune that waited for the prompt cache; the next compaction prunes first."""

    jobId: None
    skipped: Literal["cache_warm"]
    cache: CacheEffect


class _SessionStatusRequired(TypedDict):
    tokens: int
    usable: Optional[int]
    percent: Optional[float]
    triggerTokens: Optional[int]
    overflow: bool
    pinnedTokens: int
    cannotFit: bool
    contextWindow: int
    estimate: Literal["hybrid", "stored"]
    contextMessages: int
    messagesSinceCompaction: int
    activeCompaction: Optional[Compaction]
    lastCompaction: Optional[Compaction]


class SessionStatus(_SessionStatusRequired, total=False):
    """The session's live status; the keys below are absent from older servers' answers."""

    #: What the latest usage report adds to ``tokens`` over the exact stored count (at most a
    #: quarter of ``usable``; 0 without a report: a report never subtracts).
    calibrationTokens: int


class RevertCompactionResult(TypedDict):
    """``POST /v1/compactions/:id/revert``: the compaction as reverted, and the session's status."""

    compaction: Compaction
    status: SessionStatus


class SessionModel(TypedDict):
    id: str
    provider: str
    contextWindow: int
    maxOutputTokens: int
    inputLimit: Optional[int]
    pricing: Optional[ModelPricing]
    cache: CacheBehaviour


class Session(TypedDict):
    id: str
    model: SessionModel
    policy: Dict[str, Any]
    effectivePolicy: Dict[str, Any]
    metadata: Dict[str, Any]
    createdAt: str
    updatedAt: str
    status: SessionStatus


class Message(TypedDict):
    """A stored message; its parts carry token counts (``compaction`` parts mark a summary)."""

    id: str
    seq: int
    role: Role
    parts: List[Dict[str, Any]]
    finish: Optional[Finish]
    error: Optional[MessageError]
    usage: Optional[Usage]
    createdAt: str
    metadata: Dict[str, Any]
    summary: bool
    compactionId: Optional[str]


class AppendedMessage(TypedDict):
    id: str
    seq: int
    created: bool


class AppendMessagesResponse(TypedDict):
    messages: List[AppendedMessage]
    status: SessionStatus
    compaction: Optional[TriggeredCompaction]
    prune: Union[PruneResponse, SkippedTurnPrune, None]


class PatchMessageResponse(Message):
    """The message as stored now, with the session's status after the update."""

    status: SessionStatus
    compaction: Optional[TriggeredCompaction]
    prune: Union[PruneResponse, SkippedTurnPrune, None]


class HistoryPage(TypedDict):
    messages: List[Message]
    nextAfterSeq: Optional[int]


#: How the context answered fits ``usable``: ``view`` (the stored view as it is), ``prepared`` (a
#: prepared summary in place of what it covers), ``interim`` (fitted at read time without the LLM),
#: ``over`` (it does not fit).
ContextFit = Literal["view", "prepared", "interim", "over"]


class _ContextFit(TypedDict, total=False):
    """What ``GET …/context`` says about fitting the window; absent from older servers' answers."""

    fit: ContextFit
    #: The tokens the model's prompt may take: the session status's ``usable`` (None: unlimited).
    usable: Optional[int]
    #: The compaction running or requested when this context was read, as ``status.activeCompaction``.
    activeCompaction: Optional[Compaction]


class NativeContext(_ContextFit):
    """``format="native"``: the stored messages the model sees next (pruned outputs replaced)."""

    messages: List[Message]
    compactionId: Optional[str]
    boundarySeq: Optional[int]
    #: The stored token count of these messages.
    tokens: int


class OpenAITextContent(TypedDict):
    type: Literal["text"]
    text: str


class OpenAIImageUrl(TypedDict):
    url: str


class OpenAIImageContent(TypedDict):
    type: Literal["image_url"]
    image_url: OpenAIImageUrl


OpenAIContentPart = Union[OpenAITextContent, OpenAIImageContent]


class OpenAIFunction(TypedDict):
    name: str
    #: JSON text of an object.
    arguments: str


class OpenAIToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: OpenAIFunction


class OpenAISystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class OpenAIUserMessage(TypedDict):
    role: Literal["user"]
    content: Union[str, List[OpenAIContentPart]]


class _OpenAIAssistantRequired(TypedDict):
    role: Literal["assistant"]
    #: None for a step that only calls tools.
    content: Optional[str]


class OpenAIAssistantMessage(_OpenAIAssistantRequired, total=False):
    tool_calls: List[OpenAIToolCall]


class OpenAIToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


#: One Chat Completions message of a ``format="openai"`` context, as the OpenAI SDK spells it.
OpenAIMessage = Union[OpenAISystemMessage, OpenAIUserMessage, OpenAIAssistantMessage, OpenAIToolMessage]


class OpenAIContext(_ContextFit):
    """``format="openai"``: the same context as a Chat Completions ``messages`` array, ready to send."""

    messages: List[OpenAIMessage]
    compactionId: Optional[str]
    boundarySeq: Optional[int]
    tokens: int


#: What ``GET /v1/sessions/:id/context`` answers, in either format.
Context = Union[NativeContext, OpenAIContext]


class OverflowResponse(TypedDict):
    overflow: bool
    kind: Optional[Literal["error", "usage"]]
    matched: Optional[str]
    compaction: Optional[Compaction]


# --- Session events: each type's ``data``, then the event as a union narrowed on ``type`` --------


class CompactionRequestedData(TypedDict):
    reason: CompactionReason
    strategy: Strategy


class CompactionStartedData(TypedDict):
    """``attempt`` counts claims: 1 for the first try."""

    attempt: int
    reason: CompactionReason


class CompactionStepData(TypedDict):
    step: CompactionStepName
    attempt: int


class EventFallback(TypedDict):
    code: str


class CompactionCompletedData(TypedDict):
    """The view's sizes before and after, the boundary (first kept seq), and the truncate fallback's code."""

    tokensBefore: Optional[int]
    tokensAfter: Optional[int]
    messagesBefore: Optional[int]
    messagesAfter: Optional[int]
    boundarySeq: Optional[int]
    fallback: Optional[EventFallback]


class EventErrorCode(TypedDict):
    code: str


class CompactionFailedData(TypedDict):
    status: Literal["failed"]
    error: EventErrorCode


class CompactionSkippedData(TypedDict):
    """``reason``: why nothing was compacted (a label, never message text)."""

    reason: str


class CompactionRevertedData(TypedDict):
    """The compaction that defines the view again (None: none does) and the restored view's size."""

    restoredCompactionId: Optional[str]
    tokens: int
    contextMessages: int


class ContinuationMetadata(TypedDict):
    type: Literal["compaction_continue"]


class ContinueWith(TypedDict):
    """The user message to append after an automatic compaction so the agent goes on."""

    role: Literal["user"]
    text: str
    metadata: ContinuationMetadata


class FollowUp(TypedDict):
    compactionId: str


class SessionCompactedData(CompactionCompletedData, total=False):
    """The sizes, plus ``continueWith`` when the policy has a continue message, and ``followUp``
    when the session is already being compacted again (wait for it before the next model call)."""

    continueWith: ContinueWith
    followUp: FollowUp


class PruneCompletedData(TypedDict):
    jobId: str
    parts: int
    tokens: int


class PruneSkippedData(TypedDict):
    reason: Literal["cache_warm"]
    cache: CacheEffect


class SessionDeletedData(TypedDict):
    """Empty: the session is gone and the stream ends."""


class TaskEventData(TypedDict):
    """A sub-agent or background task call was recorded, or its result arrived (labels only)."""

    callId: str
    tool: str
    status: ToolStatus


class CompactionRequestedEvent(TypedDict):
    type: Literal["compaction.requested"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionRequestedData


class CompactionStartedEvent(TypedDict):
    type: Literal["compaction.started"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionStartedData


class CompactionStepEvent(TypedDict):
    type: Literal["compaction.step"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionStepData


class CompactionCompletedEvent(TypedDict):
    type: Literal["compaction.completed"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionCompletedData


class CompactionFailedEvent(TypedDict):
    type: Literal["compaction.failed"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionFailedData


class CompactionSkippedEvent(TypedDict):
    type: Literal["compaction.skipped"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionSkippedData


class CompactionRevertedEvent(TypedDict):
    type: Literal["compaction.reverted"]
    sessionId: str
    compactionId: str
    at: str
    data: CompactionRevertedData


class SessionCompactedEvent(TypedDict):
    type: Literal["session.compacted"]
    sessionId: str
    compactionId: str
    at: str
    data: SessionCompactedData


class PruneCompletedEvent(TypedDict):
    type: Literal["prune.completed"]
    sessionId: str
    compactionId: None
    at: str
    data: PruneCompletedData


class PruneSkippedEvent(TypedDict):
    type: Literal["prune.skipped"]
    sessionId: str
    compactionId: None
    at: str
    data: PruneSkippedData


class SessionDeletedEvent(TypedDict):
    type: Literal["session.deleted"]
    sessionId: str
    compactionId: None
    at: str
    data: SessionDeletedData


class TaskStartedEvent(TypedDict):
    type: Literal["task.started"]
    sessionId: str
    compactionId: None
    at: str
    data: TaskEventData


class TaskFinishedEvent(TypedDict):
    type: Literal["task.finished"]
    sessionId: str
    compactionId: None
    at: str
    data: TaskEventData


#: One event of ``GET /v1/sessions/:id/events``: compare ``event["type"]`` to read its ``data``.
SessionEvent = Union[
    CompactionRequestedEvent,
    CompactionStartedEvent,
    CompactionStepEvent,
    CompactionCompletedEvent,
    CompactionFailedEvent,
    CompactionSkippedEvent,
    CompactionRevertedEvent,
    SessionCompactedEvent,
    PruneCompletedEvent,
    PruneSkippedEvent,
    SessionDeletedEvent,
    TaskStartedEvent,
    TaskFinishedEvent,
]


class Health(TypedDict):
    status: Literal["ok"]


class Readiness(TypedDict):
    status: Literal["ok", "unavailable"]
    checks: Dict[str, str]
