//! The leaf the network floor can see: the tokens the gate mints and the run-time half of
//! the active gate. A `tools/call` leaves mcpprobe only inside the scope of a [`Permit`], and
//! a permit exists only for one active check's calls, made from the gate's [`Authorised`]
//! token. The HTTP client ([`crate::net::Client`]) and the stdio writer both ask [`admit`]
//! before sending anything; outside a permit (every passive check, the ladder, the inventory)
//! every `tools/call` is refused. The scan's client exists only for an [`Admission`], the
//! gate's word that the target did not opt out and is the user's.
//!
//! Only the gate mints an [`Authorised`] or an [`Admission`] (`tests/layering.rs` holds every
//! call of their `mint` to `src/gate/`); code outside the crate cannot build either.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

/// `--active` and what authorises it (SPEC §1.3). The gate decides; the engine records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActiveRequest {
    pub authorised_by: Option<String>,
    pub scope: Option<String>,
    /// Require a proof made within this run.
    pub verify: bool,
    /// `--include-unannotated`: tools without annotations may be called (SPEC §13).
    pub include_unannotated: bool,
    /// `--dry-run`: say what each active check would call, call nothing.
    pub dry_run: bool,
}

/// The gate's authorisation of an active run (SPEC §1.3, §13). Only the gate mints one: from
/// `--active --authorised-by --scope --verify` and an ownership proof made within this run
/// (`gate::Owned::authorise_active`, or a stdio server mcpprobe starts itself,
/// `gate::authorise_stdio_active`). Nothing outside the crate can build one (private
/// fields), and without one no `tools/call` can be sent: [`Permit::new`] needs it.
///
/// Code outside the crate cannot make one:
///
/// ```compile_fail,E0451
/// let forged = mcpprobe::permit::Authorised {
///     authorised_by: "me".into(),
///     scope: "*".into(),
///     proof: "none".into(),
/// };
/// ```
#[derive(Debug)]
pub struct Authorised {
    authorised_by: String,
    scope: String,
    proof: String,
}

impl Authorised {
    /// The gate's mint, after it checked the flags and the proof.
    pub(crate) fn mint(authorised_by: String, scope: String, proof: String) -> Authorised {
        Authorised {
            authorised_by,
            scope,
            proof,
        }
    }
    pub fn authorised_by(&self) -> &str {
        &self.authorised_by
    }
    /// `--scope` as given.
    pub fn scope(&self) -> &str {
        &self.scope
    }
    /// The proof this run made ("local: …", "dns-txt, valid until …").
    pub fn proof(&self) -> &str {
        &self.proof
    }
}

/// The gate's word that a target passed it (no opt-out, ownership proven in this run): the
/// URL and the addresses the scan's client may reach, and nothing else.
#[derive(Debug, Clone)]
pub struct Admission {
    url: url::Url,
    addrs: Vec<IpAddr>,
}

impl Admission {
    /// The gate's mint, for a target it cleared.
    pub(crate) fn mint(url: url::Url, addrs: Vec<IpAddr>) -> Admission {
        Admission { url, addrs }
    }
    pub fn url(&self) -> &url::Url {
        &self.url
    }
    pub fn addresses(&self) -> &[IpAddr] {
        &self.addrs
    }
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermitError {
    #[error(
        "tools/call of `{tool}` refused: no active check's permit (only the gate's authorisation makes one)"
    )]
    NoPermit { tool: String },
    #[error(
        "resources/read refused: no active check's permit (only the gate's authorisation makes one)"
    )]
    NoReadPermit,
    #[error("tools/call of `{tool}` refused: the call rule does not allow it in this run")]
    NotCallable { tool: String },
    #[error(
        "tools/call of `{tool}` refused: not a tool {check} may call (scope, exclusions, annotations, effects)"
    )]
    NotPlanned { tool: String, check: &'static str },
    #[error("{what} refused: {check} spent its budget of {budget} calls")]
    Budget {
        what: &'static str,
        check: &'static str,
        budget: u32,
    },
    #[error("resources/read refused: not a read {check} may make")]
    NotARead { check: &'static str },
    #[error("a body that is not JSON but names tools/call or resources/ is never sent")]
    Opaque,
}

/// The names the call rule allows in one run: made only by `active::callable` from the
/// policy's decisions, carried by every [`Permit`], and checked again for every `tools/call`
/// (whatever a check planned).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallableSet(BTreeSet<String>);

impl CallableSet {
    pub(crate) fn of(names: BTreeSet<String>) -> CallableSet {
        CallableSet(names)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

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

    fn spend(&self, what: &'static str) -> Result<(), PermitError> {
        let before = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u < self.budget).then_some(u + 1)
            });
        before.map(|_| ()).map_err(|_| PermitError::Budget {
            what,
            check: self.check,
            budget: self.budget,
        })
    }

    fn take(&self, tool: &str) -> Result<(), PermitError> {
        if !self.allowed.contains(tool) {
            return Err(PermitError::NotCallable {
                tool: crate::util::escape::escape(tool),
            });
        }
        if !self.tools.contains(tool) {
            return Err(PermitError::NotPlanned {
                tool: crate::util::escape::escape(tool),
                check: self.check,
            });
        }
        self.spend("tools/call")
    }
}

/// Runs `f` with `permit` in force.
pub async fn within<F: std::future::Future>(permit: Arc<Permit>, f: F) -> F::Output {
    PERMIT.scope(permit, f).await
}

/// Whether `msg` (one JSON-RPC message, or a batch) may be sent: every `tools/call` in it must
/// name a tool of the permit in force, and every `resources/read` needs a permit that reads,
/// within its budget. Anything else passes.
pub fn admit(msg: &Value) -> Result<(), PermitError> {
    let calls: Vec<&Value> = match msg {
        Value::Array(batch) => batch.iter().collect(),
        one => vec![one],
    };
    for m in calls {
        if m.get("method").and_then(Value::as_str) == Some("resources/read") {
            let read = PERMIT.try_with(|p| {
                if p.reads {
                    p.spend("resources/read")
                } else {
                    Err(PermitError::NotARead { check: p.check })
                }
            });
            match read {
                Ok(r) => r?,
                Err(_) => return Err(PermitError::NoReadPermit),
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
                return Err(PermitError::NoPermit {
                    tool: crate::util::escape::escape(name),
                });
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
pub fn admit_body(body: &[u8]) -> Result<(), PermitError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => admit(&v),
        Err(_)
            if body
                .windows(10)
                .any(|w| w == b"tools/call" || w == b"resources/") =>
        {
            Err(PermitError::Opaque)
        }
        Err(_) => Ok(()),
    }
}

/// `*` (any run) and `?` (one character) globs, linear in both lengths.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
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
        let auth = Authorised::mint("t".into(), "*".into(), "test".into());
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
                .is_err_and(|e| e.to_string().contains("the call rule does not allow it"))
        );
        assert!(
            results[2]
                .as_ref()
                .is_err_and(|e| e.to_string().contains("not a read"))
        );
        assert!(results[3].is_ok());
        assert_eq!(
            results[4].as_ref().map_err(ToString::to_string),
            Err("tools/call refused: ACT-01 spent its budget of 2 calls".to_string())
        );
        assert_eq!(permit.used(), 2);
    }
}
