//! The gate (SPEC §1.1–1.3): opt-out first, then the ownership proof, then — only for
//! `--active` — the authorisation. The order is a type-level guarantee:
//!
//! `HttpTarget` → [`clear_opt_out`] → [`Cleared`] → [`prove_ownership`] → [`Owned`] →
//! [`Owned::client`] → a [`Client`] that can send requests to the target.
//!
//! `Cleared` and `Owned` have private fields and no public constructor, and the network hands
//! out a target client only for an `Owned`; before that, the only request the target can get
//! is the opt-out GET.
//!
//! The addresses a host name resolves to are judged before any HTTP request (SPEC §1.2, §7,
//! "A proof names its addresses"): unless they are all loopback (the local proof), each must
//! be public ([`crate::net::scope::classify`], the rule AUTH-03's request obeys too), or the
//! scan is refused ([`Stop::PrivateAddress`]) before the opt-out GET, so a name proven by DNS
//! TXT cannot point the scan, `--active` included, into the scanner host's own network. The
//! addresses judged are the ones every later request is pinned to (no second lookup).

pub mod state;

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use secrecy::ExposeSecret as _;
use url::Url;

use crate::model::GateRecord;
use crate::net::dns::{Dns, DnsFailure, is_loopback};
use crate::net::scope;
use crate::net::{Client, NetError, Network};
use state::{StateDir, StoredProof, normalise_host, record_name, record_text, secret_matches};

/// The text of a TXT record that opts a host out of every scan.
pub const OPT_OUT: &str = "mcpprobe-opt-out=all";

/// An HTTP(S) target as the user gave it.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub url: Url,
    /// The host name (lowercase, no trailing dot), or the IP literal as text.
    pub host: String,
    /// Set when the URL names an IP address (no DNS name: only the HTTP opt-out applies).
    pub ip: Option<IpAddr>,
}

/// Why a target URL cannot be scanned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("{url:?} is not a URL: {reason}")]
    NotAUrl { url: String, reason: String },
    #[error("{0:?}: only http:// and https:// targets can be scanned (or --stdio)")]
    Scheme(String),
    #[error("{0:?} has no host")]
    NoHost(String),
    #[error(
        "the target URL carries credentials (user:password@); pass them with --header or --token, which are redacted everywhere"
    )]
    Credentials,
    #[error("{url:?}: {host:?} is not a DNS host name")]
    BadHost { url: String, host: String },
}

impl HttpTarget {
    pub fn parse(raw: &str) -> Result<HttpTarget, TargetError> {
        let url = Url::parse(raw).map_err(|e| TargetError::NotAUrl {
            url: raw.to_string(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TargetError::Scheme(raw.to_string()));
        }
        // The HTTP stack would send them as Basic credentials with every request, the
        // anonymous view of AUTH-01 included, and the URL is shown in every report.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(TargetError::Credentials);
        }
        let (host, ip) = match url.host() {
            Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
            Some(url::Host::Domain(d)) => (
                normalise_host(d).map_err(|_| TargetError::BadHost {
                    url: raw.to_string(),
                    host: d.to_string(),
                })?,
                None,
            ),
            None => return Err(TargetError::NoHost(raw.to_string())),
        };
        Ok(HttpTarget { url, host, ip })
    }
}

/// Why the pipeline stopped before the scan.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// The target opted out (DNS TXT or the HTTP opt-out): exit 2.
    #[error(transparent)]
    OptedOut(#[from] OptedOut),
    /// Ownership not proven or expired: exit 2.
    #[error(transparent)]
    Refused(#[from] NotProven),
    /// The target cannot be reached at all (its name does not resolve): exit 3.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// The host name resolves to an address that is not public (loopback beside other
    /// addresses, private, link-local, CGNAT, unique-local, NAT64, benchmark, documentation,
    /// reserved …) and `--allow-private-addresses` was not given: exit 2, nothing sent.
    #[error(transparent)]
    PrivateAddress(#[from] PrivateAddress),
}

/// The target opted out of scans (SPEC §1.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptedOut {
    #[error(
        "{host} opted out of mcpprobe scans (DNS TXT {name} says {OPT_OUT}); nothing was sent to it"
    )]
    Dns { host: String, name: String },
    #[error(
        "{host} opted out of mcpprobe scans (GET /.well-known/mcpprobe-opt-out answered 200); that GET was the only request sent"
    )]
    Http { host: String },
}

