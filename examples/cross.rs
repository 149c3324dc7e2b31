//! The rules across servers (issue 26) on real, benign servers' tool lists nobody here wrote
//! (`fixtures/corpus/benign`, 760 servers): how often a set of servers a client could run
//! together gets a cross-server finding. Every P4 here is a candidate false alarm (benign
//! servers written apart do not steer each other); C1 and S2 are facts about the set.
//!
//! ```text
//! cargo run --release --example cross [-- SETS SIZE]     # default 2000 sets of 5
//! ```

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::Path;

use mcpprobe::rules::cross::{ServerTools, run};
use serde_json::Value;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sets = args.first().copied().unwrap_or(2000);
    let size = args.get(1).copied().unwrap_or(5);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/corpus/benign");
    let mut servers: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            let name = p.file_stem()?.to_string_lossy().into_owned();
            v.get("tools")
                .is_some_and(Value::is_array)
                .then_some((name, v))
        })
        .collect();
    servers.sort_by(|a, b| a.0.cmp(&b.0));
    println!("{} benign servers", servers.len());

    // Every server in one set: the worst case for P4 (every other server's names).
    let all: Vec<ServerTools<'_>> = servers
        .iter()
        .map(|(s, v)| ServerTools {
            server: s,
            inventory: v,
        })
        .collect();
    let findings = run(&all);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for f in &findings {
        *counts
            .entry(format!(
                "{}/{} {}",
                f.check,
                f.rule.as_deref().unwrap_or("-"),
                f.severity
            ))
            .or_default() += 1;
    }
    println!("all {} servers in one set: {counts:?}", servers.len());
    for f in findings
        .iter()
        .filter(|f| f.rule.as_deref() == Some("P4") && f.severity.as_str() == "high")
        .take(12)
    {
        println!(
            "  P4 high on {}: {}",
            f.location.server.as_deref().unwrap_or("-"),
            f.message.as_deref().unwrap_or("")
        );
    }

    // Random sets (a fixed-seed linear congruential generator: the same sets every run).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(seed >> 33).unwrap_or(0) % n.max(1)
    };
    let mut with: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..sets {
        let mut pick: Vec<usize> = Vec::new();
        while pick.len() < size.min(servers.len()) {
            let i = next(servers.len());
            if !pick.contains(&i) {
                pick.push(i);
            }
        }
        let set: Vec<ServerTools<'_>> = pick
            .iter()
            .map(|&i| ServerTools {
                server: &servers[i].0,
                inventory: &servers[i].1,
            })
            .collect();
        let f = run(&set);
        let has = |rule: &str, sev: Option<&str>| {
            f.iter().any(|x| {
                x.rule.as_deref() == Some(rule) && sev.is_none_or(|s| x.severity.as_str() == s)
            })
        };
        for (label, hit) in [
            ("P4 high", has("P4", Some("high"))),
            ("P4 low", has("P4", Some("low"))),
            ("C1", has("C1", None)),
            ("S2", has("S2", None)),
        ] {
            if hit {
                *with.entry(label).or_default() += 1;
            }
        }
    }
    println!("{sets} random sets of {size}: sets with a finding, by rule: {with:?}");
}
