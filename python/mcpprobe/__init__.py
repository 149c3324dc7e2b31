"""mcpprobe: a polite security scanner for MCP servers, from Python.

The same engine as the `mcpprobe` command (SPEC §12): :func:`check` reads a tool list (or a server
or agent card) from a file offline, :func:`check_text` from JSON text, :func:`scan` runs the whole
pipeline against a server (the opt-out and the ownership proof first, exactly as the CLI),
:func:`fingerprint` and :func:`diff` compare tool lists.

Every run answers with a :class:`Report`, whatever its outcome (``complete``, ``refused`` by the
gate, or ``incomplete``), as ``subprocess.run`` answers with its result; ``report.raise_for_outcome()``
raises :class:`GateRefused` or :class:`ScanIncomplete` for those who want an exception (like
``requests``' ``raise_for_status``). Only bad arguments raise by themselves (:class:`UsageError`,
the CLI's exit 64: nothing ran). Findings are never an exception: ``report.exit_code()`` says 1.

Options are one object, :class:`Options` (a frozen dataclass; a dict of the same keys does too),
passed as ``options=``, and any of its fields as a keyword overrides it::

    import mcpprobe

    strict = mcpprobe.Options(fail_on="medium", min_confidence="medium")
    report = mcpprobe.check("tools.json", options=strict, skip_checks=["META-04"])
    for finding in report.findings:
        if finding.severity >= mcpprobe.Severity.HIGH:
            print(finding.check, finding.severity, finding.message)

A judge (META-01) is any callable ``judge(tool) -> list[Verdict]`` (or ``async def``): it gets
one tool at a time, as a dict with name, title, description, inputSchema, outputSchema and
annotations (never a credential), and its verdicts become META-01 findings naming it::

    def my_judge(tool):
        if "secret" in (tool.get("description") or "").lower():
            return [mcpprobe.Verdict("high", "asks the model to keep a secret", pointer="/description")]
        return []

    report = mcpprobe.check("tools.json", judge=my_judge).raise_for_outcome()
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import json
import os
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    FrozenSet,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    TypeVar,
    Union,
)

from . import _native

if TYPE_CHECKING:  # read by type checkers only: Python 3.9's typing has no Unpack
    from typing_extensions import Unpack

__all__ = [
    "CheckRecord",
    "Confidence",
    "Diff",
    "DiscoveredServer",
    "Discovery",
    "Error",
    "Evidence",
    "Finding",
    "GateRefused",
    "Location",
    "Options",
    "OptionValues",
    "Outcome",
    "Report",
    "ScanIncomplete",
    "Severity",
    "Status",
    "Suppressed",
    "UsageError",
    "Verdict",
    "check",
    "check_ids",
    "check_text",
    "diff",
    "discover",
    "fingerprint",
    "scan",
    "scan_async",
    "scan_discovered",
]

__version__: str = _native.VERSION


# --- the vocabulary ---------------------------------------------------------------------------

_E = TypeVar("_E", bound="_Named")


class _Named(str, enum.Enum):
    """A name of the JSON report: equal to its string (``Severity.HIGH == "high"``), printed and
    serialised as it (``str()``, f-strings, ``json.dumps``), hashed as it."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __hash__(self) -> int:
        return hash(str(self.value))

    @classmethod
    def _of(cls: type[_E], value: Any) -> _E:
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise UsageError(f"{value!r} is not a {cls.__name__.lower()} (one of {names})") from None


class _Ranked(_Named):
    """A name with an order: members compare by rank (``Severity.HIGH > Severity.MEDIUM``), and
    with their names (``finding.severity >= "high"``), never alphabetically."""

    @property
    def rank(self) -> int:
        """0 for the lowest member."""
        return list(type(self)).index(self)

    def _other(self, other: object) -> Optional[int]:
        if isinstance(other, type(self)):
            return other.rank
        if isinstance(other, str):
            return type(self)._of(other).rank
        return None

    def __lt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank < o

    def __le__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank <= o

    def __gt__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank > o

    def __ge__(self, other: object) -> bool:
        o = self._other(other)
        return NotImplemented if o is None else self.rank >= o


class Severity(_Ranked):
    """A finding's severity, lowest first."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Confidence(_Ranked):
    """How sure a finding is, lowest first."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Outcome(_Named):
    """How a run ended (the report's ``outcome``; the CLI's exit 2 and 3)."""

    #: Every selected check ran, was skipped with a reason, or is not implemented.
    COMPLETE = "complete"
    #: The gate stopped the scan: the target opted out, or its ownership is not proven.
    REFUSED = "refused"
    #: A check errored, the target could not be reached, or the run was interrupted.
    INCOMPLETE = "incomplete"


