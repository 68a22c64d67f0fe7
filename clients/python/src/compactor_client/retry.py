"""When to try a refused request again, after ``Retry-After`` or an exponential backoff.

The same rules as ``@compactor/client``'s retry.ts, in seconds instead of milliseconds.
"""

import email.utils
import random as _random
import re
import time
from typing import Callable, FrozenSet, NamedTuple, Optional

#: The statuses that mean "refused, nothing written, try again later".
RETRYABLE_STATUSES: FrozenSet[int] = frozenset({429, 503})

# Statuses a proxy answers while the API restarts (a deploy); safe to retry on a read.
_GATEWAY_STATUSES: FrozenSet[int] = frozenset({429, 502, 503, 504})

# delay-seconds, as retry.ts reads them (a fraction allowed; no sign, exponent or "nan").
_DELAY_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")

# The API's own refusals: it answered before writing anything.
_REFUSAL_CODES: FrozenSet[str] = frozenset({"too_many_requests", "service_unavailable"})


class RetryPolicy(NamedTuple):
    """How a client retries refused requests (every delay in seconds)."""

    #: Retries after the first try; 0 turns retrying off.
    max_retries: int = 4
    #: The first backoff; each retry doubles it.
    base_delay: float = 0.25
    #: No backoff is longer than this.
    max_delay: float = 10.0
    #: A ``Retry-After`` longer than this is not waited for: the error is raised instead, so a
    #: server that asks for an hour does not hang the caller.
    max_retry_after: float = 60.0
    #: Jitter source in [0, 1) (tests pass a fixed one).
    random: Callable[[], float] = _random.random


def may_retry(method: str, status: int, code: str, idempotency_key: bool) -> bool:
    """Whether a failed call may be sent again.

    A read (``GET``) may, on any gateway status. A write may only when the API itself refused it
    (its error body says so: nothing was written) or when it carries an ``Idempotency-Key``: a
    proxy's 503 ("upstream reset") can come after the API already wrote, and sending it again
    would write twice.
    """
    if method == "GET" or idempotency_key:
        return status in _GATEWAY_STATUSES
    return status in RETRYABLE_STATUSES and code in _REFUSAL_CODES


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds: delay-seconds or an HTTP date; None when absent or unreadable."""
    if value is None or value.strip() == "":
        return None
    trimmed = value.strip()
    if _DELAY_SECONDS.fullmatch(trimmed):
        return float(trimmed)
    try:
        at = email.utils.parsedate_to_datetime(trimmed)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None:
        return None
    return max(0.0, float(at.timestamp()) - (time.time() if now is None else now))


def retry_delay(policy: RetryPolicy, retry: int, retry_after: Optional[float]) -> Optional[float]:
    """How long to wait before retry number ``retry`` (0-based), or None to give up.

    Exponential backoff with jitter (half fixed, half random, so concurrent clients spread out),
    never sooner than the server's ``Retry-After``, never longer than the policy allows.
    """
    if retry >= policy.max_retries:
        return None
    if retry_after is not None and retry_after > policy.max_retry_after:
        return None
    exponential = min(policy.max_delay, policy.base_delay * 2.0**retry)
    backoff = exponential / 2 + (exponential / 2) * policy.random()
    return max(retry_after or 0.0, backoff)
