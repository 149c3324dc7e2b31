//! SESS-01: Weak or mishandled session ids.
//!
//! Metadata: `checks/passive/SESS-01.toml`. Samples: the ids the ladder's handshakes minted,
//! plus one more session that is then ended, all kept byte for byte. Judged: visible ASCII
//! 0x21–0x7E, length, entropy (estimated from what varies between the samples), and relation
//! between samples (a single sample never proves "sequential"). Then a forged id and the ended
//! id are each tried once: the forged one must be refused (404/400), the ended one answered 404
//! (400 is low: the transport says MUST 404). A probe without a usable answer, or a session
//! that did not open, is indeterminate. A 2026-only server must not mint session ids at all.

use serde_json::json;

use crate::checks::probe::{self, bare_session_2025, era_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::{Finding, Severity};
use crate::net::escape_header;
use crate::protocol::rpc::MODERN;
use crate::protocol::session::Session;

pub struct Sess01;

pub static CHECK: Sess01 = Sess01;

/// An id as characters, one per byte (Latin-1), so that any byte can be compared.
fn chars_of(id: &[u8]) -> Vec<char> {
    id.iter().map(|&b| char::from(b)).collect()
}

/// The smallest common alphabet that holds `chars`: its name and bits per character.
fn alphabet(chars: &[char]) -> (&'static str, f64) {
    let all = |f: fn(&char) -> bool| chars.iter().all(f);
    if all(char::is_ascii_digit) {
        ("decimal digit", 10f64.log2())
    } else if all(|c| c.is_ascii_digit() || ('a'..='f').contains(c)) || all(|c| c.is_ascii_digit() || ('A'..='F').contains(c)) {
        ("hex digit", 4.0)
    } else if all(|c| c.is_ascii_uppercase() || ('2'..='7').contains(c)) {
        ("base32 character", 5.0)
    } else if all(char::is_ascii_alphanumeric) {
        ("letter or digit", 62f64.log2())
    } else if all(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_') {
        ("base64url character", 6.0)
    } else if all(|c| ('\u{21}'..='\u{7e}').contains(c)) {
        ("visible ASCII character", 94f64.log2())
    } else {
        ("byte", 8.0)
    }
}

/// How much randomness the samples show, and how that was estimated.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub bits: f64,
    pub how: String,
}

/// Estimates the random bits of one id from all samples: characters that are the same in every
/// sample say nothing; a trailing number that counts up between samples is a counter; only the
/// varying positions count, each at the bits of the alphabet the varying characters come from.
/// One sample cannot show what is fixed: every character then counts (an upper bound).
pub fn estimate(samples: &[Vec<u8>]) -> Estimate {
    let ids: Vec<Vec<char>> = samples.iter().map(|s| chars_of(s)).collect();
    let Some(first) = ids.first() else {
        return Estimate { bits: 0.0, how: "no sample".into() };
    };
    if ids.len() == 1 {
        let (name, per) = alphabet(first);
        return Estimate {
            bits: first.len() as f64 * per,
            how: format!("from one sample, every character counted as a random {name} ({per:.1} bits): an upper bound"),
        };
    }
    // A counter at the end: every sample ends in digits, the numbers increase, the rest agrees.
    let strings: Vec<String> = ids.iter().map(|c| c.iter().collect()).collect();
    let split: Vec<Option<(&str, u128)>> = strings.iter().map(|s| split_number(s)).collect();
    let counter = split.iter().all(Option::is_some) && {
        let parts: Vec<(&str, u128)> = split.iter().flatten().copied().collect();
        parts.windows(2).all(|w| w[0].1 < w[1].1 && w[1].1 - w[0].1 < 1_000_000) && parts.iter().all(|(p, _)| *p == parts[0].0)
    };
    let bodies: Vec<Vec<char>> = if counter {
        split.iter().flatten().map(|(p, _)| p.chars().collect()).collect()
    } else {
        ids.clone()
    };
    let longest = bodies.iter().map(Vec::len).max().unwrap_or(0);
    let mut varying = Vec::new();
    for i in 0..longest {
        let at: Vec<Option<char>> = bodies.iter().map(|b| b.get(i).copied()).collect();
        if at.iter().any(|c| *c != at[0]) {
            varying.extend(at.into_iter().flatten());
        }
    }
    let positions = (0..longest).filter(|&i| bodies.iter().any(|b| b.get(i) != bodies[0].get(i))).count();
    let fixed = longest - positions;
    let (name, per) = if varying.is_empty() { ("character", 0.0) } else { alphabet(&varying) };
    let mut how = if positions == 0 {
        format!("across {} samples, all {longest} character positions are the same", ids.len())
    } else {
        format!(
            "across {} samples, {positions} of {longest} character positions vary (each counted as a random {name}, {per:.1} bits) and {fixed} never change",
            ids.len()
        )
    };
    if counter {
        how.push_str(", and the trailing number counts up between samples (a counter, no randomness)");
    }
    Estimate { bits: positions as f64 * per, how }
}