class Status(_Named):
    """What one check did in one run."""

    RAN = "ran"
    SKIPPED = "skipped"
    NOT_IMPLEMENTED = "not_implemented"
    ERROR = "error"


#: The names the enums stand for, for literals in typed code (``fail_on="medium"``).
SeverityName = Literal["info", "low", "medium", "high", "critical"]
ConfidenceName = Literal["low", "medium", "high"]
#: ``fail_on``: a severity, or ``"none"`` (findings never fail the run).
FailOn = Union[Severity, SeverityName, Literal["none"]]
MinConfidence = Union[Confidence, ConfidenceName]
#: ``kind`` of :func:`check`: what the document is (guessed from its shape by default).
Kind = Literal["tools", "server-card", "agent-card"]

PathLike = Union[str, "os.PathLike[str]"]
#: Tools as :func:`fingerprint` and :func:`diff` take them: JSON text (str or bytes), the parsed
#: JSON (a dict or a list), or a file (a ``pathlib.Path``, or a str ending in ``.json``, which
#: no JSON text can end with).
Tools = Union[str, bytes, bytearray, Mapping[str, Any], Sequence[Mapping[str, Any]], "os.PathLike[str]"]
#: What :func:`check` takes: a file (a ``pathlib.Path`` or a str ending in ``.json``), or the
#: parsed JSON; JSON text goes to :func:`check_text`.
Document = Union[str, "os.PathLike[str]", Mapping[str, Any], Sequence[Mapping[str, Any]]]
JudgeAnswer = Sequence[Union["Verdict", Mapping[str, Any]]]
Judge = Callable[[Dict[str, Any]], Union[JudgeAnswer, Awaitable[JudgeAnswer]]]


# --- errors -----------------------------------------------------------------------------------


class Error(Exception):
    """Every mcpprobe error. ``exit_code`` is what the CLI would exit with; ``report`` is the
    report of the run, when there was one (a refusal or an incomplete run has one)."""

    exit_code: int = 1

    def __init__(self, message: str, report: Optional[Report] = None) -> None:
        super().__init__(message)
        self.report = report


class UsageError(Error, ValueError):
    """Bad arguments or input (exit 64): nothing ran, nothing was sent, there is no report."""

    exit_code = 64


class GateRefused(Error):
    """From :meth:`Report.raise_for_outcome`: the gate stopped the scan (exit 2), the target
    opted out or its ownership is not proven (``mcpprobe verify init HOST``); the report says
    which in ``refusal``."""

    exit_code = 2


class ScanIncomplete(Error):
    """From :meth:`Report.raise_for_outcome`: the run did not check everything (exit 3), the
    target could not be reached, a check errored (a judge that raised or ran out of time among
    them), or the run was interrupted. The findings it made are in ``report``."""

    exit_code = 3


# --- options ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Options:
    """The options of :func:`check`, :func:`check_text`, :func:`scan` and :func:`scan_async`,
    the CLI's flags of the same names. One object serves all four: each reads the fields that
    apply to it (``kind`` and ``time_cap`` are the offline check's, the rest from ``token`` on
    the scan's); a keyword given to a call overrides its field, and a keyword that does not
    apply to that call is a :class:`UsageError`. ``options.replace(rate=10)`` is a copy with
    changes. The token and headers are left out of the ``repr``."""

    #: Run only these checks (ids such as ``META-02``; a list, or one comma-separated str).
    checks: Optional[Union[str, Sequence[str]]] = None
    #: Run every check but these.
    skip_checks: Optional[Union[str, Sequence[str]]] = None
    #: Findings at or above this severity make ``report.exit_code()`` 1; ``"none"``: never.
    fail_on: FailOn = Severity.HIGH
    #: Findings below this confidence are counted in ``below_min_confidence``, not listed.
    min_confidence: MinConfidence = Confidence.LOW
    #: A judge's budget per tool and in all, in seconds.
    judge_timeout: float = 30.0
    judge_budget: float = 300.0
    # --- check and check_text only
    #: What the document is; guessed from its shape when not given.
    kind: Optional[Kind] = None
    #: The deterministic rules' time cap, in seconds (at most 3600).
    time_cap: float = 60.0
    # --- scan and scan_async only
    #: A bearer token; defaults to ``$MCPPROBE_TOKEN``, like the CLI's ``--token``.
    token: Optional[str] = dataclasses.field(default=None, repr=False)
    #: Extra request headers: a mapping, or ``"Name: value"`` strings.
    headers: Optional[Union[Mapping[str, str], Sequence[str]]] = dataclasses.field(default=None, repr=False)
    #: For a stdio server: the names of the variables of this process it also gets.
    env: Optional[Sequence[str]] = None
    #: Requests per second to the target (1 to 10).
    rate: int = 5
    baseline: Optional[PathLike] = None
    update_baseline: bool = False
    #: Tools never called (names or globs).
    exclude_tools: Optional[Sequence[str]] = None
    follow_authorization_server: bool = True
    #: Scan a name that resolves to an address that is not public (``--allow-private-addresses``).
    allow_private_addresses: bool = False
    trace_file: Optional[PathLike] = None
    #: The state folder (ownership proofs); else ``$MCPPROBE_STATE_DIR``, else ``~/.local/state/mcpprobe``.
    state_dir: Optional[PathLike] = None
    #: A DNS resolver ``IP:PORT``; else ``$MCPPROBE_RESOLVER``, else the system's.
    resolver: Optional[str] = None

    def replace(self, **changes: Unpack[OptionValues]) -> Options:
        """A copy with ``changes``; an unknown name is a :class:`UsageError`."""
        return _replace(self, changes)


