"""mcpprobe: a polite security scanner for MCP servers, from Python.

The same engine as the `mcpprobe` command (SPEC §12): ``check`` reads tool definitions offline,
``scan`` runs the whole pipeline against a server (the opt-out and the ownership proof first,
exactly as the CLI), ``fingerprint`` and ``diff`` compare tool lists. Results are
:class:`Report` objects mirroring the JSON report; errors are exceptions with the meaning of
the CLI's exit codes (:class:`UsageError` 64, :class:`GateRefused` 2, :class:`ScanIncomplete` 3).

A judge (META-01) is any callable ``judge(tool) -> list[Verdict]`` (or ``async def``): it gets
one tool at a time, as a dict with name, title, description, inputSchema, outputSchema and
annotations (never a credential), and its verdicts become META-01 findings naming it::

    import mcpprobe

    def my_judge(tool):
        if "secret" in (tool.get("description") or "").lower():
            return [mcpprobe.Verdict("high", "asks the model to keep a secret", pointer="/description")]
        return []

    report = mcpprobe.check(open("tools.json").read(), judge=my_judge)
    for finding in report.findings:
        print(finding.check, finding.severity, finding.message)
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
import threading
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

__all__ = [
    "CheckRecord",
    "Diff",
    "Error",
    "Evidence",
    "Finding",
    "GateRefused",
    "Location",
    "Report",
    "ScanIncomplete",
    "Suppressed",
    "UsageError",
    "Verdict",
    "check",
    "check_ids",
    "diff",
    "fingerprint",
    "scan",
    "scan_async",
]

__version__: str = _native.VERSION

#: Tools as ``check`` accepts them: a JSON text (str or bytes), the parsed JSON (a dict or a
#: list), or the path of a file (``pathlib.Path``).
Tools = Union[str, bytes, bytearray, Mapping[str, Any], Sequence[Any], "os.PathLike[str]"]
JudgeAnswer = Sequence[Union["Verdict", Mapping[str, Any]]]
Judge = Callable[[Dict[str, Any]], Union[JudgeAnswer, Awaitable[JudgeAnswer]]]


class Error(Exception):
    """Every mcpprobe error. ``exit_code`` is what the CLI would exit with; ``report`` is the
    report of the run, when there was one (a refusal or an incomplete scan still has one)."""

    exit_code: int = 1

    def __init__(self, message: str, report: Optional[Report] = None) -> None:
        super().__init__(message)
        self.report = report


class UsageError(Error, ValueError):
    """Bad arguments or input (exit 64): nothing was sent."""

    exit_code = 64


class GateRefused(Error):
    """The gate stopped the scan (exit 2): the target opted out, or its ownership is not proven
    (``mcpprobe verify init HOST``); the report says which in ``refusal``."""

    exit_code = 2


class ScanIncomplete(Error):
    """The run did not check everything (exit 3): the target could not be reached, a check
    errored (a judge that raised or ran out of time among them), or the scan was interrupted.
    The findings it made are in ``report``."""

    exit_code = 3


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One judgement of one tool. ``pointer`` (a JSON Pointer into the tool the judge was
    shown, such as ``/description``) places the finding; ``rule`` defaults to ``J1``."""

    severity: str
    reason: str
    confidence: str = "low"
    rule: str = "J1"
    pointer: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Location:
    pointer: Optional[str]
    tool: Optional[str]


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
    severity: str
    confidence: str
    location: Location
    evidence: Evidence
    references: List[str]
    fix: str
    fingerprint: str
    subcode: Optional[str] = None
    message: Optional[str] = None
    suppressed: Optional[Suppressed] = None
    default_severity: Optional[str] = None
    new: Optional[bool] = None

    @property
    def counts(self) -> bool:
        """Whether it counts for the exit code (not suppressed, not known before)."""
        return self.suppressed is None and self.new is not False


@dataclasses.dataclass(frozen=True)
class CheckRecord:
    id: str
    kind: str
    #: ``ran``, ``skipped``, ``not_implemented`` or ``error``.
    status: str
    reason: Optional[str]
    findings: int = 0
    requests: int = 0