/// The target's host name gave no address to scan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// The name does not exist or has no address record.
    #[error("{host} does not resolve ({via}): nothing was sent")]
    NoAddress {
        host: String,
        /// Where the question went ([`Dns::source`]).
        via: String,
    },
    #[error("cannot resolve {host}: {failure}")]
    Lookup { host: String, failure: DnsFailure },
}

/// A DNS-named target resolving to addresses that are not public, refused by
/// [`AddressRule::PublicOnly`] (SPEC §7): each such address with its range, and the public
/// addresses beside them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{host} resolves to {}{}; mcpprobe does not send a DNS-named scan into the network of the host it runs on, and nothing was sent to {host} (scan it anyway with --allow-private-addresses, or allow_private_addresses = true for a daemon target)",
    named(.refused),
    beside(.public)
)]
pub struct PrivateAddress {
    pub host: String,
    pub refused: Vec<(IpAddr, scope::Class)>,
    pub public: Vec<IpAddr>,
}

/// `10.1.2.3, in the private (RFC 1918) range 10.0.0.0/8; …`
fn named(refused: &[(IpAddr, scope::Class)]) -> String {
    let named: Vec<String> = refused
        .iter()
        .map(|(addr, class)| format!("{addr}, in {class}"))
        .collect();
    named.join("; ")
}

/// ` (beside the public address 93.184.216.34: …)`, or nothing when there is none.
fn beside(public: &[IpAddr]) -> String {
    if public.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = public.iter().map(IpAddr::to_string).collect();
    format!(
        " (beside the public address{} {}: a mix is refused the same way)",
        if public.len() == 1 { "" } else { "es" },
        shown.join(", ")
    )
}

/// Ownership is not proven for this run (SPEC §1.2).
#[derive(Debug, thiserror::Error)]
pub enum NotProven {
    #[error(
        "{host} is an IP address that is not loopback; ownership is proven with a DNS TXT record on a host name (scan it by that name)"
    )]
    IpAddress { host: String },
    /// The state folder could not be read.
    #[error(transparent)]
    State(#[from] state::StateError),
    #[error(
        "no ownership proof for {host}: run `mcpprobe verify init {host}`, publish the TXT record it prints, then `mcpprobe verify check {host}`"
    )]
    NoProof { host: String },
    #[error(
        "the ownership proof for {host} expired at {}; run `mcpprobe verify check {host}` again",
        .expired_at.to_rfc3339()
    )]
    Expired {
        host: String,
        expired_at: DateTime<Utc>,
    },
    #[error(
        "the verification record is no longer published at {name} (expected TXT \"{expected}\"); publish it again and run `mcpprobe verify check {host}`"
    )]
    Unpublished {
        host: String,
        name: String,
        expected: String,
    },
    #[error("cannot re-check the verification record at {name}: {failure}")]
    Recheck { name: String, failure: DnsFailure },
}

/// Why `verify check` stored no proof.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    State(#[from] state::StateError),
    #[error("no pending token for {host}: run `mcpprobe verify init {host}` first")]
    NoPendingToken { host: String },
    #[error("cannot look up {name} via {via}: {failure}")]
    Lookup {
        name: String,
        via: String,
        failure: DnsFailure,
    },
    /// The record is not (yet) published: `others` TXT records were found beside it.
    #[error(
        "{name} does not hold TXT \"{expected}\" yet ({} via {via}); publish it and try again",
        seen(*.others)
    )]
    NotPublished {
        name: String,
        expected: String,
        others: usize,
        via: String,
    },
}

/// What `verify check` found at the record's name instead.
fn seen(others: usize) -> String {
    if others == 0 {
        "no TXT record".to_string()
    } else {
        format!("{others} other TXT record(s)")
    }
}

