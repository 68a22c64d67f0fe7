"""One HTTP call over ``http.client``: URL, headers, JSON body, the retry loop, error mapping."""

import http.client
import json
import socket
import ssl
import time
from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from ._version import __version__
from .errors import CompactorApiError, CompactorResponseError, CompactorTransportError
from .retry import RetryPolicy, may_retry, parse_retry_after, retry_delay

QueryValue = Union[str, int, None]

USER_AGENT = "compactor-client-python/{}".format(__version__)


def segment(value: str) -> str:
    """One path segment, percent-encoded as ``encodeURIComponent`` would (``/``, ``?``, ``#`` included)."""
    return quote(value, safe="!~*'()")


class Settings(NamedTuple):
    """Where and as whom the client calls, and how it retries."""

    scheme: str
    host: str
    port: Optional[int]
    #: The path the API is mounted under (``""`` at the root).
    prefix: str
    api_key: Optional[str]
    headers: Mapping[str, str]
    timeout: Optional[float]
    retry: RetryPolicy
    ssl_context: Optional[ssl.SSLContext]


def parse_base_url(base_url: str) -> Tuple[str, str, Optional[int], str]:
    """``http://host:port/prefix`` → scheme, host, port, prefix (without its trailing slash)."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("base_url must be an http:// or https:// URL, got {!r}".format(base_url))
    if parts.query or parts.fragment:
        raise ValueError("base_url takes no query or fragment: {!r}".format(base_url))
    return parts.scheme, parts.hostname, parts.port, parts.path.rstrip("/")


def open_connection(settings: Settings, timeout: Optional[float]) -> http.client.HTTPConnection:
    if settings.scheme == "https":
        return http.client.HTTPSConnection(
            settings.host, settings.port, timeout=timeout, context=settings.ssl_context
        )
    return http.client.HTTPConnection(settings.host, settings.port, timeout=timeout)


def request_target(settings: Settings, path: str, query: Optional[Mapping[str, QueryValue]] = None) -> str:
    """The path (under the prefix) and query string; ``None`` query values are left out."""
    target = settings.prefix + path
    pairs = [(key, str(value)) for key, value in (query or {}).items() if value is not None]
    return target + ("?" + urlencode(pairs) if pairs else "")


def base_headers(settings: Settings) -> Dict[str, str]:
    """The headers of every call: the caller's own and the bearer key."""
    headers = {"User-Agent": USER_AGENT}
    headers.update(settings.headers)
    if settings.api_key:
        headers["Authorization"] = "Bearer " + settings.api_key
    return headers


class Answer(NamedTuple):
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self, request: str) -> Any:
        """The body as JSON (a :class:`CompactorResponseError` when it is not)."""
        try:
            return json.loads(self.body.decode("utf-8"))
        except ValueError as error:
            raise CompactorResponseError(
                "the {} answer is not JSON: {}".format(self.status, error), request
            ) from None


def encode_body(body: Any) -> bytes:
    # ASCII escapes keep a lone surrogate sendable: the API answers a 400 naming the field.
    return json.dumps(body, allow_nan=False, separators=(",", ":")).encode("ascii")


def send(
    settings: Settings,
    method: str,
    path: str,
    query: Optional[Mapping[str, QueryValue]] = None,
    body: Any = None,
    has_body: bool = False,
    headers: Optional[Mapping[str, str]] = None,
    idempotent: bool = False,
) -> Answer:
    """Sends a call, retrying what :func:`may_retry` allows after ``Retry-After`` or a jittered
    exponential backoff; any other non-2xx raises :class:`CompactorApiError`. Network errors raise
    :class:`CompactorTransportError` and are not retried: the request may have been written.
    ``idempotent``: sending it twice writes it once (an append whose every message carries an id),
    so it is retried on gateway statuses as a write with an ``Idempotency-Key`` is.
    """
    request = "{} {}".format(method, path)
    all_headers = {"Accept": "application/json"}
    all_headers.update(base_headers(settings))
    payload = None
    if has_body:
        payload = encode_body(body)
        all_headers["Content-Type"] = "application/json"
    all_headers.update(headers or {})
    idempotency_key = idempotent or any(name.lower() == "idempotency-key" for name in (headers or {}))
    target = request_target(settings, path, query)
    retry = 0
    while True:
        answer = _exchange(settings, method, target, payload, all_headers, request)
        if 200 <= answer.status < 300:
            return answer
        retry_after = parse_retry_after(answer.headers.get("Retry-After"))
        error = CompactorApiError.from_body(
            answer.status, http.client.responses.get(answer.status, ""), answer.body, request, retry_after
        )
        if may_retry(method, error.status, error.code, idempotency_key):
            delay = retry_delay(settings.retry, retry, retry_after)
            if delay is not None:
                time.sleep(delay)
                retry += 1
                continue
        raise error


def exchange(settings: Settings, method: str, path: str) -> Answer:
    """One bodiless request, whatever its status, without retries (the readiness probe)."""
    headers = {"Accept": "application/json"}
    headers.update(base_headers(settings))
    target = request_target(settings, path)
    return _exchange(settings, method, target, None, headers, "{} {}".format(method, path))


def _exchange(
    settings: Settings,
    method: str,
    target: str,
    payload: Optional[bytes],
    headers: Mapping[str, str],
    request: str,
) -> Answer:
    connection = open_connection(settings, settings.timeout)
    try:
        connection.request(method, target, body=payload, headers=dict(headers))
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    except socket.timeout as error:
        raise CompactorTransportError(
            "no answer within {} s".format(settings.timeout), request, error
        ) from error
    except (OSError, http.client.HTTPException) as error:
        raise CompactorTransportError(describe(error), request, error) from error
    finally:
        connection.close()


def describe(error: BaseException) -> str:
    """A network error in words: its class and message."""
    text = str(error)
    return "{}: {}".format(type(error).__name__, text) if text else type(error).__name__
