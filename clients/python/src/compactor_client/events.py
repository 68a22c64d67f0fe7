"""``GET /v1/sessions/:id/events`` as an iterator that reconnects with ``Last-Event-ID``."""

import http.client
import json
import socket
import threading
from typing import Any, Callable, Generator, Optional

from .errors import CompactorApiError, CompactorTransportError
from .retry import may_retry, parse_retry_after, retry_delay
from .sse import SseCallbacks, read_sse
from .transport import Settings, base_headers, describe, open_connection, request_target, segment
from .types import SESSION_DELETED_EVENT, SESSION_EVENT_TYPES, SessionEvent


class EventStream:
    """A session's events: ``for event in stream``, reconnecting as :meth:`Client.events` says.

    Breaking out of the loop leaves the connection open until the stream is closed or collected:
    use it as a context manager (``with client.events(id) as stream:``) or call :meth:`close`,
    which may be called from another thread to stop a loop that waits for the next event.
    """

    def __init__(
        self,
        settings: Settings,
        session_id: str,
        reconnect: bool = True,
        on_open: Optional[Callable[[], None]] = None,
        last_event_id: Optional[str] = None,
        read_timeout: Optional[float] = 60.0,
    ) -> None:
        self._settings = settings
        self._path = "/v1/sessions/{}/events".format(segment(session_id))
        self._reconnect = reconnect
        self._on_open = on_open
        self._read_timeout = read_timeout
        #: The id of the last event seen: sent as ``Last-Event-ID`` on a reconnect, and usable to
        #: resume in a later stream (``client.events(id, last_event_id=stream.last_event_id)``).
        self.last_event_id = last_event_id
        self._server_retry: Optional[float] = None
        self._failures = 0
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._connection: Optional[http.client.HTTPConnection] = None
        self._events = self._run()

    def __iter__(self) -> "EventStream":
        return self

    def __next__(self) -> SessionEvent:
        return next(self._events)

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # A stream dropped without close() must not leave its socket open.
        if hasattr(self, "_connection"):
            self._closed.set()
            self._disconnect()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self) -> None:
        """Ends the iteration (the loop then finishes without an error) and drops the connection."""
        self._closed.set()
        self._disconnect()
        try:
            self._events.close()
        except ValueError:
            pass  # Running in another thread: it sees the dropped connection and returns.

    def _disconnect(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is None:
            return
        # shutdown() wakes a read blocked in another thread; close() alone would not.
        if connection.sock is not None:
            try:
                connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        connection.close()

    def _run(self) -> Generator[SessionEvent, None, None]:
        request = "GET " + self._path
        try:
            while not self._closed.is_set():
                try:
                    response = self._connect()
                except (OSError, http.client.HTTPException) as error:
                    if self._closed.is_set():
                        return
                    if not self._reconnect:
                        raise CompactorTransportError(describe(error), request, error) from error
                    self._pause(False)
                    continue
                if not 200 <= response.status < 300:
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                    refusal = CompactorApiError.from_body(
                        response.status, response.reason, _read_all(response), request, retry_after
                    )
                    self._disconnect()
                    # A deploy: the proxy answers 502/503/504 until the API is back.
                    if not self._reconnect or not may_retry("GET", refusal.status, refusal.code, False):
                        raise refusal
                    delay = retry_delay(self._settings.retry, self._failures, retry_after)
                    if delay is None:
                        raise refusal
                    self._failures += 1
                    self._closed.wait(delay)
                    continue
                subscribed = [False]

                def on_comment(text: str) -> None:
                    if text != "connected":
                        return
                    subscribed[0] = True
                    self._failures = 0
                    if self._on_open:
                        self._on_open()

                def on_retry(ms: int) -> None:
                    self._server_retry = ms / 1000

                def on_id(event_id: str) -> None:
                    self.last_event_id = event_id

                callbacks = SseCallbacks(on_comment=on_comment, on_retry=on_retry, on_id=on_id)
                try:
                    for block in read_sse(lambda: response.read1(65536), callbacks):
                        if self._closed.is_set():
                            return
                        event = parse_event(block.data)
                        if event is None:
                            continue
                        yield event
                        # The session is gone: the API ended the stream, and a reconnect would be a 404.
                        if event["type"] == SESSION_DELETED_EVENT:
                            return
                except (OSError, http.client.HTTPException, ValueError) as error:
                    # ValueError: read on a connection close() dropped from another thread.
                    if self._closed.is_set():
                        return
                    if not self._reconnect:
                        raise CompactorTransportError(describe(error), request, error) from error
                finally:
                    self._disconnect()
                if not self._reconnect or self._closed.is_set():
                    return
                self._pause(subscribed[0])
        finally:
            self._disconnect()

    def _connect(self) -> http.client.HTTPResponse:
        headers = base_headers(self._settings)
        headers["Accept"] = "text/event-stream"
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        connection = open_connection(self._settings, self._read_timeout)
        with self._lock:
            self._connection = connection
        if self._closed.is_set():
            raise ConnectionAbortedError("the stream was closed")
        connection.request("GET", request_target(self._settings, self._path), headers=headers)
        return connection.getresponse()

    def _pause(self, after_subscribed_stream: bool) -> None:
        """Waits before reconnecting: the server's ``retry:``, else the backoff.

        A stream that was subscribed and then ended (a deploy, a proxy's timeout) reconnects after
        the first backoff without spending the retry budget; failed connections spend it and give
        up past the limit.
        """
        if after_subscribed_stream:
            backoff: Optional[float] = self._settings.retry.base_delay
        else:
            backoff = retry_delay(self._settings.retry, self._failures, None)
        if backoff is None:
            raise CompactorTransportError("the event stream kept failing; gave up", "GET " + self._path)
        if not after_subscribed_stream:
            self._failures += 1
        self._closed.wait(self._server_retry if self._server_retry is not None else backoff)


def _read_all(response: http.client.HTTPResponse) -> bytes:
    try:
        return response.read()
    except (OSError, http.client.HTTPException):
        return b""


def parse_event(data: str) -> Optional[SessionEvent]:
    """An event block's JSON, or None when it is not one of the API's events (skipped, not fatal)."""
    try:
        event = json.loads(data)
    except ValueError:
        return None
    if not (
        isinstance(event, dict)
        and event.get("type") in SESSION_EVENT_TYPES
        and isinstance(event.get("sessionId"), str)
        and (event.get("compactionId") is None or isinstance(event.get("compactionId"), str))
        and isinstance(event.get("at"), str)
        and isinstance(event.get("data"), dict)
    ):
        return None
    return event  # type: ignore[return-value]