/// Which addresses a host name may resolve to for the scan to go on (SPEC §7, "A proof names
/// its addresses"). Names that resolve only to loopback have the local proof either way; IP
/// literals are not judged (only a loopback one can be proven).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AddressRule {
    /// Every address public ([`scope::Range::Public`]); the default.
    #[default]
    PublicOnly,
    /// `--allow-private-addresses`, `allow_private_addresses = true`: any address.
    AllowPrivate,
    /// Only loopback (a server `scan --discover` planned as loopback, with no other proof):
    /// any other address is refused before anything is sent, so a name that answers loopback
    /// when planned and another address now (DNS rebinding) is never contacted.
    LoopbackOnly,
}

/// Where and why the pipeline stopped, with what the gate recorded until then.
#[derive(Debug)]
pub struct Halted {
    pub stop: Stop,
    pub record: GateRecord,
}

fn halt(stop: Stop, record: GateRecord) -> Box<Halted> {
    Box::new(Halted { stop, record })
}

/// A target whose opt-out was checked and which did not opt out.
#[derive(Debug)]
pub struct Cleared {
    target: HttpTarget,
    addrs: Vec<IpAddr>,
    record: GateRecord,
}

/// How ownership was proven.
#[derive(Debug, Clone)]
pub enum Proof {
    /// The target resolves only to loopback addresses, or is a stdio server mcpprobe starts.
    Local(String),
    DnsTxt(StoredProof),
}

/// Which ownership proof a run relied on, as a host may record it: the method, the host and,
/// for a stored proof, when it was verified and until when it holds. Never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofUsed {
    /// `local` or the stored proof's method (`dns-txt`).
    pub method: String,
    pub host: String,
    pub verified_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A target that did not opt out and that the user has proven to own.
#[derive(Debug)]
pub struct Owned {
    cleared: Cleared,
    proof: Proof,
}

pub use crate::permit::Authorised;

fn mint(
    active: &crate::permit::ActiveRequest,
    proof: String,
) -> Result<Authorised, AuthorisationError> {
    authorise_active(
        active.authorised_by.as_deref(),
        active.scope.as_deref(),
        active.verify,
    )?;
    Ok(Authorised::mint(
        active.authorised_by.clone().unwrap_or_default(),
        active.scope.clone().unwrap_or_default(),
        proof,
    ))
}

/// A stdio server mcpprobe starts itself has a local proof made in this run by construction:
/// the handle of the process it spawned is that proof (nothing but [`StdioProcess::spawn`]
/// makes one, and no passive check is ever given one).
///
/// [`StdioProcess::spawn`]: crate::protocol::stdio::StdioProcess::spawn
pub fn authorise_stdio_active(
    active: &crate::permit::ActiveRequest,
    _launched: &crate::protocol::stdio::StdioProcess,
) -> Result<Authorised, AuthorisationError> {
    mint(active, "local: a stdio server started by mcpprobe".into())
}

impl Owned {
    /// The authorisation of an active run against this target: `--verify` is this value
    /// itself (an `Owned` exists only after this run's opt-out check and ownership proof).
    pub fn authorise_active(
        &self,
        active: &crate::permit::ActiveRequest,
    ) -> Result<Authorised, AuthorisationError> {
        let proof = match &self.proof {
            Proof::Local(why) => why.clone(),
            Proof::DnsTxt(p) => format!("dns-txt, valid until {}", p.expires_at.to_rfc3339()),
        };
        mint(active, proof)
    }

    pub fn target(&self) -> &HttpTarget {
        &self.cleared.target
    }
    pub fn proof(&self) -> &Proof {
        &self.proof
    }
    /// The proof this run relied on, without its token.
    pub fn proof_used(&self) -> ProofUsed {
        match &self.proof {
            Proof::Local(_) => ProofUsed {
                method: "local".into(),
                host: self.cleared.target.host.clone(),
                verified_at: None,
                expires_at: None,
            },
            Proof::DnsTxt(p) => ProofUsed {
                method: p.method.clone(),
                host: p.host.clone(),
                verified_at: Some(p.verified_at),
                expires_at: Some(p.expires_at),
            },
        }
    }
    pub fn addresses(&self) -> &[IpAddr] {
        &self.cleared.addrs
    }
    pub fn record(&self) -> &GateRecord {
        &self.cleared.record
    }
    /// The only way to a client that can send requests to the target.
    pub fn client(&self, net: &Network) -> Result<Client, NetError> {
        net.client_for(&self.admission())
    }
    /// What the network floor may know of this target: its URL and addresses.
    fn admission(&self) -> crate::permit::Admission {
        crate::permit::Admission::mint(self.cleared.target.url.clone(), self.cleared.addrs.clone())
    }
}

