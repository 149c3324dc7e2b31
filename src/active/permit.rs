//! The run-time half of the active gate: a `tools/call` leaves mcpprobe only inside the scope of
//! a [`Permit`], and a permit exists only for one active check's calls, made from the gate's
//! [`Authorised`] token. The HTTP client ([`crate::net::Client`]) and the stdio writer both ask
//! [`admit`] before sending anything; outside a permit (every passive check, the ladder, the
//! inventory) every `tools/call` is refused.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use super::CallableSet;
use crate::gate::Authorised;

tokio::task_local! {
    static PERMIT: Arc<Permit>;
}

/// What one active check may call: these tools, at most `budget` times in all, and never a
/// tool outside the call rule's set for the run ([`CallableSet`]), whatever the check planned.
#[derive(Debug)]
pub struct Permit {
    check: &'static str,
    allowed: CallableSet,
    tools: BTreeSet<String>,
    /// `resources/read` is allowed too (ACT-08's template reads).
    reads: bool,
    budget: u32,
    used: AtomicU32,
}

impl Permit {
    /// A permit for `check`'s calls of `tools`; the gate's token is the only way to one.
    pub fn new(
        _authorised: &Authorised,
        allowed: &CallableSet,
        check: &'static str,
        tools: BTreeSet<String>,
        budget: u32,
        reads: bool,
    ) -> Arc<Permit> {
        Arc::new(Permit {
            check,
            allowed: allowed.clone(),
            tools,
            reads,
            budget,
            used: AtomicU32::new(0),
        })
    }

    /// Calls admitted so far.
    pub fn used(&self) -> u32 {
        self.used.load(Ordering::SeqCst)
    }

    fn spend(&self) -> Result<(), String> {
        let before = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u < self.budget).then_some(u + 1)
            });
        before.map(|_| ()).map_err(|_| {
            format!(
                "refused: {} spent its budget of {} calls",
                self.check, self.budget
            )
        })
    }

    fn take(&self, tool: &str) -> Result<(), String> {
        if !self.allowed.contains(tool) {
            return Err(format!(
                "tools/call of `{}` refused: the call rule does not allow it in this run",
                crate::util::escape::escape(tool)
            ));
        }
        if !self.tools.contains(tool) {
            return Err(format!(
                "tools/call of `{}` refused: not a tool {} may call (scope, exclusions, annotations, effects)",
                crate::util::escape::escape(tool),
                self.check
            ));
        }
        self.spend().map_err(|e| format!("tools/call {e}"))
    }
}

/// Runs `f` with `permit` in force.
pub async fn within<F: std::future::Future>(permit: Arc<Permit>, f: F) -> F::Output {
    PERMIT.scope(permit, f).await
}

/// Whether `msg` (one JSON-RPC message, or a batch) may be sent: every `tools/call` in it must
/// name a tool of the permit in force, and every `resources/read` needs a permit that reads,
/// within its budget. Anything else passes.
pub fn admit(msg: &Value) -> Result<(), String> {
    let calls: Vec<&Value> = match msg {
        Value::Array(batch) => batch.iter().collect(),
        one => vec![one],
    };
    for m in calls {
        if m.get("method").and_then(Value::as_str) == Some("resources/read") {
            match PERMIT.try_with(|p| if p.reads { p.spend() } else { Err(format!("resources/read refused: not a read {} may make", p.check)) }) {
                Ok(r) => r?,
                Err(_) => return Err("resources/read refused: no active check's permit (only the gate's authorisation makes one)".into()),
            }
            continue;
        }
        if m.get("method").and_then(Value::as_str) != Some("tools/call") {
            continue;
        }
        let name = m
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        match PERMIT.try_with(|p| p.take(name)) {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "tools/call of `{}` refused: no active check's permit (only the gate's authorisation makes one)",
                    crate::util::escape::escape(name)
                ));
            }
        }
    }
    Ok(())
}

/// Whether a request body holds a `tools/call` or a `resources/read` (or, not JSON, names one).
pub fn names_a_call(body: &[u8]) -> bool {
    body.windows(10).any(|w| w == b"tools/call") || body.windows(14).any(|w| w == b"resources/read")
}

/// [`admit`] over a request body as it will be sent. Bytes that are not JSON but name
/// `tools/call` are refused too (a lenient server might still read a call in them).
pub fn admit_body(body: &[u8]) -> Result<(), String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => admit(&v),
        Err(_)
            if body
                .windows(10)
                .any(|w| w == b"tools/call" || w == b"resources/") =>
        {
            Err("a body that is not JSON but names tools/call or resources/ is never sent".into())
        }
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}})
    }

    #[test]
    fn calls_pass_only_inside_a_permit_for_their_tool_and_within_its_budget() {
        // Outside any permit: every tools/call and resources/read is refused, the rest passes.
        assert!(admit(&call("get_x")).is_err());
        assert!(
            admit(&json!({"method": "resources/read", "params": {"uri": "file:///x"}})).is_err()
        );
        assert!(admit(&json!({"method": "tools/list"})).is_ok());
        assert!(
            admit(&json!([{"method": "tools/list"}, call("get_x")])).is_err(),
            "a batch hides nothing"
        );
        assert!(
            admit_body(b"{\"method\": \"tools/call\"").is_err(),
            "not JSON but a call"
        );
        let auth = crate::gate::Authorised::for_tests(&crate::engine::ActiveRequest {
            authorised_by: Some("t".into()),
            scope: Some("*".into()),
            verify: true,
            ..Default::default()
        })
        .expect("authorised");
        let allowed = CallableSet::of(["get_x".to_string(), "get_y".to_string()].into());
        let permit = Permit::new(
            &auth,
            &allowed,
            "ACT-01",
            ["get_x".to_string(), "delete_y".to_string()].into(),
            2,
            false,
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let results = rt.block_on(within(permit.clone(), async {
            vec![
                admit(&call("get_x")),
                admit(&call("delete_y")),
                admit(&json!({"method": "resources/read"})),
                admit(&call("get_x")),
                admit(&call("get_x")),
            ]
        }));
        assert!(results[0].is_ok());
        // Planned by the check, but outside the call rule's set: refused all the same.
        assert!(
            results[1]
                .as_ref()
                .is_err_and(|e| e.contains("the call rule does not allow it"))
        );
        assert!(results[2].as_ref().is_err_and(|e| e.contains("not a read")));
        assert!(results[3].is_ok());
        assert!(
            results[4]
                .as_ref()
                .is_err_and(|e| e.contains("budget of 2"))
        );
        assert_eq!(permit.used(), 2);
        // And the gate refuses to mint one without its flags.
        assert!(
            crate::gate::Authorised::for_tests(&crate::engine::ActiveRequest::default()).is_err()
        );
    }
}