class OptionValues(TypedDict, total=False):
    """The fields of :class:`Options` as keywords (for ``**`` and typed ``options=`` dicts)."""

    checks: Optional[Union[str, Sequence[str]]]
    skip_checks: Optional[Union[str, Sequence[str]]]
    fail_on: FailOn
    min_confidence: MinConfidence
    judge_timeout: float
    judge_budget: float
    kind: Optional[Kind]
    time_cap: float
    token: Optional[str]
    headers: Optional[Union[Mapping[str, str], Sequence[str]]]
    env: Optional[Sequence[str]]
    rate: int
    baseline: Optional[PathLike]
    update_baseline: bool
    exclude_tools: Optional[Sequence[str]]
    follow_authorization_server: bool
    allow_private_addresses: bool
    trace_file: Optional[PathLike]
    state_dir: Optional[PathLike]
    resolver: Optional[str]


_OPTION_NAMES: FrozenSet[str] = frozenset(f.name for f in dataclasses.fields(Options))
_CHECK_ONLY: FrozenSet[str] = frozenset({"kind", "time_cap"})
_SCAN_ONLY: FrozenSet[str] = _OPTION_NAMES - _CHECK_ONLY - {
    "checks", "skip_checks", "fail_on", "min_confidence", "judge_timeout", "judge_budget"
}


def _replace(options: Options, changes: Mapping[str, Any]) -> Options:
    unknown = sorted(set(changes) - _OPTION_NAMES)
    if unknown:
        raise UsageError(f"no option named {unknown[0]!r} (options: {', '.join(sorted(_OPTION_NAMES))})")
    return dataclasses.replace(options, **changes)


def _options(call: str, options: Union[Options, OptionValues, None], overrides: Mapping[str, Any],
             not_here: FrozenSet[str]) -> Options:
    """``options`` with the call's keyword ``overrides``, refusing keywords that do not apply."""
    if options is None:
        base = Options()
    elif isinstance(options, Options):
        base = options
    elif isinstance(options, Mapping):
        base = _replace(Options(), options)
    else:
        raise UsageError(f"options= is an mcpprobe.Options or a dict, not {type(options).__name__}")
    misplaced = sorted(set(overrides) & not_here)
    if misplaced:
        where = "check() and check_text()" if misplaced[0] in _CHECK_ONLY else "scan() and scan_async()"
        raise UsageError(f"{misplaced[0]}= is an option of {where}, not of {call}()")
    return _replace(base, overrides)


def _name(value: Any) -> Any:
    """An enum member as its name, for the engine; anything else as it is (the engine refuses
    what it does not know, naming it)."""
    return value.value if isinstance(value, _Named) else value


