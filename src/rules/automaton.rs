//! An Aho-Corasick automaton over the rules' fixed word lists that picks its own kind.
//!
//! A DFA searches prose fastest but takes milliseconds to build for the larger lists (the
//! intent and phrase lists together took about 10 ms: half of `mcpprobe check` on a one-tool
//! file). A contiguous NFA builds in a fraction of that and searches about a third slower. So
//! each list starts as a contiguous NFA and becomes a DFA once it has read [`UPGRADE_AT`] bytes:
//! a one-tool file never pays for the DFA, a 20 MB list pays for it once, after its first
//! megabyte. Both kinds find exactly the same matches (the library's contract, and
//! `both_kinds_find_the_same_matches` below), so which one answers never changes a finding.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, BuildError};

/// Bytes read through the NFA after which the DFA is built and used.
pub const UPGRADE_AT: usize = 1 << 20;

pub struct Automaton {
    patterns: Vec<String>,
    builder: AhoCorasickBuilder,
    nfa: AhoCorasick,
    dfa: OnceLock<Option<AhoCorasick>>,
    read: AtomicUsize,
}

impl std::fmt::Debug for Automaton {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Automaton")
            .field("patterns", &self.patterns.len())
            .field("dfa", &self.dfa.get().is_some_and(Option::is_some))
            .finish()
    }
}

impl Automaton {
    /// Builds the NFA now (an error is the patterns' own: too many, too long); the DFA waits.
    /// `builder` says everything but the kind.
    pub fn new<I, P>(builder: &AhoCorasickBuilder, patterns: I) -> Result<Automaton, BuildError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<str>,
    {
        let patterns: Vec<String> = patterns
            .into_iter()
            .map(|p| p.as_ref().to_string())
            .collect();
        let mut builder = builder.clone();
        let nfa = builder
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&patterns)?;
        Ok(Automaton {
            patterns,
            builder,
            nfa,
            dfa: OnceLock::new(),
            read: AtomicUsize::new(0),
        })
    }

    /// The automaton to search `hay` with: the DFA once built, or once this list has read
    /// [`UPGRADE_AT`] bytes (counting `hay`); the NFA before, and whenever the DFA cannot be
    /// built (a size limit of the library).
    pub fn get(&self, hay: &str) -> &AhoCorasick {
        if let Some(built) = self.dfa.get() {
            return built.as_ref().unwrap_or(&self.nfa);
        }
        let read = self
            .read
            .fetch_add(hay.len(), Ordering::Relaxed)
            .saturating_add(hay.len());
        if read < UPGRADE_AT {
            return &self.nfa;
        }
        self.dfa
            .get_or_init(|| {
                self.builder
                    .clone()
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(&self.patterns)
                    .ok()
            })
            .as_ref()
            .unwrap_or(&self.nfa)
    }

    /// The DFA, built now (for the tests).
    #[cfg(test)]
    fn upgraded(&self) -> &AhoCorasick {
        let _ = self.get(&"x".repeat(UPGRADE_AT));
        self.get("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::MatchKind;

    fn automaton(kind: MatchKind) -> Automaton {
        let mut b = AhoCorasickBuilder::new();
        b.ascii_case_insensitive(true).match_kind(kind);
        Automaton::new(&b, ["ignore", "ignore previous", "previous", "send", "é"])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn both_kinds_find_the_same_matches() {
        let hay = "IGNORE previous notes; Ignore them, send é-mail, ignorE PREVIOUS";
        for kind in [MatchKind::LeftmostLongest, MatchKind::Standard] {
            let a = automaton(kind);
            let spans = |ac: &AhoCorasick| -> Vec<(usize, usize, usize)> {
                let mut v: Vec<_> = ac
                    .find_iter(hay)
                    .map(|m| (m.pattern().as_usize(), m.start(), m.end()))
                    .collect();
                if kind == MatchKind::Standard {
                    v.extend(
                        ac.find_overlapping_iter(hay)
                            .map(|m| (m.pattern().as_usize(), m.start(), m.end())),
                    );
                }
                v
            };
            let before = spans(a.get(hay));
            assert_eq!(a.get(hay).kind(), AhoCorasickKind::ContiguousNFA);
            let dfa = a.upgraded();
            assert_eq!(dfa.kind(), AhoCorasickKind::DFA);
            assert!(!before.is_empty());
            assert_eq!(before, spans(dfa), "{kind:?}");
        }
    }

    #[test]
    fn the_dfa_is_built_once_a_megabyte_is_read() {
        let a = automaton(MatchKind::LeftmostLongest);
        let chunk = "a".repeat(UPGRADE_AT / 4);
        for _ in 0..3 {
            assert_eq!(a.get(&chunk).kind(), AhoCorasickKind::ContiguousNFA);
        }
        assert_eq!(a.get(&chunk).kind(), AhoCorasickKind::DFA);
        assert_eq!(a.get("").kind(), AhoCorasickKind::DFA);
    }
}