/// The trailing number of an id, and what comes before it.
fn split_number(id: &str) -> Option<(&str, u128)> {
    let digits = id.chars().rev().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 30 {
        return None;
    }
    let (prefix, num) = id.split_at(id.len() - digits);
    num.parse().ok().map(|n| (prefix, n))
}

/// Why the samples look related, if they do (needs at least two).
pub fn related(samples: &[String]) -> Option<String> {
    if samples.len() < 2 {
        return None;
    }
    let parts: Vec<_> = samples.iter().map(|s| split_number(s)).collect();
    if parts.iter().all(Option::is_some) {
        let parts: Vec<(&str, u128)> = parts.into_iter().flatten().collect();
        let same_prefix = parts.iter().all(|(p, _)| *p == parts[0].0);
        let close = parts.windows(2).all(|w| w[0].1.abs_diff(w[1].1) < 1_000_000);
        if same_prefix && close {
            return Some(format!("the ids share the prefix {:?} and end in nearby numbers", parts[0].0));
        }
    }
    let hex: Vec<u128> = samples
        .iter()
        .filter_map(|s| {
            let h: String = s.chars().filter(|c| *c != '-').collect();
            (h.len() <= 32 && h.chars().all(|c| c.is_ascii_hexdigit())).then(|| u128::from_str_radix(&h, 16).ok()).flatten()
        })
        .collect();
    if hex.len() == samples.len() && hex.windows(2).all(|w| w[0].abs_diff(w[1]) < (1u128 << 40)) {
        return Some("read as numbers, the ids are less than 2^40 apart".into());
    }
    let common = samples.windows(2).map(|w| w[0].chars().zip(w[1].chars()).take_while(|(a, b)| a == b).count()).min().unwrap_or(0);
    let shortest = samples.iter().map(|s| s.chars().count()).min().unwrap_or(0);
    if shortest > 0 && common * 2 >= shortest {
        return Some(format!("the ids share their first {common} of {shortest} characters"));
    }
    None
}