/// SPEC §1.1. DNS first (no HTTP request when it says opted out), then
/// `GET <origin>/.well-known/mcpprobe-opt-out` (200 = opted out). The addresses are judged by
/// [`AddressRule::PublicOnly`] (see [`clear_opt_out_with`]).
pub async fn clear_opt_out(
    target: HttpTarget,
    dns: &Dns,
    net: &Network,
    record: GateRecord,
) -> Result<Cleared, Box<Halted>> {
    clear_opt_out_with(target, dns, net, record, AddressRule::PublicOnly).await
}

/// [`clear_opt_out`] with the address rule of the scan: between the name's lookup and the
/// opt-out GET, a name that does not resolve only to loopback is refused
/// ([`Stop::PrivateAddress`]) when one of its addresses is not public and `rule` is
/// [`AddressRule::PublicOnly`]; nothing is sent to it then.
pub async fn clear_opt_out_with(
    target: HttpTarget,
    dns: &Dns,
    net: &Network,
    record: GateRecord,
    rule: AddressRule,
) -> Result<Cleared, Box<Halted>> {
    let mut record = record;
    if target.ip.is_none() {
        let name = record_name(&target.host);
        match dns.txt(&name).await {
            Ok(texts) if texts.iter().any(|t| t.contains(OPT_OUT)) => {
                record
                    .opt_out
                    .push(format!("DNS: TXT {name} contains {OPT_OUT}: opted out"));
                let why = OptedOut::Dns {
                    host: target.host.clone(),
                    name,
                };
                return Err(halt(why.into(), record));
            }
            Ok(texts) if texts.is_empty() => record
                .opt_out
                .push(format!("DNS: no TXT record at {name}: not opted out")),
            Ok(_) => record
                .opt_out
                .push(format!("DNS: TXT {name} has no {OPT_OUT}: not opted out")),
            Err(e) => record
                .opt_out
                .push(format!("DNS: TXT {name}: {e} (treated as not opted out)")),
        }
    } else {
        record
            .opt_out
            .push("DNS: the target is an IP address; only the HTTP opt-out applies".into());
    }

    let addrs = match target.ip {
        Some(ip) => vec![ip],
        None => match dns.addresses(&target.host).await {
            Ok(a) => a,
            Err(DnsFailure::NoRecords) => {
                let why = Unreachable::NoAddress {
                    host: target.host.clone(),
                    via: dns.source.clone(),
                };
                return Err(halt(why.into(), record));
            }
            Err(failure) => {
                let why = Unreachable::Lookup {
                    host: target.host.clone(),
                    failure,
                };
                return Err(halt(why.into(), record));
            }
        },
    };
    let shown: Vec<String> = addrs.iter().map(IpAddr::to_string).collect();
    record.addresses = shown.clone();
    if rule == AddressRule::LoopbackOnly && (addrs.is_empty() || !addrs.iter().all(is_loopback)) {
        record.address_check = Some(format!(
            "refused: {} was planned as loopback and now resolves to {}",
            target.host,
            shown.join(", ")
        ));
        let why = NotProven::NoProof {
            host: target.host.clone(),
        };
        return Err(halt(why.into(), record));
    }
    if target.ip.is_none()
        && !addrs.iter().all(is_loopback)
        && let Err(why) = judge_addresses(&target.host, &addrs, rule, &mut record)
    {
        return Err(halt(why.into(), record));
    }

    match net.opt_out_get(&target.url, &addrs).await {
        Ok(resp) => {
            record.exchanges.push(resp.exchange.clone());
            if resp.status == 200 {
                record
                    .opt_out
                    .push("HTTP: GET /.well-known/mcpprobe-opt-out answered 200: opted out".into());
                let why = OptedOut::Http {
                    host: target.host.clone(),
                };
                return Err(halt(why.into(), record));
            }
            record.opt_out.push(format!(
                "HTTP: GET /.well-known/mcpprobe-opt-out answered {}: not opted out",
                resp.status
            ));
        }
        Err((e, exchange)) => {
            record.exchanges.push(exchange);
            record.opt_out.push(format!(
                "HTTP: GET /.well-known/mcpprobe-opt-out: {e} (treated as not opted out)"
            ));
        }
    }
    Ok(Cleared {
        target,
        addrs,
        record,
    })
}

