//! BASE-02: Server instructions, prompts or resources changed since the baseline.
//!
//! Metadata: `checks/other/BASE-02.toml`.

use crate::checks::{BoxFuture, Check, Live, Outcome};

pub struct Base02;

pub static CHECK: Base02 = Base02;

impl Check for Base02 {
    fn id(&self) -> &'static str {
        "BASE-02"
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
