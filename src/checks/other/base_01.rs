//! BASE-01: Tool definitions changed since the baseline (rug pull).
//!
//! Metadata: `checks/other/BASE-01.toml`.

use crate::checks::{BoxFuture, Check, Live, Outcome};

pub struct Base01;

pub static CHECK: Base01 = Base01;

impl Check for Base01 {
    fn id(&self) -> &'static str {
        "BASE-01"
    }

    /// Reports what the baseline stage found (the comparison is [`crate::baseline::compare`]).
    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match cx.baseline {
                Some(view) => view.outcome(self.id()),
                None => Outcome::Skipped("no --baseline FILE given".into()),
            }
        })
    }
}
