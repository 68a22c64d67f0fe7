"""``GET …/recall?kind=files|commands|facts``: one section of the session's artifact ledger, and
the text a model reads for it. The text is that of ``@compactor/client`` (``ledgerText`` in
``packages/client/src/recall-tool.ts``), byte for byte, so a model reads the same from either client.
"""

from typing import Any, List, Literal, Mapping, Optional, TypedDict, Union

#: The ledger sections recall lists, as the summary's overflow line names them.
RECALL_LEDGER_KINDS = ("files", "commands", "facts")
RecallLedgerKind = Literal["files", "commands", "facts"]


class LedgerFileEntry(TypedDict):
    """A file the session's tool calls touched: the strongest thing done to it."""

    path: str
    kind: Literal["read", "modified", "created", "deleted"]
    firstSeq: int
    lastSeq: int
    count: int


class _LedgerCommandRequired(TypedDict):
    command: str
    outcome: Literal["passed", "failed", "unknown"]
    firstSeq: int
    lastSeq: int
    count: int


class LedgerCommandEntry(_LedgerCommandRequired, total=False):
    """A command the session ran, and how its last run ended as its output said."""

    exitCode: int
    #: The output line that stated the outcome.
    evidence: str


class LedgerFactEntry(TypedDict):
    """Something the user stated, as they wrote it."""

    kind: Literal["identifier", "path", "version", "quantity", "url"]
    text: str
    firstSeq: int
    lastSeq: int
    count: int


class _LedgerOpenErrorRequired(TypedDict):
    command: str
    seq: int


class LedgerOpenError(_LedgerOpenErrorRequired, total=False):
    """A failed command not passed since."""

    exitCode: int
    evidence: str


class _RecallLedgerRequired(TypedDict):
    kind: Literal["ledger"]
    section: RecallLedgerKind
    entries: List[Union[LedgerFileEntry, LedgerCommandEntry, LedgerFactEntry]]
    #: Entries in the whole section.
    total: int
    #: Pass as ``cursor`` for the next page; None on the last.
    nextCursor: Optional[str]
    #: The newest message seq the ledger covers (0: no compaction yet).
    throughSeq: int


class RecallLedger(_RecallLedgerRequired, total=False):
    """``GET …/recall?kind=``: one section of what the session touched, newest first, a page at a time."""

    #: Section ``commands``: failed commands not passed since, newest first.
    openErrors: List[LedgerOpenError]
    #: Section ``facts``: the user's constraints the summary's pinned section had no room for.
    unlistedConstraints: List[str]


def _entry_line(entry: Mapping[str, Any]) -> str:
    """One entry as a line: the path, command or fact, then what is known of it."""
    if "path" in entry:
        return "- {} ({})".format(entry["path"], entry["kind"])
    if "command" in entry:
        exit_code = entry.get("exitCode")
        exit_text = "" if exit_code is None else ", exit code {}".format(exit_code)
        return "- {} ({}{})".format(entry["command"], entry["outcome"], exit_text)
    return "- {} ({})".format(entry["text"], entry["kind"])


def ledger_text(answer: Mapping[str, Any]) -> str:
    """The tool message's text for a ledger section."""
    entries = answer["entries"]
    shown = " ({} shown):".format(len(entries)) if len(entries) < answer["total"] else ":"
    head = "{} {} in what this session touched, newest first{}".format(
        answer["total"], answer["section"], shown
    )
    lines = [head] + [_entry_line(entry) for entry in entries]
    open_errors = answer.get("openErrors") or []
    if open_errors:
        lines.append("Open errors (failed, not passed since):")
        lines.extend("- {}".format(error["command"]) for error in open_errors)
    constraints = answer.get("unlistedConstraints") or []
    if constraints:
        lines.append("Constraints the summary had no room for:")
        lines.extend("- {}".format(constraint) for constraint in constraints)
    return "\n".join(lines)