# --- the report -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One judgement of one tool. ``pointer`` (a JSON Pointer into the tool the judge was
    shown, such as ``/description``) places the finding; ``rule`` defaults to ``J1``."""

    severity: Union[Severity, SeverityName]
    reason: str
    confidence: Union[Confidence, ConfidenceName] = Confidence.LOW
    rule: str = "J1"
    pointer: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Location:
    pointer: Optional[str]
    tool: Optional[str]
    #: The server, in the report of a discovered set (:func:`scan_discovered`).
    server: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Evidence:
    #: The exact text that fired, as the server sent it (invisible characters made visible).
    text: Optional[str]
    #: The requests and responses the finding rests on, as in the JSON report.
    exchanges: List[Dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class Suppressed:
    reason: str
    until: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    rule: Optional[str]
    title: str
    severity: Severity
    confidence: Confidence
    location: Location
    evidence: Evidence
    references: List[str]
    fix: str
    fingerprint: str
    subcode: Optional[str] = None
    message: Optional[str] = None
    suppressed: Optional[Suppressed] = None
    default_severity: Optional[Severity] = None
    new: Optional[bool] = None

    @property
    def counts(self) -> bool:
        """Whether it counts for the exit code (not suppressed, not known before)."""
        return self.suppressed is None and self.new is not False


@dataclasses.dataclass(frozen=True)
class CheckRecord:
    id: str
    #: ``passive``, ``active`` or ``other``.
    kind: str
    status: Status
    reason: Optional[str]
    findings: int = 0
    requests: int = 0


@dataclasses.dataclass(frozen=True)
class Report:
    """A run's report: the JSON report of SPEC §4 as Python objects. ``to_json()`` gives the
    engine's JSON exactly; keys this version does not know stay in ``extra``."""

    version: int
    target: str
    outcome: Outcome
    reason: Optional[str]
    checks: List[CheckRecord]
    findings: List[Finding]
    requests_sent: int
    tool_list_sha256: Optional[str]
    refusal: Optional[str]
    fingerprint: Optional[Dict[str, Any]]
    gate: Optional[Dict[str, Any]]
    policy: Dict[str, Any]
    below_min_confidence: int
    suppressions: List[Dict[str, Any]]
    warnings: List[str]
    trace_id: Optional[str]
    started_at: Optional[str]
    tool: Dict[str, Any]
    extra: Dict[str, Any]
    _json: str = dataclasses.field(repr=False, compare=False)

    @classmethod
    def from_json(cls, text: str) -> Report:
        """A report from its JSON (a file ``mcpprobe --format json`` wrote, say)."""
        data = json.loads(text)
        if not isinstance(data, dict) or "checks" not in data or "findings" not in data:
            raise UsageError("not an mcpprobe report")
        known = {f.name for f in dataclasses.fields(cls)} | {"exit_code"}
        return cls(
            version=data.get("version", 0),
            target=data.get("target", ""),
            outcome=Outcome._of(data.get("outcome")),
            reason=data.get("reason"),
            checks=[_record(c) for c in data["checks"]],
            findings=[_finding(f) for f in data["findings"]],
            requests_sent=data.get("requests_sent", 0),
            tool_list_sha256=data.get("tool_list_sha256"),
            refusal=data.get("refusal"),
            fingerprint=data.get("fingerprint"),
            gate=data.get("gate"),
            policy=data.get("policy") or {},
            below_min_confidence=data.get("below_min_confidence", 0),
            suppressions=data.get("suppressions") or [],
            warnings=data.get("warnings") or [],
            trace_id=data.get("trace_id"),
            started_at=data.get("started_at"),
            tool=data.get("tool") or {},
            extra={k: v for k, v in data.items() if k not in known},
            _json=text,
        )

    @property
    def discovery(self) -> Optional[Dict[str, Any]]:
        """For :func:`scan_discovered`: the client files read (``configs``) and what became of
        each server (``servers``: ``status`` scanned, not_scanned, would_scan or disabled,
        with ``reason`` and ``to_allow``); ``None`` for a scan of one server."""
        value: Optional[Dict[str, Any]] = self.extra.get("discovery")
        return value

    def raise_for_outcome(self) -> Report:
        """Raises :class:`GateRefused` for a refused run and :class:`ScanIncomplete` for an
        incomplete one, each carrying this report; returns the report itself when the run was
        complete (``report = mcpprobe.scan(url).raise_for_outcome()``). Findings never raise:
        ``exit_code()`` judges them."""
        if self.outcome == Outcome.REFUSED:
            why = f" ({self.refusal})" if self.refusal else ""
            raise GateRefused(f"{self.target}: refused by the gate{why}: {self.reason or 'refused'}", self)
        if self.outcome == Outcome.INCOMPLETE:
            errored = [f"{c.id}: {_trimmed(c.reason or 'error', 200)}" for c in self.checks
                       if c.status == Status.ERROR]
            detail = f" ({'; '.join(errored)})" if errored else ""
            raise ScanIncomplete(f"{self.target}: incomplete: {self.reason or 'incomplete'}{detail}", self)
        return self

    def to_json(self) -> str:
        """The report as the engine wrote it (SPEC §4), byte for byte."""
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        """The report's JSON, parsed."""
        result: Dict[str, Any] = json.loads(self._json)
        return result

    def exit_code(self, fail_on: Optional[FailOn] = None,
                  min_confidence: Optional[MinConfidence] = None) -> int:
        """The CLI's exit code for this report (SPEC §4): by the policy it was made with, or by
        ``fail_on`` (a severity, or ``"none"``) and ``min_confidence`` when given."""
        code: int = _call(_native.exit_code, self._json, fail_on=_name(fail_on),
                          min_confidence=_name(min_confidence))
        return code

    def check(self, id: str) -> CheckRecord:
        """What check ``id`` (``META-01``) did in this run."""
        for c in self.checks:
            if c.id == id:
                return c
        raise KeyError(id)


