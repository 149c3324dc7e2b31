//! INFO-02: Inventory and tool-list fingerprint.
//!
//! Metadata: `checks/other/INFO-02.toml`.


use crate::checks::{BoxFuture, Check, Live, Outcome};
use crate::rules::{Document, Input, InputKind, Json};

pub struct Info02;

pub static CHECK: Info02 = Info02;

/// "12 tools, 0 prompts, 3 resources, 1 resource template" for an inventory object.
pub fn counts(inventory: &Json<'_>) -> String {
    let n = |k: &str| inventory.get(k).and_then(Json::as_array).map(<[_]>::len).unwrap_or(0);
    format!(
        "{} tools, {} prompts, {} resources, {} resource templates",
        n("tools"),
        n("prompts"),
        n("resources"),
        n("resourceTemplates")
    )
}

impl Check for Info02 {
    fn id(&self) -> &'static str {
        "INFO-02"
    }

    fn offline(&self, input: &Input, _doc: &Document<'_>) -> Outcome {
        if input.kind != InputKind::Tools {
            return Outcome::Skipped("the input is a card, not an inventory".into());
        }
        let sha = input.tools_sha256();
        let finding = self.meta().finding(None)
            .pointer("/tools")
            .message(format!("{}; tool-list sha256 {sha}", counts(&input.value)))
            .build();
        Outcome::Ran(vec![finding])
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(inv), Some(input)) = (cx.inventory, cx.input) else {
                return Outcome::Skipped("no inventory could be read".into());
            };
            let mut b = self.meta().finding(None)
                .pointer("/tools")
                .message(format!("{}; tool-list sha256 {}", counts(&input.value), input.tools_sha256()));
            if let Some(call) = &inv.first_tools_call {
                b = b.exchange(call.exchange.clone());
            }
            Outcome::Ran(vec![b.build()])
        })
    }
}
