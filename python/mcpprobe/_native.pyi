# Types of the native module (python/src/lib.rs). Callers use the `mcpprobe` package, which
# wraps these in typed objects (its enums Severity, Confidence, Outcome and Status stand for the
# names below) and exceptions; every function answers in JSON text. The names are checked
# again by the engine, which refuses any other as a NativeUsageError.
from typing import Any, Awaitable, Callable, Dict, List, Literal, Optional, Tuple, Union

VERSION: str

class NativeUsageError(Exception): ...

_Severity = Literal["info", "low", "medium", "high", "critical"]
_FailOn = Union[_Severity, Literal["none"]]
_Confidence = Literal["low", "medium", "high"]
_Kind = Literal["tools", "server-card", "agent-card"]

_JudgeArgs = Tuple[
    str, Callable[[str, Callable[[bool, str], None]], None], Optional[Callable[[str], Awaitable[str]]]
]

def check(
    tools: bytes,
    *,
    target: str,
    kind: Optional[_Kind] = ...,
    checks: Optional[List[str]] = ...,
    skip_checks: Optional[List[str]] = ...,
    fail_on: Optional[_FailOn] = ...,
    min_confidence: Optional[_Confidence] = ...,
    judge: Optional[_JudgeArgs] = ...,
    judge_timeout: float = ...,
    judge_budget: float = ...,
    time_cap: float = ...,
) -> str: ...
# `options` holds every key of mcpprobe._scan_kwargs (token, headers, env, rate, checks,
# skip_checks, baseline, update_baseline, exclude_tools, follow_authorization_server,
# allow_private_addresses, trace_file, state_dir, resolver, fail_on, min_confidence,
# judge_timeout, judge_budget): the scan's fields of mcpprobe.Options.
def scan(target: Union[str, List[str]], options: Dict[str, Any], *, judge: Optional[_JudgeArgs] = ...) -> str: ...
def scan_async(
    target: Union[str, List[str]], options: Dict[str, Any], *, judge: Optional[_JudgeArgs] = ...
) -> Awaitable[str]: ...
# `places` holds home, project, client_configs (a list of paths) and platform.
def discover(places: Dict[str, Any]) -> str: ...
def scan_discovered(
    options: Dict[str, Any], places: Dict[str, Any], *, dry_run: bool = ..., trust_project: bool = ...
) -> str: ...
# Both release the GIL while they parse, hash and compare.
def fingerprint(tools: bytes) -> str: ...
def diff(old: bytes, new: bytes) -> str: ...
def exit_code(report: str, *, fail_on: Optional[_FailOn] = ..., min_confidence: Optional[_Confidence] = ...) -> int: ...
def check_ids() -> List[str]: ...
