# Types of the native module (python/src/lib.rs). Callers use the `mcpprobe` package, which
# wraps these in typed objects and exceptions; every function answers in JSON text.
from typing import Any, Awaitable, Callable, List, Optional, Tuple, Union

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
def scan(
    target: Union[str, List[str]],
    *,
    token: Optional[str] = ...,
    headers: Optional[List[str]] = ...,
    env: Optional[List[str]] = ...,
    rate: int = ...,
    checks: Optional[List[str]] = ...,
    skip_checks: Optional[List[str]] = ...,
    baseline: Optional[str] = ...,
    update_baseline: bool = ...,
    exclude_tools: Optional[List[str]] = ...,
    follow_authorization_server: bool = ...,
    trace_file: Optional[str] = ...,
    state_dir: Optional[str] = ...,
    resolver: Optional[str] = ...,
    fail_on: Optional[str] = ...,
    min_confidence: Optional[str] = ...,
    judge: Optional[_JudgeArgs] = ...,
    judge_timeout: float = ...,
    judge_budget: float = ...,
) -> str: ...
def scan_async(
    target: Union[str, List[str]],
    *,
    token: Optional[str] = ...,
    headers: Optional[List[str]] = ...,
    env: Optional[List[str]] = ...,
    rate: int = ...,
    checks: Optional[List[str]] = ...,
    skip_checks: Optional[List[str]] = ...,
    baseline: Optional[str] = ...,
    update_baseline: bool = ...,
    exclude_tools: Optional[List[str]] = ...,
    follow_authorization_server: bool = ...,
    trace_file: Optional[str] = ...,
    state_dir: Optional[str] = ...,
    resolver: Optional[str] = ...,
    fail_on: Optional[str] = ...,
    min_confidence: Optional[str] = ...,
    judge: Optional[_JudgeArgs] = ...,
    judge_timeout: float = ...,
    judge_budget: float = ...,
) -> Awaitable[str]: ...
def fingerprint(tools: bytes) -> str: ...
def diff(old: bytes, new: bytes) -> str: ...
def exit_code(report: str, *, fail_on: Optional[str] = ..., min_confidence: Optional[str] = ...) -> int: ...
def check_ids() -> List[str]: ...