@dataclasses.dataclass(frozen=True)
class Report:
    """A run's report: the JSON report of SPEC §4 as Python objects. ``to_json()`` gives the
    engine's JSON exactly; keys this version does not know stay in ``extra``."""

    version: int
    target: str
    #: ``complete``, ``refused`` or ``incomplete``.
    outcome: str
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
        """A report from its JSON (a file ``mcpprobe --json`` wrote, say)."""
        data = json.loads(text)
        if not isinstance(data, dict) or "checks" not in data or "findings" not in data:
            raise UsageError("not an mcpprobe report")
        known = {f.name for f in dataclasses.fields(cls)} | {"exit_code"}
        return cls(
            version=data.get("version", 0),
            target=data.get("target", ""),
            outcome=data.get("outcome", ""),
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

    def to_json(self) -> str:
        """The report as the engine wrote it (SPEC §4), byte for byte."""
        return self._json

    def to_dict(self) -> Dict[str, Any]:
        """The report's JSON, parsed."""
        result: Dict[str, Any] = json.loads(self._json)
        return result

    def exit_code(self, fail_on: Optional[str] = None, min_confidence: Optional[str] = None) -> int:
        """The CLI's exit code for this report (SPEC §4): by the policy it was made with, or by
        ``fail_on`` (info … critical, or none) and ``min_confidence`` when given."""
        return _call(_native.exit_code, self._json, fail_on=fail_on, min_confidence=min_confidence)

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


def _record(c: Mapping[str, Any]) -> CheckRecord:
    return CheckRecord(
        id=c["id"],
        kind=c["kind"],
        status=c["status"],
        reason=c.get("reason"),
        findings=c.get("findings", 0),
        requests=c.get("requests", 0),
    )


def _finding(f: Mapping[str, Any]) -> Finding:
    loc = f.get("location") or {}
    ev = f.get("evidence") or {}
    sup = f.get("suppressed")
    return Finding(
        check=f["check"],
        rule=f.get("rule"),
        title=f["title"],
        severity=f["severity"],
        confidence=f["confidence"],
        location=Location(pointer=loc.get("pointer"), tool=loc.get("tool")),
        evidence=Evidence(text=ev.get("text"), exchanges=ev.get("exchanges") or []),
        references=f.get("references") or [],
        fix=f.get("fix", ""),
        fingerprint=f["fingerprint"],
        subcode=f.get("subcode"),
        message=f.get("message"),
        suppressed=Suppressed(sup["reason"], sup.get("until")) if sup else None,
        default_severity=f.get("default_severity"),
        new=f.get("new"),
    )


def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A native call, its usage errors as :class:`UsageError`."""
    try:
        return fn(*args, **kwargs)
    except _native.NativeUsageError as e:
        raise UsageError(str(e)) from None
    except (TypeError, OverflowError) as e:
        # An argument of the wrong type or range, refused before anything ran.
        raise UsageError(str(e)) from None


def _finish(text: str) -> Report:
    report = Report.from_json(text)
    if report.outcome == "refused":
        raise GateRefused(report.reason or "refused by the gate", report)
    if report.outcome == "incomplete":
        raise ScanIncomplete(report.reason or "incomplete", report)
    return report


def _bytes(tools: Tools, what: str = "tools") -> bytes:
    if isinstance(tools, str):
        return tools.encode("utf-8")
    if isinstance(tools, (bytes, bytearray)):
        return bytes(tools)
    if isinstance(tools, os.PathLike):
        with open(tools, "rb") as f:
            return f.read()
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
                v = {k: x for k, x in dataclasses.asdict(v).items() if x is not None}
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


def check(
    tools: Tools,
    *,
    judge: Optional[Judge] = None,
    kind: Optional[str] = None,
    checks: Optional[Union[str, Sequence[str]]] = None,
    skip_checks: Optional[Union[str, Sequence[str]]] = None,
    fail_on: str = "high",
    min_confidence: str = "low",
    judge_timeout: float = 30.0,
    judge_budget: float = 300.0,
    time_cap: float = 60.0,
    target: Optional[str] = None,
) -> Report:
    """``mcpprobe check``: the metadata rules (and ``judge``, when given) over a tool list, an
    MCP server card or an A2A agent card; nothing is sent anywhere. ``kind`` forces the
    document kind (tools, server-card, agent-card)."""
    if target is None:
        target = os.fspath(tools) if isinstance(tools, os.PathLike) else "<tools>"
    text = _call(
        _native.check,
        _bytes(tools),
        target=target,
        kind=kind,
        checks=_list(checks),
        skip_checks=_list(skip_checks),
        fail_on=fail_on,
        min_confidence=min_confidence,
        judge=_judge(judge, judge_timeout, loop_bound=False),
        judge_timeout=judge_timeout,
        judge_budget=judge_budget,
        time_cap=time_cap,
    )
    return _finish(text)


def _scan_kwargs(
    token: Optional[str],
    headers: Optional[Union[Mapping[str, str], Sequence[str]]],
    env: Optional[Sequence[str]],
    rate: int,
    checks: Optional[Union[str, Sequence[str]]],
    skip_checks: Optional[Union[str, Sequence[str]]],
    baseline: Optional[Union[str, "os.PathLike[str]"]],
    update_baseline: bool,
    exclude_tools: Optional[Sequence[str]],
    follow_authorization_server: bool,
    trace_file: Optional[Union[str, "os.PathLike[str]"]],
    state_dir: Optional[Union[str, "os.PathLike[str]"]],
    resolver: Optional[str],
    fail_on: str,
    min_confidence: str,
    judge_timeout: float,
    judge_budget: float,
    allow_private_addresses: bool = False,
) -> Dict[str, Any]:
    return dict(
        token=token,
        headers=_headers(headers),
        env=list(env) if env is not None else None,
        rate=rate,
        checks=_list(checks),
        skip_checks=_list(skip_checks),
        baseline=os.fspath(baseline) if baseline is not None else None,
        update_baseline=update_baseline,
        exclude_tools=list(exclude_tools) if exclude_tools is not None else None,
        follow_authorization_server=follow_authorization_server,
        trace_file=os.fspath(trace_file) if trace_file is not None else None,
        state_dir=os.fspath(state_dir) if state_dir is not None else None,
        resolver=resolver,
        fail_on=fail_on,
        min_confidence=min_confidence,
        judge_timeout=judge_timeout,
        judge_budget=judge_budget,
        allow_private_addresses=allow_private_addresses,
    )


def scan(
    target: Union[str, Sequence[str]],
    *,
    token: Optional[str] = None,
    headers: Optional[Union[Mapping[str, str], Sequence[str]]] = None,
    env: Optional[Sequence[str]] = None,
    rate: int = 5,
    checks: Optional[Union[str, Sequence[str]]] = None,
    skip_checks: Optional[Union[str, Sequence[str]]] = None,
    baseline: Optional[Union[str, "os.PathLike[str]"]] = None,
    update_baseline: bool = False,
    exclude_tools: Optional[Sequence[str]] = None,
    follow_authorization_server: bool = True,
    allow_private_addresses: bool = False,
    trace_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    state_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    resolver: Optional[str] = None,
    fail_on: str = "high",
    min_confidence: str = "low",
    judge: Optional[Judge] = None,
    judge_timeout: float = 30.0,
    judge_budget: float = 300.0,
) -> Report:
    """``mcpprobe scan``: the whole pipeline against ``target`` (an http(s) URL, or a stdio
    server's command as a list, which gets only PATH, HOME, LANG and the variables ``env``
    names; ``token`` defaults to ``$MCPPROBE_TOKEN``, as the CLI's ``--token`` does; scans of
    one host share its rate limit, at the lowest ``rate`` among those running). The gate
    applies exactly as in the CLI: a target whose host is not loopback needs
    an ownership proof (``mcpprobe verify``) in the state folder (``state_dir``, else
    ``$MCPPROBE_STATE_DIR``, else ``~/.local/state/mcpprobe``), and a host name that resolves
    to an address that is not public (private, link-local, loopback beside other addresses, …)
    is refused unless ``allow_private_addresses=True`` (``--allow-private-addresses``). Blocks,
    with the GIL released;
    Ctrl-C cancels the scan (its sessions are still closed) and raises KeyboardInterrupt."""
    kwargs = _scan_kwargs(
        token, headers, env, rate, checks, skip_checks, baseline, update_baseline,
        exclude_tools, follow_authorization_server, trace_file, state_dir, resolver,
        fail_on, min_confidence, judge_timeout, judge_budget, allow_private_addresses,
    )
    judge_args = _judge(judge, judge_timeout, loop_bound=False)
    return _finish(_call(_native.scan, _target(target), kwargs, judge=judge_args))


async def scan_async(
    target: Union[str, Sequence[str]],
    *,
    token: Optional[str] = None,
    headers: Optional[Union[Mapping[str, str], Sequence[str]]] = None,
    env: Optional[Sequence[str]] = None,
    rate: int = 5,
    checks: Optional[Union[str, Sequence[str]]] = None,
    skip_checks: Optional[Union[str, Sequence[str]]] = None,
    baseline: Optional[Union[str, "os.PathLike[str]"]] = None,
    update_baseline: bool = False,
    exclude_tools: Optional[Sequence[str]] = None,
    follow_authorization_server: bool = True,
    allow_private_addresses: bool = False,
    trace_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    state_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    resolver: Optional[str] = None,
    fail_on: str = "high",
    min_confidence: str = "low",
    judge: Optional[Judge] = None,
    judge_timeout: float = 30.0,
    judge_budget: float = 300.0,
) -> Report:
    """:func:`scan` as a coroutine. An ``async def`` judge is awaited on this event loop (so
    it may use the loop's clients); a plain judge runs on a thread of its own."""
    kwargs = _scan_kwargs(
        token, headers, env, rate, checks, skip_checks, baseline, update_baseline,
        exclude_tools, follow_authorization_server, trace_file, state_dir, resolver,
        fail_on, min_confidence, judge_timeout, judge_budget, allow_private_addresses,
    )
    judge_args = _judge(judge, judge_timeout, loop_bound=True)
    text = await _call(_native.scan_async, _target(target), kwargs, judge=judge_args)
    return _finish(text)


def fingerprint(tools: Tools) -> str:
    """The tool list's SHA-256 (``mcpprobe fingerprint``): equal for equal lists, whatever
    their key order or ``_meta``."""
    result: str = _call(_native.fingerprint, _bytes(tools))
    return result


def diff(old: Tools, new: Tools) -> Diff:
    """What changed between two tool lists (``mcpprobe diff``)."""
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


def check_ids() -> List[str]:
    """Every check id of the catalogue (``mcpprobe checks``)."""
    result: List[str] = _native.check_ids()
    return result
