//! The catalogue is data: every entry has an implementation, every implementation an entry,
//! the catalogue is exactly the checks/ folder, SPEC's ids are all in it (a check may be
//! added, none may vanish), and any change to ids, kinds or severities shows up in review as a
//! snapshot diff.

use std::collections::BTreeSet;

use mcpprobe::catalogue::{Kind, catalogue, validate};

use crate::support::{check_files, root};

/// SPEC §3's checks, by kind: a contract. Each must stay in the catalogue with its kind; the
/// catalogue may hold more.
const SPEC_PASSIVE: [&str; 16] = [
    "PROTO-01", "PROTO-02", "PROTO-03", "PROTO-04", "AUTH-01", "AUTH-02", "AUTH-03", "TRANS-01",
    "TRANS-02", "TRANS-03", "SESS-01", "META-02", "META-03", "META-04", "CARD-01", "CARD-02",
];
const SPEC_ACTIVE: [&str; 8] = [
    "ACT-01", "ACT-02", "ACT-03", "ACT-04", "ACT-05", "ACT-06", "ACT-07", "ACT-08",
];
const SPEC_OTHER: [&str; 5] = ["INFO-01", "INFO-02", "BASE-01", "BASE-02", "META-01"];

#[test]
fn catalogue_is_valid() {
    if let Err(e) = validate() {
        panic!("{e}");
    }
}

fn ids(k: Kind) -> BTreeSet<String> {
    catalogue()
        .metas()
        .filter(|m| m.kind == k)
        .map(|m| m.id.clone())
        .collect()
}

#[test]
fn the_catalogue_is_the_checks_folder() {
    let files = check_files();
    for (kind, k) in [
        ("passive", Kind::Passive),
        ("active", Kind::Active),
        ("other", Kind::Other),
    ] {
        assert_eq!(ids(k), files[kind], "checks/{kind}/");
    }
    assert_eq!(
        catalogue().entries.len(),
        crate::support::check_count(),
        "one entry per file"
    );
}

#[test]
fn every_spec_check_is_in_the_catalogue_with_its_kind() {
    for (spec, k) in [
        (&SPEC_PASSIVE[..], Kind::Passive),
        (&SPEC_ACTIVE[..], Kind::Active),
        (&SPEC_OTHER[..], Kind::Other),
    ] {
        let have = ids(k);
        let missing: Vec<&&str> = spec.iter().filter(|id| !have.contains(**id)).collect();
        assert!(missing.is_empty(), "{k:?}: SPEC's {missing:?} missing");
    }
    assert_eq!(
        SPEC_PASSIVE.len() + SPEC_ACTIVE.len() + SPEC_OTHER.len(),
        29
    );
}

#[test]
fn every_implementation_file_has_a_catalogue_entry() {
    // build.rs already refuses a catalogue entry without an implementation; this is the
    // other direction: an implementation file whose id the catalogue lacks.
    for kind in ["passive", "active", "other"] {
        let dir = root().join("src/checks").join(kind);
        for entry in std::fs::read_dir(&dir).expect("src/checks/<kind> exists") {
            let path = entry.expect("readable dir entry").path();
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("utf-8 file name");
            let id = stem.to_ascii_uppercase().replace('_', "-");
            let toml = root().join("checks").join(kind).join(format!("{id}.toml"));
            assert!(
                toml.exists(),
                "{} has no catalogue entry {}",
                path.display(),
                toml.display()
            );
        }
    }
    // The registry holds one implementation per catalogue entry, in the catalogue's file
    // order, each naming its own entry's id; every active entry's is an active check.
    let registry: Vec<&str> = mcpprobe::checks::registry()
        .iter()
        .map(|c| c.id())
        .collect();
    let sources: Vec<&str> = mcpprobe::catalogue::SOURCES.iter().map(|s| s.id).collect();
    assert_eq!(registry, sources);
    assert_eq!(registry.len(), catalogue().entries.len());
    for e in &catalogue().entries {
        let check = mcpprobe::checks::get(&e.meta.id).expect("registered");
        assert_eq!(check.id(), e.meta.id, "{}", e.path);
        assert_eq!(
            check.active().is_some(),
            e.meta.kind == mcpprobe::catalogue::Kind::Active,
            "{}: an active entry has an active implementation, and only it",
            e.path
        );
    }
}

#[test]
fn rule_tables_are_as_spec() {
    let codes = |id: &str| -> Vec<String> {
        catalogue()
            .meta(id)
            .rules
            .iter()
            .map(|r| r.code.clone())
            .collect()
    };
    assert_eq!(codes("META-02"), ["P1", "P2", "P3", "P4", "P5", "P6"]);
    // SPEC §3.1's C1–C9, then the rules beyond it: C10, a tool that hands the process
    // environment or stored secrets to the model; C11, a tool that reads any URL (issue 23);
    // C12, a secret written inline in a client's file (issue 26).
    assert_eq!(
        codes("META-03"),
        [
            "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11", "C12"
        ]
    );
    assert_eq!(codes("META-04"), ["S1", "S2", "S3", "S4", "S5", "S6", "N1"]);
    // B7 and B8: a discovered set's servers added and removed (issue 26).
    assert_eq!(
        codes("BASE-01"),
        ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8"]
    );
    assert_eq!(codes("BASE-02"), ["R1", "R2", "R3", "R4"]);
    assert_eq!(codes("CARD-01").len(), 11);
    assert_eq!(
        codes("CARD-02"),
        [
            "A1", "A2", "A3", "A4", "A4p", "A5", "A6", "A7", "A7j", "A7i", "A8", "A9", "A10"
        ]
    );
}

#[test]
fn ids_kinds_severities_snapshot() {
    let mut lines = Vec::new();
    for m in catalogue().metas() {
        lines.push(format!(
            "{} {} {} {}",
            m.id,
            m.kind.as_str(),
            m.severity,
            m.confidence
        ));
        for r in &m.rules {
            lines.push(format!(
                "  {}/{} {} {}",
                m.id, r.code, r.severity, r.confidence
            ));
        }
    }
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn readme_check_table_is_current() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let begin = "<!-- checks:begin -->\n";
    let end = "<!-- checks:end -->";
    let start = readme
        .find(begin)
        .expect("README has the checks:begin marker")
        + begin.len();
    let stop = readme.find(end).expect("README has the checks:end marker");
    assert_eq!(
        &readme[start..stop],
        mcpprobe::docs::markdown_table(),
        "the README check table is stale: run scripts/gen-readme-table.sh"
    );
}