impl Check for Sess01 {
    fn id(&self) -> &'static str {
        "SESS-01"
    }

    fn live<'a>(&'a self, cx: &'a Live<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let (Some(client), Some(url)) = (cx.client, cx.url) else {
                return Outcome::Skipped("a stdio connection has no session ids".into());
            };
            let fp = cx.fingerprint;
            let mut findings: Vec<Finding> = Vec::new();
            if era_2025(cx).is_none() {
                if fp.eras == [MODERN] {
                    let minted = fp.rungs.iter().find(|r| r.step == "server/discover" && r.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("mcp-session-id")));
                    if let Some(r) = minted {
                        let mut b = finding(self, None)
                            .subcode("modern-minted")
                            .message("a 2026-07-28-only server minted an Mcp-Session-Id (the 2026 protocol has no sessions)");
                        if let Some(x) = r.exchange.clone() {
                            b = b.exchange(x);
                        }
                        findings.push(b.build());
                    }
                    return Outcome::Ran(findings);
                }
                return Outcome::Skipped("no 2025 era answered: no session ids to judge".into());
            }
            let mut samples: Vec<Vec<u8>> = fp.session_ids.clone();
            // One more session, ended at once, for the "ended id" test (and a sample).
            let mut ended: Option<Vec<u8>> = None;
            match bare_session_2025(cx, "mcpprobe").await {
                Ok((session, call)) => {
                    let sid = call.session_id();
                    if let Some(s) = &sid {
                        samples.push(s.clone());
                    }
                    let close = session.close().await;
                    match (&sid, close) {
                        (Some(_), Some(c)) if c.status.is_some_and(|s| (200..300).contains(&s)) => ended = sid,
                        (Some(_), Some(c)) if probe::unusable(&c) => findings.push(probe::indeterminate(
                            self,
                            "ended",
                            format_args!("the DELETE that ends the extra session {}, so the ended-id test did not run", probe::answered(&c)),
                            Some(c.exchange),
                        )),
                        // 405 and the like: the server does not let clients end sessions.
                        _ => {}
                    }
                }
                Err(call) => {
                    let why = call.as_ref().map(probe::answered).unwrap_or_else(|| "nothing sent".into());
                    findings.push(probe::indeterminate(
                        self,
                        "ended",
                        format_args!("the extra session could not be opened ({why}), so there is no ended id to test"),
                        call.map(|c| c.exchange),
                    ));
                }
            }
            if samples.is_empty() {
                return Outcome::Ran(findings); // stateless: no ids
            }
            if let Some(bad) = samples.iter().find(|s| s.iter().any(|b| !(0x21..=0x7e).contains(b))) {
                findings.push(
                    finding(self, None)
                        .subcode("charset")
                        .message(format!("the session id `{}` holds bytes outside visible ASCII 0x21–0x7E (shown as \\xNN); clients may mangle or reject it", escape_header(bad)))
                        .build(),
                );
            }
            let shortest = samples.iter().min_by_key(|s| s.len()).cloned().unwrap_or_default();
            let e = estimate(&samples);
            if shortest.len() < 16 || e.bits < 64.0 {
                findings.push(
                    finding(self, None)
                        .subcode("entropy")
                        .message(format!(
                            "session id `{}`: {} characters, about {:.0} bits of randomness (want 128); {}",
                            escape_header(&shortest),
                            shortest.len(),
                            e.bits,
                            e.how
                        ))
                        .build(),
                );
            }
            let latin: Vec<String> = samples.iter().map(|s| chars_of(s).into_iter().collect()).collect();
            if let Some(why) = related(&latin) {
                let shown: Vec<String> = samples.iter().map(|s| format!("`{}`", escape_header(s))).collect();
                findings.push(
                    finding(self, None)
                        .subcode("related")
                        .message(format!("{} samples look sequential or related: {why} ({})", samples.len(), shown.join(", ")))
                        .build(),
                );
            }
            // A forged id, and the ended one, must be refused.
            let v = era_2025(cx).unwrap_or("2025-11-25");
            let mut forged_bytes = [0u8; 16];
            let _ = getrandom::fill(&mut forged_bytes);
            let mut probes = vec![("forged", "a forged session id", hex::encode(forged_bytes).into_bytes())];
            if let Some(e) = ended {
                probes.push(("ended", "an ended session id (after DELETE)", e));
            }
            for (sub, what, sid) in probes {
                let session = Session::streamable(client.clone(), url.clone(), v, Some(sid));
                let call = session.call("tools/list", json!({})).await;
                let status = call.status;
                if status.is_some_and(|s| (200..300).contains(&s)) && call.result().is_some() {
                    findings.push(
                        finding(self, None)
                            .subcode(sub)
                            .message(format!("{what} was accepted ({}) instead of 404", probe::answered(&call)))
                            .exchange(call.exchange)
                            .build(),
                    );
                } else if probe::unusable(&call) || (call.reply.is_none() && status.is_some_and(|s| !(400..500).contains(&s))) {
                    findings.push(probe::indeterminate(
                        self,
                        sub,
                        format_args!("{what} {}, so whether the server accepts it is not known", probe::answered(&call)),
                        Some(call.exchange),
                    ));
                } else if sub == "ended" && status != Some(404) {
                    findings.push(
                        finding(self, None)
                            .subcode("ended-status")
                            .severity(Severity::Low)
                            .message(format!("{what} was {} instead of 404 (the transport says a server MUST answer 404 for an ended session)", probe::answered(&call)))
                            .exchange(call.exchange)
                            .build(),
                    );
                }
            }
            Outcome::Ran(findings)
        })
    }
}
