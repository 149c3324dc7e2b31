//! META-03: What the tools can do (capability classes; rules C1–C9).
//!
//! Metadata: `checks/passive/META-03.toml`. Rules: `src/rules/capabilities.rs`.

use crate::checks::{BoxFuture, Check, Live, Outcome};
use crate::rules::{Document, Input, InputKind, capabilities};

pub struct Meta03;

pub static CHECK: Meta03 = Meta03;

impl Check for Meta03 {
    fn id(&self) -> &'static str {
        "META-03"
    }

    fn offline(&self, input: &Input, doc: &Document<'_>) -> Outcome {
        match input.kind {
            InputKind::AgentCard => Outcome::Skipped("an agent card lists skills, not tools".into()),
            InputKind::Tools | InputKind::ServerCard => Outcome::Ran(capabilities::run(doc)),
        }
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { cx.rules_outcome(self) })
    }
}
