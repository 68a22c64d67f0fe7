"""The Compactor API, one method per route (the Python side of ``@compactor/client``)."""

import ssl
import time
from typing import Any, Callable, Dict, Literal, Mapping, Optional, Sequence, Union, cast, overload

from .errors import CompactorApiError
from .message_ids import with_message_ids
from .events import EventStream
from .recall_ledger import RecallLedger, RecallLedgerKind
from .recall_tool import (
    OpenAIContextWithTools,
    RecallOutput,
    RecallResponse,
    RecallSearch,
    execute_recall_tool_call,
)
from .retry import RetryPolicy
from .transport import Settings, exchange, parse_base_url, segment, send
from .types import (
    SETTLED_COMPACTION_STATUSES,
    AppendMessagesResponse,
    CompactionPage,
    CompactionRequestResult,
    CompactionWithSteps,
    Context,
    ContextFormat,
    CreateSessionRequest,
    Health,
    HistoryPage,
    MessageIn,
    NativeContext,
    OpenAIContext,
    OpenAIToolMessage,
    OverflowRequest,
    OverflowResponse,
    PatchMessageRequest,
    PatchMessageResponse,
    PatchSessionRequest,
    PruneResponse,
    Readiness,
    RevertCompactionResult,
    Session,
    Strategy,
)


def _session_path(session_id: str) -> str:
    return "/v1/sessions/" + segment(session_id)