/// The address rule for a host name that does not resolve only to loopback: `Err` names
/// the addresses that are not public, their ranges and the public addresses beside them; the
/// record says what was judged either way.
fn judge_addresses(
    host: &str,
    addrs: &[IpAddr],
    rule: AddressRule,
    record: &mut GateRecord,
) -> Result<(), PrivateAddress> {
    let refused = scope::not_public(addrs);
    if refused.is_empty() {
        record.address_check = Some(format!(
            "every address of {host} is public ({})",
            record.addresses.join(", ")
        ));
        return Ok(());
    }
    if rule == AddressRule::AllowPrivate {
        record.address_check = Some(format!(
            "{}: scanned because --allow-private-addresses was given",
            named(&refused)
        ));
        return Ok(());
    }
    let why = PrivateAddress {
        host: host.to_string(),
        refused,
        public: addrs
            .iter()
            .copied()
            .filter(|a| scope::classify(*a).is_public())
            .collect(),
    };
    record.address_check = Some(format!("refused: {why}"));
    Err(why)
}

/// SPEC §1.2: a local proof when every address is loopback; otherwise a stored DNS-TXT proof
/// that has not expired and whose record is still published.
pub async fn prove_ownership(
    cleared: Cleared,
    dns: &Dns,
    state: &StateDir,
    now: DateTime<Utc>,
) -> Result<Owned, Box<Halted>> {
    let Cleared {
        target,
        addrs,
        mut record,
    } = cleared;
    let refuse = |why: NotProven, mut record: GateRecord| {
        record.ownership = Some(format!("not proven: {why}"));
        Err(halt(why.into(), record))
    };
    if !addrs.is_empty() && addrs.iter().all(is_loopback) {
        let why = format!(
            "local: {} resolves only to loopback ({})",
            target.host,
            record.addresses.join(", ")
        );
        record.ownership = Some(why.clone());
        return Ok(Owned {
            cleared: Cleared {
                target,
                addrs,
                record,
            },
            proof: Proof::Local(why),
        });
    }
    if target.ip.is_some() {
        let host = target.host.clone();
        return refuse(NotProven::IpAddress { host }, record);
    }
    let proof = match state.proof(&target.host) {
        Err(e) => return refuse(e.into(), record),
        Ok(None) => {
            let host = target.host.clone();
            return refuse(NotProven::NoProof { host }, record);
        }
        Ok(Some(p)) => p,
    };
    if proof.expires_at <= now {
        let why = NotProven::Expired {
            host: target.host.clone(),
            expired_at: proof.expires_at,
        };
        return refuse(why, record);
    }
    let name = record_name(&target.host);
    let expected = record_text(proof.token.expose_secret());
    match dns.txt(&name).await {
        Ok(texts)
            if texts
                .iter()
                .any(|t| secret_matches(t.trim().as_bytes(), expected.as_bytes())) =>
        {
            record.ownership = Some(format!(
                "dns-txt: {name} still holds the verification record; proof valid until {}",
                proof.expires_at.to_rfc3339()
            ));
            Ok(Owned {
                cleared: Cleared {
                    target,
                    addrs,
                    record,
                },
                proof: Proof::DnsTxt(proof),
            })
        }
        Ok(_) => {
            let why = NotProven::Unpublished {
                host: target.host.clone(),
                name,
                expected,
            };
            refuse(why, record)
        }
        Err(failure) => refuse(NotProven::Recheck { name, failure }, record),
    }
}

