//! Exit codes (SPEC §4). The output format never changes them.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Scan complete, nothing at or above `--fail-on`.
    Clean,
    /// Scan complete, findings at or above `--fail-on`.
    Findings,
    /// Stopped by the gate: opted out, ownership not proven or expired, active mode not authorised.
    Gate,
    /// Scan incomplete: target unreachable, not an MCP endpoint, a check errored.
    Incomplete,
    /// Usage or configuration error.
    Usage,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Clean => 0,
            ExitCode::Findings => 1,
            ExitCode::Gate => 2,
            ExitCode::Incomplete => 3,
            ExitCode::Usage => 64,
        }
    }
}
