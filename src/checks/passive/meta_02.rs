//! META-02: Hidden or manipulative text in what the model reads (rules P1–P6).
//!
//! Metadata: `checks/passive/META-02.toml`. Rules: `src/rules/poisoning.rs`.

use crate::checks::{BoxFuture, Check, Live, Outcome};
use crate::rules::{Document, Input, poisoning};

pub struct Meta02;

pub static CHECK: Meta02 = Meta02;

impl Check for Meta02 {
    fn id(&self) -> &'static str {
        "META-02"
    }

    fn offline(&self, _input: &Input, doc: &Document<'_>) -> Outcome {
        Outcome::Ran(poisoning::run(doc))
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { cx.rules_outcome(self) })
    }
}