/// SPEC §1.3: `--active` needs `--authorised-by`, `--scope` and `--verify`. Checked before
/// anything is sent.
pub fn authorise_active(
    authorised_by: Option<&str>,
    scope: Option<&str>,
    verify: bool,
) -> Result<(), AuthorisationError> {
    let mut missing = Vec::new();
    if authorised_by.is_none_or(|s| s.trim().is_empty()) {
        missing.push("--authorised-by <name>");
    }
    if scope.is_none_or(|s| s.trim().is_empty()) {
        missing.push("--scope <what may be called>");
    }
    if !verify {
        missing.push("--verify");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(AuthorisationError { missing })
    }
}

/// `--active` without what authorises it (SPEC §1.3): the flags that are missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--active is not authorised without {}; nothing was sent", missing.join(", "))]
pub struct AuthorisationError {
    pub missing: Vec<&'static str>,
}

/// `verify init`: a new token and the record to publish.
pub fn verify_init(
    host: &str,
    state: &StateDir,
    now: DateTime<Utc>,
) -> Result<String, state::StateError> {
    let host = normalise_host(host)?;
    let token = state::new_token()?;
    let path = state.save_pending(&state::Pending {
        host: host.clone(),
        token: token.clone().into(),
        created_at: now,
    })?;
    Ok(format!(
        "Publish this DNS record, then run `mcpprobe verify check {host}`:\n\n  {}  TXT  \"{}\"\n\n(pending token stored in {})\n",
        record_name(&host),
        record_text(&token),
        path.display()
    ))
}

/// `verify check`: looks the record up; on a match stores a 90-day proof.
pub async fn verify_check(
    host: &str,
    state: &StateDir,
    dns: &Dns,
    now: DateTime<Utc>,
) -> Result<String, VerifyError> {
    let host = normalise_host(host)?;
    let pending = state.pending(&host)?;
    // A proof being renewed keeps its token; a new one comes from `verify init`.
    let token = match (pending, state.proof(&host)?) {
        (Some(p), _) => p.token,
        (None, Some(proof)) => proof.token,
        (None, None) => return Err(VerifyError::NoPendingToken { host }),
    };
    let name = record_name(&host);
    let expected = record_text(token.expose_secret());
    let texts = match dns.txt(&name).await {
        Ok(texts) => texts,
        Err(failure) => {
            let via = dns.source.clone();
            return Err(VerifyError::Lookup { name, via, failure });
        }
    };
    if !texts
        .iter()
        .any(|t| secret_matches(t.trim().as_bytes(), expected.as_bytes()))
    {
        return Err(VerifyError::NotPublished {
            name,
            expected,
            others: texts.len(),
            via: dns.source.clone(),
        });
    }
    let proof = StoredProof::new(&host, token.expose_secret(), now);
    let path = state.save_proof(&proof)?;
    Ok(format!(
        "verified: {host} (dns-txt), valid until {} — stored in {}\n",
        proof.expires_at.to_rfc3339(),
        path.display()
    ))
}

