//! SESS-01: Weak or mishandled session ids.
//!
//! Metadata: `checks/passive/SESS-01.toml`. Samples: the ids the ladder's handshakes minted,
//! plus one more session that is then ended. Judged: visible ASCII 0x21–0x7E, length, entropy,
//! and relation between samples (a single sample never proves "sequential"). Then a forged id
//! and the ended id are each tried once: both must be refused (404/400). A 2026-only server must
//! not mint session ids at all.

use serde_json::json;

use crate::checks::probe::{bare_session_2025, era_2025};
use crate::checks::{BoxFuture, Check, Live, Outcome, finding};
use crate::finding::Finding;
use crate::protocol::rpc::MODERN;
use crate::protocol::session::Session;

pub struct Sess01;

pub static CHECK: Sess01 = Sess01;

/// Estimated bits of randomness in one id: its length times the bits of the smallest
/// alphabet that holds its characters.
pub fn entropy_bits(id: &str) -> f64 {
    let chars: Vec<char> = id.chars().filter(|c| *c != '-').collect();
    let per = if chars.iter().all(|c| c.is_ascii_digit()) {
        10f64.log2()
    } else if chars.iter().all(|c| c.is_ascii_hexdigit()) {
        4.0
    } else if chars.iter().all(|c| c.is_ascii_alphanumeric()) {
        if chars.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()) { 5.0 } else { 5.95 }
    } else {
        6.0
    };
    // Repeated characters say less than their count: use the distinct share as a damper.
    let distinct = chars.iter().collect::<std::collections::BTreeSet<_>>().len() as f64;
    let n = chars.len() as f64;
    if n == 0.0 { 0.0 } else { n * per * (distinct / n).clamp(0.25, 1.0).sqrt() }
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
                        let mut b = finding(self, None).message("a 2026-07-28-only server minted an Mcp-Session-Id (the 2026 protocol has no sessions)");
                        if let Some(x) = r.exchange.clone() {
                            b = b.exchange(x);
                        }
                        findings.push(b.build());
                    }
                    return Outcome::Ran(findings);
                }
                return Outcome::Skipped("no 2025 era answered: no session ids to judge".into());
            }
            let mut samples = fp.session_ids.clone();
            // One more session, ended at once, for the "ended id" test (and a sample).
            let ended = match bare_session_2025(cx, "mcpprobe").await {
                Some((session, call)) => {
                    let sid = call.header("mcp-session-id").map(str::to_string);
                    if let Some(s) = &sid {
                        samples.push(s.clone());
                    }
                    let _ = session.close().await;
                    sid
                }
                None => None,
            };
            if samples.is_empty() {
                return Outcome::Ran(vec![]); // stateless: no ids
            }
            for s in &samples {
                if let Some(bad) = s.chars().find(|c| !('\u{21}'..='\u{7e}').contains(c)) {
                    findings.push(finding(self, None).message(format!("a session id holds U+{:04X}, outside visible ASCII 0x21–0x7E", bad as u32)).text(s.clone()).build());
                    break;
                }
            }
            let shortest = samples.iter().min_by_key(|s| s.len()).cloned().unwrap_or_default();
            let bits = entropy_bits(&shortest);
            if shortest.len() < 16 || bits < 64.0 {
                findings.push(
                    finding(self, None)
                        .message(format!("session id {shortest:?}: {} characters, about {bits:.0} bits of randomness (want 128)", shortest.chars().count()))
                        .text(shortest.clone())
                        .build(),
                );
            }
            if let Some(why) = related(&samples) {
                findings.push(finding(self, None).message(format!("{} samples look sequential or related: {why}", samples.len())).text(samples.join(" ")).build());
            }
            // A forged id, and the ended one, must be refused.
            let v = era_2025(cx).unwrap_or("2025-11-25");
            let mut forged_bytes = [0u8; 16];
            let _ = getrandom::fill(&mut forged_bytes);
            let mut probes = vec![("a forged session id", hex::encode(forged_bytes))];
            if let Some(e) = ended {
                probes.push(("an ended session id (after DELETE)", e));
            }
            for (what, sid) in probes {
                let session = Session::streamable(client.clone(), url.clone(), v, Some(sid));
                let call = session.call("tools/list", json!({})).await;
                if call.status.is_some_and(|s| (200..300).contains(&s)) && call.result().is_some() {
                    findings.push(finding(self, None).message(format!("{what} was accepted ({:?}) instead of 404", call.status)).exchange(call.exchange).build());
                }
            }
            Outcome::Ran(findings)
        })
    }
}