@dataclasses.dataclass(frozen=True)
class Diff:
    """What changed between two tool lists (``mcpprobe diff --format json``)."""

    identical: bool
    old_sha256: str
    new_sha256: str
    added: List[str]
    removed: List[str]
    renamed: List[Dict[str, Any]]
    changed: List[Dict[str, Any]]


def _trimmed(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _record(c: Mapping[str, Any]) -> CheckRecord:
    return CheckRecord(
        id=c["id"],
        kind=c["kind"],
        status=Status._of(c["status"]),
        reason=c.get("reason"),
        findings=c.get("findings", 0),
        requests=c.get("requests", 0),
    )


def _finding(f: Mapping[str, Any]) -> Finding:
    loc = f.get("location") or {}
    ev = f.get("evidence") or {}
    sup = f.get("suppressed")
    default = f.get("default_severity")
    return Finding(
        check=f["check"],
        rule=f.get("rule"),
        title=f["title"],
        severity=Severity._of(f["severity"]),
        confidence=Confidence._of(f["confidence"]),
        location=Location(pointer=loc.get("pointer"), tool=loc.get("tool"), server=loc.get("server")),
        evidence=Evidence(text=ev.get("text"), exchanges=ev.get("exchanges") or []),
        references=f.get("references") or [],
        fix=f.get("fix", ""),
        fingerprint=f["fingerprint"],
        subcode=f.get("subcode"),
        message=f.get("message"),
        suppressed=Suppressed(sup["reason"], sup.get("until")) if sup else None,
        default_severity=Severity._of(default) if default is not None else None,
        new=f.get("new"),
    )


# --- the engine's calls -----------------------------------------------------------------------


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A native call, its usage errors as :class:`UsageError`."""
    try:
        return fn(*args, **kwargs)
    except _native.NativeUsageError as e:
        raise UsageError(str(e)) from None
    except (TypeError, OverflowError) as e:
        # An argument of the wrong type or range, refused before anything ran.
        raise UsageError(str(e)) from None


def _names_a_file(text: str) -> bool:
    """A str that ends in ``.json`` is a path: no JSON text ends so."""
    return text.lower().endswith(".json")


def _read(path: PathLike) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _bytes(tools: Tools, what: str = "tools") -> bytes:
    if isinstance(tools, os.PathLike):
        return _read(tools)
    if isinstance(tools, str):
        return _read(tools) if _names_a_file(tools) else tools.encode("utf-8")
    if isinstance(tools, (bytes, bytearray)):
        return bytes(tools)
    try:
        return json.dumps(tools).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise UsageError(f"{what}: not JSON-serialisable: {e}") from None


def _answer(result: Any) -> str:
    """A judge's answer as the engine reads it: a JSON array of verdict objects."""
    if isinstance(result, (list, tuple)):
        items = []
        for v in result:
            if isinstance(v, Verdict):
                v = {k: _name(x) for k, x in dataclasses.asdict(v).items() if x is not None}
            items.append(v)
        return json.dumps(items)
    # Anything else is the engine's to refuse, naming what it got.
    return json.dumps(result, default=lambda o: f"<{type(o).__name__}>")


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


#: The engine enforces a judge's budget per tool (and ends the review when it runs out); the
#: package cancels a coroutine judge this much later, only so that none outlives the scan. Were
#: the two equal, which fired first would decide between "timed out" and "raised".
_GRACE = 1.0


def _judge(judge: Optional[Judge], timeout: float, loop_bound: bool) -> Optional[Tuple[str, Any, Any]]:
    """The engine's view of a judge: its name, a blocking call, and (for ``scan_async``) an
    ``async`` twin awaited on the caller's event loop."""
    if judge is None:
        return None
    if not callable(judge):
        raise UsageError(f"judge must be callable, not {type(judge).__name__}")
    name = getattr(judge, "__name__", None) or type(judge).__name__

    def answer(tool_json: str) -> str:
        result = judge(json.loads(tool_json))
        if inspect.isawaitable(result):
            # A coroutine judge from the blocking API: its own event loop, on this thread.
            result = asyncio.run(asyncio.wait_for(_awaited(result), timeout + _GRACE))
        return _answer(result)

    def call(tool_json: str, done: Callable[[bool, str], None]) -> None:
        # A daemon thread: a judge past its budget never holds up the interpreter's exit.
        def work() -> None:
            try:
                text = answer(tool_json)
            except BaseException as e:  # the judge's failure is META-01's error, reported
                done(False, f"{type(e).__qualname__}: {e}")
                return
            done(True, text)

        threading.Thread(target=work, name="mcpprobe-judge", daemon=True).start()

    is_async = inspect.iscoroutinefunction(judge) or inspect.iscoroutinefunction(
        getattr(judge, "__call__", None)
    )
    acall = None
    if loop_bound and is_async:

        async def acall(tool_json: str) -> str:
            result = judge(json.loads(tool_json))
            if inspect.isawaitable(result):
                # Cancelled at its budget, so no judge task outlives it on the caller's loop.
                result = await asyncio.wait_for(_awaited(result), timeout + _GRACE)
            return _answer(result)

    return (name, call, acall)


def _target(target: Any) -> Union[str, List[str]]:
    if isinstance(target, str):
        return target
    if isinstance(target, (list, tuple)) and all(isinstance(t, str) for t in target):
        return list(target)
    raise UsageError(
        f"the target is a URL (str) or a stdio command (a list of str), not {type(target).__name__}"
    )


def _list(value: Optional[Union[str, Sequence[str]]]) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return list(value)


def _headers(headers: Optional[Union[Mapping[str, str], Sequence[str]]]) -> Optional[List[str]]:
    if headers is None:
        return None
    if isinstance(headers, Mapping):
        return [f"{k}: {v}" for k, v in headers.items()]
    return list(headers)


def _path(value: Optional[PathLike]) -> Optional[str]:
    return os.fspath(value) if value is not None else None


def _check(data: bytes, target: str, o: Options, judge: Optional[Judge]) -> Report:
    text = _call(
        _native.check,
        data,
        target=target,
        kind=o.kind,
        checks=_list(o.checks),
        skip_checks=_list(o.skip_checks),
        fail_on=_name(o.fail_on),
        min_confidence=_name(o.min_confidence),
        judge=_judge(judge, o.judge_timeout, loop_bound=False),
        judge_timeout=o.judge_timeout,
        judge_budget=o.judge_budget,
        time_cap=o.time_cap,
    )
    return Report.from_json(text)


def check(
    document: Document,
    *,
    options: Union[Options, OptionValues, None] = None,
    judge: Optional[Judge] = None,
    target: Optional[str] = None,
    **overrides: Unpack[OptionValues],
) -> Report:
    """``mcpprobe check FILE``: the metadata rules (and ``judge``, when given) over a tool list,
    an MCP server card or an A2A agent card; nothing is sent anywhere. ``document`` is a file
    (a ``pathlib.Path``, or a str ending in ``.json``) or the parsed JSON (a dict or a list);
    JSON text goes to :func:`check_text`. ``target`` names the document in the report (the
    path by default). Options: :class:`Options` (``kind``, ``checks``, ``fail_on``,
    ``judge_timeout``, ``time_cap``, …). The report is returned whatever the outcome."""
    o = _options("check", options, overrides, _SCAN_ONLY)
    if isinstance(document, os.PathLike) or (isinstance(document, str) and _names_a_file(document)):
        path = os.fspath(document)
        return _check(_read(path), target if target is not None else path, o, judge)
    if isinstance(document, (str, bytes, bytearray)):
        shown = document[:40] if isinstance(document, str) else bytes(document[:40])
        raise UsageError(
            f"check() reads a file (a pathlib.Path, or a str ending in .json), not {shown!r}; "
            "JSON text goes to check_text()"
        )
    return _check(_bytes(document), target if target is not None else "<tools>", o, judge)


def check_text(
    text: Union[str, bytes, bytearray],
    *,
    options: Union[Options, OptionValues, None] = None,
    judge: Optional[Judge] = None,
    target: str = "<tools>",
    **overrides: Unpack[OptionValues],
) -> Report:
    """:func:`check` of a document given as JSON text (str or bytes)."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise UsageError(f"check_text() takes JSON text (str or bytes), not {type(text).__name__}")
    o = _options("check_text", options, overrides, _SCAN_ONLY)
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return _check(data, target, o, judge)


def _scan_kwargs(o: Options) -> Dict[str, Any]:
    """The native ``ScanOptions`` (python/src/lib.rs): every key, always."""
    return dict(
        token=o.token,
        headers=_headers(o.headers),
        env=list(o.env) if o.env is not None else None,
        rate=o.rate,
        checks=_list(o.checks),
        skip_checks=_list(o.skip_checks),
        baseline=_path(o.baseline),
        update_baseline=o.update_baseline,
        exclude_tools=list(o.exclude_tools) if o.exclude_tools is not None else None,
        follow_authorization_server=o.follow_authorization_server,
        allow_private_addresses=o.allow_private_addresses,
        trace_file=_path(o.trace_file),
        state_dir=_path(o.state_dir),
        resolver=o.resolver,
        fail_on=_name(o.fail_on),
        min_confidence=_name(o.min_confidence),
        judge_timeout=o.judge_timeout,
        judge_budget=o.judge_budget,
    )


def scan(
    target: Union[str, Sequence[str]],
    *,
    options: Union[Options, OptionValues, None] = None,
    judge: Optional[Judge] = None,
    **overrides: Unpack[OptionValues],
) -> Report:
    """``mcpprobe scan``: the whole pipeline against ``target`` (an http(s) URL, or a stdio
    server's command as a list, which gets only PATH, HOME, LANG and the variables ``env``
    names; ``token`` defaults to ``$MCPPROBE_TOKEN``, as the CLI's ``--token`` does; scans of
    one host share its rate limit, at the lowest ``rate`` among those running). The gate
    applies exactly as in the CLI: a target whose host is not loopback needs an ownership proof
    (``mcpprobe verify``) in the state folder (``state_dir``, else ``$MCPPROBE_STATE_DIR``, else
    ``~/.local/state/mcpprobe``), and a host name that resolves to an address that is not public
    (private, link-local, loopback beside other addresses, …) is refused unless
    ``allow_private_addresses=True`` (``--allow-private-addresses``). Options: :class:`Options`.
    The report is returned whatever the outcome (``report.raise_for_outcome()`` raises for a
    refused or incomplete one). Blocks, with the GIL released; Ctrl-C cancels the scan (its
    sessions are still closed) and raises KeyboardInterrupt."""
    o = _options("scan", options, overrides, _CHECK_ONLY)
    judge_args = _judge(judge, o.judge_timeout, loop_bound=False)
    return Report.from_json(_call(_native.scan, _target(target), _scan_kwargs(o), judge=judge_args))


async def scan_async(
    target: Union[str, Sequence[str]],
    *,
    options: Union[Options, OptionValues, None] = None,
    judge: Optional[Judge] = None,
    **overrides: Unpack[OptionValues],
) -> Report:
    """:func:`scan` as a coroutine. An ``async def`` judge is awaited on this event loop (so
    it may use the loop's clients); a plain judge runs on a thread of its own."""
    o = _options("scan_async", options, overrides, _CHECK_ONLY)
    judge_args = _judge(judge, o.judge_timeout, loop_bound=True)
    text = await _call(_native.scan_async, _target(target), _scan_kwargs(o), judge=judge_args)
    return Report.from_json(text)


def fingerprint(tools: Tools) -> str:
    """The tool list's SHA-256 (``mcpprobe fingerprint``): equal for equal lists, whatever
    their key order or ``_meta``. Runs with the GIL released."""
    result: str = _call(_native.fingerprint, _bytes(tools))
    return result


def diff(old: Tools, new: Tools) -> Diff:
    """What changed between two tool lists (``mcpprobe diff``). Runs with the GIL released."""
    d = json.loads(_call(_native.diff, _bytes(old, "old"), _bytes(new, "new")))
    return Diff(
        identical=d["identical"],
        old_sha256=d["old_sha256"],
        new_sha256=d["new_sha256"],
        added=d["added"],
        removed=d["removed"],
        renamed=d["renamed"],
        changed=d["changed"],
    )


@dataclasses.dataclass(frozen=True)
class DiscoveredServer:
    """A server an MCP client on this machine is configured to run. Values of variables and
    headers are never kept: only their names, and where variables are referenced."""

    #: ``claude-desktop``, ``claude-code``, ``cursor``, ``vscode``, ``windsurf``, ``zed``,
    #: ``continue``, ``codex``, ``gemini``, ``cline``, or ``other`` (a given file).
    client: str
    #: ``user``, ``project`` or ``given``.
    scope: str
    file: str
    name: str
    #: The entry's JSON Pointer in its file.
    pointer: str
    #: ``stdio``, ``http`` or ``sse``.
    kind: str
    #: The command line (arguments holding a secret replaced), for a stdio server.
    command: Optional[List[str]]
    #: The URL (password and query values replaced), for a remote server.
    url: Optional[str]
    env: List[str]
    headers: List[str]
    #: Variables and placeholders referenced: ``{"name", "pointer"}``.
    references: List[Dict[str, str]]
    disabled: bool
    #: Secrets written in the file: ``{"pointer", "key", "why"}`` (never the value).
    inline_secrets: List[Dict[str, str]]


@dataclasses.dataclass(frozen=True)
class Discovery:
    """What :func:`discover` found."""

    #: Every client file read: ``{"client", "scope", "path", "status", "servers", "error"?}``.
    configs: List[Dict[str, Any]]
    servers: List[DiscoveredServer]
    #: The secrets written inline, as META-03 C12 findings.
    findings: List[Finding]
    #: Documented locations with no file on this machine.
    absent: int


def _places(home: Optional[PathLike], project: Optional[PathLike],
            client_configs: Optional[Sequence[PathLike]], platform: Optional[str]) -> Dict[str, Any]:
    """The native ``PlacesOptions`` (python/src/lib.rs): every key, always."""
    return dict(
        home=_path(home),
        project=_path(project),
        client_configs=[_path(c) for c in client_configs or []],
        platform=platform,
    )


def discover(
    *,
    home: Optional[PathLike] = None,
    project: Optional[PathLike] = None,
    client_configs: Optional[Sequence[PathLike]] = None,
    platform: Optional[str] = None,
) -> Discovery:
    """``mcpprobe discover``: the MCP servers this machine's clients are configured to run,
    read from each client's documented files (``home``: default ``$HOME``; ``project``: the
    project's files, default none) and ``client_configs``. Starts and sends nothing."""
    text = _call(_native.discover, _places(home, project, client_configs, platform))
    d = json.loads(text)
    return Discovery(
        configs=d["configs"],
        servers=[
            DiscoveredServer(
                client=s["client"], scope=s["scope"], file=s["file"], name=s["name"],
                pointer=s["pointer"], kind=s["kind"], command=s.get("command"), url=s.get("url"),
                env=s.get("env") or [], headers=s.get("headers") or [],
                references=s.get("references") or [], disabled=s.get("disabled", False),
                inline_secrets=s.get("inline_secrets") or [],
            )
            for s in d["servers"]
        ],
        findings=[_finding(f) for f in d["findings"]],
        absent=d.get("absent", 0),
    )


def scan_discovered(
    *,
    home: Optional[PathLike] = None,
    project: Optional[PathLike] = None,
    client_configs: Optional[Sequence[PathLike]] = None,
    platform: Optional[str] = None,
    dry_run: bool = False,
    trust_project: bool = False,
    options: Union[Options, OptionValues, None] = None,
    **overrides: Unpack[OptionValues],
) -> Report:
    """``mcpprobe scan --discover``: every server :func:`discover` finds, scanned within the
    gate's rules, in one report (``report.discovery`` says what became of each server; each
    finding's ``location.server`` names its server), with the rules across servers. A stdio
    server is started with PATH, HOME and LANG, and only the entries of its ``env`` that
    ``env`` names (or whose variables it names); a remote URL is scanned only when its host
    has an ownership proof in force, else it is listed "not scanned: no proof". ``dry_run``
    lists what would be started and starts nothing. The stdio servers of the ``project``'s files
    are started only with ``trust_project=True`` (a project may be someone else's repository).
    ``baseline`` pins the whole set."""
    o = _options("scan_discovered", options, overrides, _CHECK_ONLY)
    text = _call(
        _native.scan_discovered,
        _scan_kwargs(o),
        _places(home, project, client_configs, platform),
        dry_run=dry_run,
        trust_project=trust_project,
    )
    return Report.from_json(text)


def check_ids() -> List[str]:
    """Every check id of the catalogue (``mcpprobe checks``)."""
    result: List[str] = _native.check_ids()
    return result