/// `verify status`: every proof and its expiry.
pub fn verify_status(state: &StateDir, now: DateTime<Utc>) -> (String, bool) {
    let (proofs, errors) = state.proofs();
    let mut out = String::new();
    if proofs.is_empty() && errors.is_empty() {
        out.push_str(&format!(
            "no ownership proofs in {}\n",
            state.root.display()
        ));
    }
    for p in &proofs {
        let status = if p.expires_at <= now {
            "EXPIRED".to_string()
        } else {
            format!("valid, {} days left", (p.expires_at - now).num_days())
        };
        out.push_str(&format!(
            "{}  {}  verified {}  expires {}  ({status})\n",
            p.host,
            p.method,
            p.verified_at.to_rfc3339(),
            p.expires_at.to_rfc3339()
        ));
    }
    for e in &errors {
        out.push_str(&format!("error: {e}\n"));
    }
    (out, errors.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_refuses_to_mint_an_authorisation_without_its_flags() {
        let none = mint(&crate::permit::ActiveRequest::default(), "test".into());
        assert!(none.is_err_and(|e| e.missing.contains(&"--authorised-by <name>")));
        let all = mint(
            &crate::permit::ActiveRequest {
                authorised_by: Some("t".into()),
                scope: Some("*".into()),
                verify: true,
                ..Default::default()
            },
            "test".into(),
        )
        .expect("authorised");
        assert_eq!(
            (all.authorised_by(), all.scope(), all.proof()),
            ("t", "*", "test")
        );
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter()
            .map(|s| s.parse().expect("an address"))
            .collect()
    }

    fn judged(list: &[&str], rule: AddressRule) -> (Result<(), PrivateAddress>, GateRecord) {
        let addrs = ips(list);
        let mut record = GateRecord {
            addresses: list.iter().map(|s| s.to_string()).collect(),
            ..GateRecord::default()
        };
        let r = judge_addresses("mcp.example", &addrs, rule, &mut record);
        (r, record)
    }

    #[test]
    fn a_proof_keeps_its_token_on_disk_and_out_of_debug() {
        let dir = tempfile::tempdir().expect("dir");
        let state = StateDir::new(dir.path());
        let token = "0123456789abcdef0123456789abcdef";
        let now = Utc::now();
        state
            .save_proof(&StoredProof::new("mcp.example.com", token, now))
            .expect("saved");
        state
            .save_pending(&state::Pending {
                host: "mcp.example.com".into(),
                token: token.into(),
                created_at: now,
            })
            .expect("saved");
        let proof = state
            .proof("mcp.example.com")
            .expect("readable")
            .expect("present");
        let pending = state
            .pending("mcp.example.com")
            .expect("readable")
            .expect("present");
        assert_eq!(proof.token.expose_secret(), token);
        assert_eq!(pending.token.expose_secret(), token);
        let shown = format!("{proof:?} {pending:?} {:?}", Proof::DnsTxt(proof.clone()));
        assert!(!shown.contains(token), "{shown}");
        assert!(shown.contains("mcp.example.com"), "{shown}");
    }

    #[test]
    fn secrets_match_whole_and_only_whole() {
        let record = record_text("0123456789abcdef0123456789abcdef");
        assert!(secret_matches(record.as_bytes(), record.as_bytes()));
        // A prefix, a longer text, one changed byte: all refused.
        assert!(!secret_matches(&record.as_bytes()[..20], record.as_bytes()));
        assert!(!secret_matches(
            format!("{record}0").as_bytes(),
            record.as_bytes()
        ));
        let mut changed = record.clone().into_bytes();
        changed[20] ^= 1;
        assert!(!secret_matches(&changed, record.as_bytes()));
        assert!(!secret_matches(b"", record.as_bytes()));
    }

    #[test]
    fn public_addresses_pass_and_say_so() {
        let (r, record) = judged(&["93.184.216.34", "2606:4700::1"], AddressRule::PublicOnly);
        assert_eq!(r, Ok(()));
        let check = record.address_check.expect("recorded");
        assert!(
            check.starts_with("every address of mcp.example is public"),
            "{check}"
        );
    }

    #[test]
    fn a_mix_of_public_and_loopback_is_refused_naming_both() {
        let (r, record) = judged(&["93.184.216.34", "127.0.0.1"], AddressRule::PublicOnly);
        let refused = r.expect_err("refused");
        assert_eq!(refused.host, "mcp.example");
        assert_eq!(
            refused.refused.iter().map(|(a, _)| *a).collect::<Vec<_>>(),
            ips(&["127.0.0.1"])
        );
        assert_eq!(refused.public, ips(&["93.184.216.34"]));
        let why = refused.to_string();
        assert!(
            why.contains("127.0.0.1, in the loopback range 127.0.0.0/8"),
            "{why}"
        );
        assert!(
            why.contains("beside the public address 93.184.216.34"),
            "{why}"
        );
        assert!(why.contains("--allow-private-addresses"), "{why}");
        assert_eq!(record.address_check, Some(format!("refused: {why}")));
    }

    #[test]
    fn every_address_that_is_not_public_is_named_with_its_range() {
        let (r, _) = judged(
            &["10.1.2.3", "169.254.169.254", "::ffff:100.64.0.1"],
            AddressRule::PublicOnly,
        );
        let why = r.expect_err("refused").to_string();
        for part in [
            "10.1.2.3, in the private (RFC 1918) range 10.0.0.0/8",
            "169.254.169.254, in the link-local",
            "169.254.0.0/16",
            "::ffff:100.64.0.1, in the carrier-grade NAT (RFC 6598) range 100.64.0.0/10 (100.64.0.1 inside an IPv4-mapped address",
        ] {
            assert!(why.contains(part), "{part:?} not in {why}");
        }
        assert!(!why.contains("beside"), "{why}");
    }

    /// The gate's refusals are typed, and their words (a report's `reason`, what `verify
    /// check` prints) are the ones a user acts on.
    #[test]
    fn refusals_say_what_to_do() {
        let dns = Stop::from(OptedOut::Dns {
            host: "mcp.example".into(),
            name: "_mcpprobe.mcp.example".into(),
        });
        assert_eq!(
            dns.to_string(),
            "mcp.example opted out of mcpprobe scans (DNS TXT _mcpprobe.mcp.example says mcpprobe-opt-out=all); nothing was sent to it"
        );
        let gone = Stop::from(Unreachable::NoAddress {
            host: "mcp.example".into(),
            via: "name server 127.0.0.1:53".into(),
        });
        assert_eq!(
            gone.to_string(),
            "mcp.example does not resolve (name server 127.0.0.1:53): nothing was sent"
        );
        let at = DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
            .expect("a time")
            .with_timezone(&Utc);
        let expired = NotProven::Expired {
            host: "mcp.example".into(),
            expired_at: at,
        };
        assert_eq!(
            expired.to_string(),
            "the ownership proof for mcp.example expired at 2026-01-02T03:04:05+00:00; run `mcpprobe verify check mcp.example` again"
        );
        for (others, seen) in [(0, "no TXT record"), (2, "2 other TXT record(s)")] {
            let e = VerifyError::NotPublished {
                name: "_mcpprobe.mcp.example".into(),
                expected: "mcpprobe-verify=x".into(),
                others,
                via: "the system resolver".into(),
            };
            assert_eq!(
                e.to_string(),
                format!(
                    "_mcpprobe.mcp.example does not hold TXT \"mcpprobe-verify=x\" yet ({seen} via the system resolver); publish it and try again"
                )
            );
        }
    }

    /// `verify check` without `verify init` first: refused before any lookup, naming the
    /// command to run.
    #[tokio::test]
    async fn verify_check_without_a_pending_token_names_verify_init() {
        let dir = tempfile::tempdir().expect("dir");
        let state = StateDir::new(dir.path());
        // Nothing listens on port 9: a lookup would fail, and none is made.
        let dns = Dns::new(Some("127.0.0.1:9".parse().expect("addr"))).expect("dns");
        let err = verify_check("MCP.Example.com", &state, &dns, Utc::now())
            .await
            .expect_err("refused");
        assert!(
            matches!(&err, VerifyError::NoPendingToken { host } if host == "mcp.example.com"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "no pending token for mcp.example.com: run `mcpprobe verify init mcp.example.com` first"
        );
        let bad = verify_check("not a host", &state, &dns, Utc::now()).await;
        assert!(matches!(bad, Err(VerifyError::State(_))), "{bad:?}");
    }

    #[test]
    fn allowed_private_addresses_pass_and_are_recorded() {
        let (r, record) = judged(&["10.200.0.2", "8.8.8.8"], AddressRule::AllowPrivate);
        assert_eq!(r, Ok(()));
        let check = record.address_check.expect("recorded");
        assert!(
            check.contains("10.200.0.2") && check.contains("--allow-private-addresses"),
            "{check}"
        );
        assert_eq!(AddressRule::default(), AddressRule::PublicOnly);
    }
}