class CompactorClient:
    """The Compactor HTTP API. Every method is one request (plus the retries below).

    A non-2xx answer raises :class:`CompactorApiError` (``status``, ``code``, ``message``,
    ``details``, ``request``); no answer at all raises :class:`CompactorTransportError`.

    Retries, as ``@compactor/client`` does them: the API's own ``429 too_many_requests`` and
    ``503 service_unavailable`` (it wrote nothing) are sent again; reads (``GET``) and compaction
    requests with an ``idempotency_key`` also after a gateway's 502/503/504. Each retry waits for
    ``Retry-After`` when the answer has one (one above ``max_retry_after`` is not waited for: the
    error is raised), else for an exponential backoff with jitter (``base_delay`` doubling, capped
    at ``max_delay``; half of each delay random), at most ``max_retries`` times (0 turns it off).
    Network errors are not retried: the request may have been written.

    :param base_url: the API's origin, and path prefix if it is mounted under one.
    :param api_key: the bearer key; None for an API that runs open.
    :param timeout: seconds to wait for the connection and for each read of an answer.
    :param headers: sent with every request (tracing headers, say).
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        timeout: Optional[float] = 30.0,
        max_retries: int = 4,
        *,
        base_delay: float = 0.25,
        max_delay: float = 10.0,
        max_retry_after: float = 60.0,
        headers: Optional[Mapping[str, str]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        random: Optional[Callable[[], float]] = None,
    ) -> None:
        scheme, host, port, prefix = parse_base_url(base_url)
        policy = RetryPolicy(max_retries, base_delay, max_delay, max_retry_after)
        if random is not None:
            policy = policy._replace(random=random)
        self.base_url = base_url
        self._settings = Settings(
            scheme=scheme,
            host=host,
            port=port,
            prefix=prefix,
            api_key=api_key,
            headers=dict(headers or {}),
            timeout=timeout,
            retry=policy,
            ssl_context=ssl_context,
        )

    def __repr__(self) -> str:
        return "CompactorClient({!r})".format(self.base_url)

    # --- Sessions ------------------------------------------------------------------------------

    def create_session(self, body: CreateSessionRequest) -> Session:
        """``POST /v1/sessions``: creates a session (or returns it: the same id and body again)."""
        return cast(Session, self._json("POST", "/v1/sessions", body=body))

    def get_session(self, session_id: str) -> Session:
        """``GET /v1/sessions/:id``: the session with its live status (tokens, overflow, compactions)."""
        return cast(Session, self._json("GET", _session_path(session_id)))

    def patch_session(self, session_id: str, body: PatchSessionRequest) -> Session:
        """``PATCH /v1/sessions/:id``: merges model and metadata, deep-merges policy overrides."""
        return cast(Session, self._json("PATCH", _session_path(session_id), body=body))

    update_session = patch_session

    def delete_session(self, session_id: str) -> None:
        """``DELETE /v1/sessions/:id``: removes the session and everything in it."""
        send(self._settings, "DELETE", _session_path(session_id))

    # --- Messages and context ------------------------------------------------------------------

    def append_messages(
        self, session_id: str, messages: Union[Sequence[MessageIn], Mapping[str, Any]]
    ) -> AppendMessagesResponse:
        """``POST /v1/sessions/:id/messages``: appends a batch (1–1,000), idempotent by message ``id``.

        ``messages`` is a list of messages or the whole body (``{"messages": [...]}``). A message
        without an ``id`` gets one here (``msg_<uuid>``), so a retry after an answer that never
        arrived, or a 503 whose write committed anyway, stores nothing twice.
        """
        body = dict(messages) if isinstance(messages, Mapping) else {"messages": list(messages)}
        body = with_message_ids(body)
        answer = send(
            self._settings,
            "POST",
            _session_path(session_id) + "/messages",
            body=body,
            has_body=True,
            idempotent=True,
        )
        return cast(AppendMessagesResponse, answer.json("POST " + _session_path(session_id) + "/messages"))

    def list_messages(
        self, session_id: str, after_seq: Optional[int] = None, limit: Optional[int] = None
    ) -> HistoryPage:
        """``GET /v1/sessions/:id/messages``: a page of the raw history (``nextAfterSeq`` pages on)."""
        query = {"afterSeq": after_seq, "limit": limit}
        return cast(HistoryPage, self._json("GET", _session_path(session_id) + "/messages", query=query))

    def patch_message(
        self, session_id: str, message_id: str, body: PatchMessageRequest
    ) -> PatchMessageResponse:
        """``PATCH /v1/sessions/:id/messages/:messageId``: finishes a streamed turn.

        ``body``: its ``finish``, ``usage``, ``error``, and tool results (tool parts upserted by ``callId``).
        """
        path = "{}/messages/{}".format(_session_path(session_id), segment(message_id))
        return cast(PatchMessageResponse, self._json("PATCH", path, body=body))

    @overload
    def get_context(
        self,
        session_id: str,
        format: Literal["native"] = "native",
        *,
        fit: Optional[Literal["auto", "none"]] = None,
        wait_ms: Optional[int] = None,
    ) -> NativeContext: ...

    @overload
    def get_context(
        self,
        session_id: str,
        format: Literal["openai"],
        *,
        fit: Optional[Literal["auto", "none"]] = None,
        wait_ms: Optional[int] = None,
    ) -> OpenAIContext: ...

    @overload
    def get_context(
        self,
        session_id: str,
        format: Literal["openai"],
        tools: Literal["recall"],
        *,
        fit: Optional[Literal["auto", "none"]] = None,
        wait_ms: Optional[int] = None,
    ) -> OpenAIContextWithTools: ...

    def get_context(
        self,
        session_id: str,
        format: ContextFormat = "native",
        tools: Optional[Literal["recall"]] = None,
        *,
        fit: Optional[Literal["auto", "none"]] = None,
        wait_ms: Optional[int] = None,
    ) -> Context:
        """``GET /v1/sessions/:id/context``: what the model sees next.

        ``format="native"``: stored messages (pruned outputs replaced); ``"openai"``: a Chat
        Completions ``messages`` array, ready to send. ``tools="recall"`` (openai only) adds
        ``tools``: the recall tool's definition to send along (see :meth:`execute_recall_tool_call`).
        A view over ``usable`` comes fitted (the answer's ``fit`` says how); ``fit="none"`` serves
        it as stored; ``wait_ms`` (at most 60,000) waits that long at most for a running
        compaction first.
        """
        query = {"format": format, "tools": tools, "fit": fit, "wait": wait_ms}
        return cast(Context, self._json("GET", _session_path(session_id) + "/context", query=query))

    @overload
    def recall(self, session_id: str, call_id: str) -> RecallOutput: ...

    @overload
    def recall(self, session_id: str, *, q: str, limit: Optional[int] = None) -> RecallSearch: ...

    @overload
    def recall(
        self,
        session_id: str,
        *,
        kind: RecallLedgerKind,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> RecallLedger: ...

    def recall(
        self,
        session_id: str,
        call_id: Optional[str] = None,
        q: Optional[str] = None,
        limit: Optional[int] = None,
        kind: Optional[RecallLedgerKind] = None,
        cursor: Optional[str] = None,
    ) -> RecallResponse:
        """``GET /v1/sessions/:id/recall``: what compaction took out of the model's view.

        ``call_id=``: one cleared tool output as stored (a :class:`RecallOutput`; 404 unknown, 410
        once retention purged it). ``q=`` (and ``limit=``, 1–20, default 5): passages of the
        summarized or cleared history that match, best first (a :class:`RecallSearch`).
        ``kind="files" | "commands" | "facts"`` (and ``limit=``, 1–500, default 100, and
        ``cursor=``, a page's ``nextCursor``): a section of what the session touched, whole, newest
        first, a page at a time (a :class:`RecallLedger`).
        """
        query = {"callId": call_id, "q": q, "kind": kind, "limit": limit, "cursor": cursor}
        return cast(RecallResponse, self._json("GET", _session_path(session_id) + "/recall", query=query))

    def execute_recall_tool_call(self, session_id: str, tool_call: Any) -> OpenAIToolMessage:
        """Executes a model's ``recall`` tool call and returns the tool message to append.

        ``tool_call``: a Chat Completions tool call (``{"id", "function": {"name", "arguments"}}``)
        or an object with ``id``, ``name`` and ``arguments``. The answer is
        ``{"role": "tool", "tool_call_id", "content"}``; arguments the model got wrong, an unknown
        call id and a purged output are said in ``content`` for the model to read. A call of another
        tool raises ``ValueError``; any other API error raises as usual.
        """

        def recall(query: Dict[str, Any]) -> RecallResponse:
            # The request's keys are the route's query parameters already.
            path = _session_path(session_id) + "/recall"
            return cast(RecallResponse, self._json("GET", path, query=query))

        return execute_recall_tool_call(recall, tool_call)

    # --- Compactions ---------------------------------------------------------------------------

    def request_compaction(
        self,
        session_id: str,
        keep_recent_tokens: Optional[int] = None,
        instructions: Optional[str] = None,
        strategy: Optional[Strategy] = None,
        idempotency_key: Optional[str] = None,
    ) -> CompactionRequestResult:
        """``POST /v1/sessions/:id/compactions``: compacts now.

        ``created`` is True for a new compaction (202), False for the active one or the one the
        ``idempotency_key`` already created (200). With a key, the request is safe to send again
        (and is retried after a gateway's 502/503/504): the same key and body return the same
        compaction, another body is a 409.
        """
        body: Dict[str, Any] = {}
        if keep_recent_tokens is not None:
            body["keepRecentTokens"] = keep_recent_tokens
        if instructions is not None:
            body["instructions"] = instructions
        if strategy is not None:
            body["strategy"] = strategy
        headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        path = _session_path(session_id) + "/compactions"
        answer = send(self._settings, "POST", path, body=body, has_body=True, headers=headers)
        compaction = answer.json("POST " + path)
        return {"compaction": compaction, "created": answer.status == 202}

    def list_compactions(
        self, session_id: str, limit: Optional[int] = None, before: Optional[str] = None
    ) -> CompactionPage:
        """``GET /v1/sessions/:id/compactions``: the session's compactions, newest first.

        Pass a page's ``nextBefore`` as ``before`` for the next one.
        """
        query = {"limit": limit, "before": before}
        return cast(
            CompactionPage, self._json("GET", _session_path(session_id) + "/compactions", query=query)
        )

    def get_compaction(self, compaction_id: str) -> CompactionWithSteps:
        """``GET /v1/compactions/:id``: one compaction with its step attempts."""
        return cast(CompactionWithSteps, self._json("GET", "/v1/compactions/" + segment(compaction_id)))

    def wait_for_compaction(
        self, compaction_id: str, timeout: float = 120.0, poll_interval: float = 0.25
    ) -> CompactionWithSteps:
        """Polls :meth:`get_compaction` until the compaction is completed, failed, skipped or reverted.

        A client-side helper (no route of its own). Raises :class:`TimeoutError` after ``timeout``
        seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            compaction = self.get_compaction(compaction_id)
            if compaction["status"] in SETTLED_COMPACTION_STATUSES:
                return compaction
            if time.monotonic() + poll_interval > deadline:
                raise TimeoutError(
                    "compaction {} still {} after {} s".format(compaction_id, compaction["status"], timeout)
                )
            time.sleep(poll_interval)

    def revert_compaction(self, compaction_id: str) -> RevertCompactionResult:
        """``POST /v1/compactions/:id/revert``: undoes the session's latest completed compaction.

        The view before it is served again. A 409 ``conflict`` says why not in
        ``details["reason"]``: ``not_latest``, ``not_completed``, ``compaction_active``,
        ``history_purged``.
        """
        return cast(
            RevertCompactionResult,
            self._json("POST", "/v1/compactions/" + segment(compaction_id) + "/revert"),
        )

    def prune(self, session_id: str) -> PruneResponse:
        """``POST /v1/sessions/:id/prune``: starts a prune-only job."""
        return cast(PruneResponse, self._json("POST", _session_path(session_id) + "/prune"))

    def report_overflow(self, session_id: str, report: OverflowRequest) -> OverflowResponse:
        """``POST /v1/sessions/:id/overflow``: reports what the provider said.

        ``report`` holds its error (``error``, ``status``, ``body``) and/or the turn's ``usage``;
        an overflow starts an emergency compaction, returned in ``compaction``.
        """
        return cast(
            OverflowResponse, self._json("POST", _session_path(session_id) + "/overflow", body=report)
        )

    # --- Events --------------------------------------------------------------------------------

    def events(
        self,
        session_id: str,
        reconnect: bool = True,
        on_open: Optional[Callable[[], None]] = None,
        last_event_id: Optional[str] = None,
        read_timeout: Optional[float] = 60.0,
    ) -> EventStream:
        """``GET /v1/sessions/:id/events``: the session's events, ``for event in client.events(id)``.

        Each event is ``{type, sessionId, compactionId, at, data}``; ``session.deleted`` is the
        last one, after which the iteration ends. When the connection drops (a deploy, a proxy's
        idle timeout, nothing read for ``read_timeout`` seconds while the API sends a keepalive
        every 15) the stream reconnects (``reconnect=False`` raises instead), sending the last
        event id seen as ``Last-Event-ID``: the API first replays what was published meanwhile,
        then goes on live, none twice. After a stream that was subscribed it reconnects at once
        after the first backoff step; failed connections spend the retry budget, then raise.
        ``on_open`` runs each time the API confirms the subscription. ``last_event_id`` resumes
        after an event seen in an earlier stream (``stream.last_event_id``).
        """
        return EventStream(
            self._settings,
            session_id,
            reconnect=reconnect,
            on_open=on_open,
            last_event_id=last_event_id,
            read_timeout=read_timeout,
        )

    # --- Operations ----------------------------------------------------------------------------

    def health(self) -> Health:
        """``GET /healthz``: the process is up."""
        return cast(Health, self._json("GET", "/healthz"))

    def ready(self) -> Readiness:
        """``GET /readyz``: ``ok`` when Postgres answers (Redis is reported, not required); its 503
        is returned, not raised or retried."""
        answer = exchange(self._settings, "GET", "/readyz")
        if answer.status not in (200, 503):
            raise CompactorApiError.from_body(answer.status, "", answer.body, "GET /readyz")
        return cast(Readiness, answer.json("GET /readyz"))

    def _json(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
    ) -> Any:
        has_body = body is not None
        answer = send(self._settings, method, path, query=query, body=body, has_body=has_body)
        return answer.json("{} {}".format(method, path))


#: The short name: ``Client(base_url, api_key)``.
Client = CompactorClient
