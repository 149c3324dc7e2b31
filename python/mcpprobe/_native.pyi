# Types of the native module (python/src/lib.rs). Callers use the `mcpprobe` package, which
# wraps these in typed objects and exceptions; every function answers in JSON text.
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple, Union

VERSION: str

class NativeUsageError(Exception): ...

_JudgeArgs = Tuple[
    str, Callable[[str, Callable[[bool, str], None]], None], Optional[Callable[[str], Awaitable[str]]]
]

def check(
    tools: bytes,
    *,
    target: str,
    kind: Optional[str] = ...,
    checks: Optional[List[str]] = ...,
    skip_checks: Optional[List[str]] = ...,
    fail_on: Optional[str] = ...,
    min_confidence: Optional[str] = ...,
    judge: Optional[_JudgeArgs] = ...,
    judge_timeout: float = ...,
    judge_budget: float = ...,
    time_cap: float = ...,
) -> str: ...
# `options` holds every key of mcpprobe._scan_kwargs (token, headers, env, rate, checks,
# skip_checks, baseline, update_baseline, exclude_tools, follow_authorization_server, trace_file,
# state_dir, resolver, fail_on, min_confidence, judge_timeout, judge_budget,
# allow_private_addresses).
def scan(target: Union[str, List[str]], options: Dict[str, Any], *, judge: Optional[_JudgeArgs] = ...) -> str: ...
def scan_async(
    target: Union[str, List[str]], options: Dict[str, Any], *, judge: Optional[_JudgeArgs] = ...
) -> Awaitable[str]: ...
def fingerprint(tools: bytes) -> str: ...
def diff(old: bytes, new: bytes) -> str: ...
def exit_code(report: str, *, fail_on: Optional[str] = ..., min_confidence: Optional[str] = ...) -> int: ...
def check_ids() -> List[str]: ...
