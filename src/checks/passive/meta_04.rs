//! META-04: Tool definition problems (rules S1–S6, N1).
//!
//! Metadata: `checks/passive/META-04.toml`. Rules: `src/rules/definitions.rs`.

use crate::checks::{BoxFuture, Check, Live, Outcome};
use crate::rules::{Document, Input, InputKind, definitions};

pub struct Meta04;

pub static CHECK: Meta04 = Meta04;

impl Check for Meta04 {
    fn id(&self) -> &'static str {
        "META-04"
    }

    fn offline(&self, input: &Input, doc: &Document<'_>) -> Outcome {
        match input.kind {
            InputKind::Tools => Outcome::Ran(definitions::run(doc)),
            InputKind::ServerCard => {
                Outcome::Skipped("a server card's tools are checked by CARD-01 (SC10)".into())
            }
            InputKind::AgentCard => Outcome::Skipped("an agent card lists skills, not tools".into()),
        }
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let mut findings = match cx.rules_outcome(self) {
                Outcome::Ran(f) => f,
                other => return other,
            };
            // N1: the pages of the live lists that could not be read.
            for note in cx.inventory.map(|i| i.notes.as_slice()).unwrap_or_default() {
                findings.push(crate::checks::finding(self, Some("N1")).pointer("/tools").message(note.clone()).build());
            }
            Outcome::Ran(findings)
        })
    }
}
