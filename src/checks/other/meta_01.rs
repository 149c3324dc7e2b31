//! META-01: Semantic review by a judge the user plugs in.
//!
//! Metadata: `checks/other/META-01.toml`. The judge itself is `crate::judge`: the engine runs
//! it as a stage of its own (after the sessions are closed, within its budgets) and records
//! this check's outcome; without a judge the check says it was not configured.

use crate::checks::{BoxFuture, Check, Document, Input, Live, Outcome};

pub struct Meta01;

pub static CHECK: Meta01 = Meta01;

/// Why META-01 did not run: off by default (SPEC §12).
pub const NO_JUDGE: &str = "no judge configured (off by default): --judge-command CMD, or judge= in the Python package; mcpprobe calls no model itself";

impl Check for Meta01 {
    fn id(&self) -> &'static str {
        "META-01"
    }

    fn offline(&self, _input: &Input, _doc: &Document<'_>) -> Outcome {
        Outcome::Skipped(NO_JUDGE.into())
    }

    fn live<'a>(&'a self, _cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async { Outcome::Skipped(NO_JUDGE.into()) })
    }
}
