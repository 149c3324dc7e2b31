//! ACT-06: Tools callable without the authorization the server advertises.
//!
//! Metadata: `checks/active/ACT-06.toml`. When the server advertises OAuth (its RFC 9728
//! protected-resource metadata was found), one tool this run may call is called once on the
//! same session without the user's credentials: a result is a finding; 401 is what it should
//! answer.

use serde_json::Value;

use crate::active::{
    ActiveCheck, Answer, Callable, MadeCall, PlannedCall, StageEnv, benign_arguments,
};
use crate::checks::{Check, Outcome, finding};

pub struct Act06;

pub static CHECK: Act06 = Act06;

impl Check for Act06 {
    fn id(&self) -> &'static str {
        "ACT-06"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

impl ActiveCheck for Act06 {
    fn plan(&self, tools: &[Callable<'_>], budget: usize, env: &StageEnv) -> Vec<PlannedCall> {
        if !env.oauth_advertised || !env.anonymous_possible || budget == 0 {
            return Vec::new();
        }
        tools
            .first()
            .map(|t| PlannedCall {
                kind: crate::active::CallKind::Anonymous,
                tool: t.name.to_string(),
                arguments: benign_arguments(t.tool, &[]),
                canary: None,
                purpose: "one call without credentials on a server that advertises OAuth".into(),
                pointer: Some(format!("/tools/{}", t.index)),
                tag: String::new(),
            })
            .into_iter()
            .collect()
    }

    fn nothing_planned(&self, env: &StageEnv) -> Option<String> {
        if !env.oauth_advertised {
            Some(
                "the server advertises no OAuth (no protected-resource metadata): nothing to test"
                    .into(),
            )
        } else if !env.anonymous_possible {
            Some("this transport cannot send a call without the session's credentials".into())
        } else {
            None
        }
    }

    fn judge(&self, calls: &[MadeCall], _env: &StageEnv) -> Outcome {
        let mut out = Vec::new();
        for c in calls {
            // `isError: true` proves nothing either way (SPEC §13): only a result counts.
            match &c.answer {
                Answer::Result(r) if r.get("isError") != Some(&Value::Bool(true)) => {}
                _ => continue,
            }
            let mut b = finding(&CHECK, None)
                .tool(c.planned.tool.clone())
                .message(format!("{}: it got a result, not 401", c.planned.purpose))
                .exchange(c.exchange.clone());
            if let Some(p) = &c.planned.pointer {
                b = b.pointer(p.clone());
            }
            out.push(b.build());
        }
        Outcome::Ran(out)
    }
}
