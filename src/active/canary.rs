//! Canaries (SPEC §13): markers that reflection cannot fake. An arithmetic echo canary sends
//! two random factors and looks for their product, which only evaluation makes: a server that
//! echoes its input shows the factors, never the product.

/// Two random factors (1000..=9999 each) and their product, as sent and as looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    pub a: u32,
    pub b: u32,
}

impl Product {
    /// Fresh random factors.
    pub fn random() -> Product {
        let mut buf = [0u8; 8];
        // Without randomness the factors are still distinct per call (time-derived): a canary
        // is a proof by its product, not by its secrecy.
        if getrandom::fill(&mut buf).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            buf = (t as u64).to_le_bytes();
        }
        let a = 1000 + u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) % 9000;
        let b = 1000 + u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) % 9000;
        Product { a, b }
    }

    /// What must appear in the result.
    pub fn marker(&self) -> String {
        (u64::from(self.a) * u64::from(self.b)).to_string()
    }
}

/// The command-injection forms, each evaluating `a*b` in a POSIX shell wherever the input
/// lands: bare, inside single or double quotes, or after a command.
pub fn shell_payloads(p: &Product) -> Vec<(String, &'static str)> {
    let (a, b) = (p.a, p.b);
    vec![
        (format!("$(({a}*{b}))"), "arithmetic expansion $((A*B))"),
        (
            format!("`expr {a} \\* {b}`"),
            "command substitution `expr A \\* B`",
        ),
        (format!("x;echo $(({a}*{b}))"), "a second command after ;"),
        (
            format!("x';echo $(({a}*{b}));'"),
            "out of single quotes, then a second command",
        ),
        (
            format!("x\";echo $(({a}*{b}));\""),
            "out of double quotes, then a second command",
        ),
        (
            format!("x|echo $(({a}*{b}))"),
            "a pipe into a second command",
        ),
    ]
}

/// The delays of a timing canary (SPEC §13): a zero-delay control, then long and short
/// alternating.
pub const TIMING: [u64; 5] = [0, 2, 1, 2, 1];

/// What a timing canary's calls came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Every delayed call took at least its delay, the control was fast, and the elapsed times
    /// track the delays.
    pub confirmed: bool,
    /// The delays and times, and the correlation, for the finding's message.
    pub note: String,
}

/// Whether (delay, elapsed) pairs confirm a sleep the input caused: every delayed call took at
/// least its delay, the control (delay 0) was at least half a second faster than every delayed
/// call (a rate limit's wait is in every elapsed time alike), and elapsed times track the
/// delays (Pearson correlation above 0.85). A server slow for everything fails the control; a
/// server that ignores the delay fails the first test.
pub fn timing_verdict(timed: &[(u64, f64)]) -> Timing {
    let shown: Vec<String> = timed
        .iter()
        .map(|(d, e)| format!("{d} s → {e:.2} s"))
        .collect();
    let delayed: Vec<&(u64, f64)> = timed.iter().filter(|(d, _)| *d > 0).collect();
    let slowest_control = timed
        .iter()
        .filter(|(d, _)| *d == 0)
        .map(|(_, e)| *e)
        .fold(f64::NEG_INFINITY, f64::max);
    let quickest_delayed = delayed
        .iter()
        .map(|(_, e)| *e)
        .fold(f64::INFINITY, f64::min);
    let control_fast = slowest_control.is_finite() && slowest_control + 0.5 <= quickest_delayed;
    let each_at_least = !delayed.is_empty() && delayed.iter().all(|(d, e)| *e + 0.05 >= *d as f64);
    let r = correlation(
        &delayed
            .iter()
            .map(|(d, e)| (*d as f64, *e))
            .collect::<Vec<_>>(),
    );
    let confirmed = control_fast && each_at_least && r > 0.85;
    Timing {
        confirmed,
        note: format!("{}; correlation {r:.2}", shown.join(", ")),
    }
}

fn correlation(xy: &[(f64, f64)]) -> f64 {
    let n = xy.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / n,
        xy.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = xy.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let vx: f64 = xy.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let vy: f64 = xy.iter().map(|(_, y)| (y - my).powi(2)).sum();
    if vx == 0.0 || vy == 0.0 {
        0.0
    } else {
        cov / (vx.sqrt() * vy.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_confirms_only_delays_that_track_the_request() {
        let tracked = [(0, 0.02), (2, 2.03), (1, 1.02), (2, 2.01), (1, 1.04)];
        assert!(timing_verdict(&tracked).confirmed);
        // A slow server: everything takes 3 s, the control too.
        let slow = [(0, 3.0), (2, 3.0), (1, 3.0), (2, 3.0), (1, 3.0)];
        assert!(!timing_verdict(&slow).confirmed);
        // Faster than the delay asked for: not a sleep.
        let fast = [(0, 0.01), (2, 0.5), (1, 0.2), (2, 0.5), (1, 0.2)];
        assert!(!timing_verdict(&fast).confirmed);
        // A 1-request-a-second rate limit adds its wait to every call alike: still confirmed.
        let limited = [(0, 1.0), (2, 3.0), (1, 2.0), (2, 3.01), (1, 2.02)];
        assert!(timing_verdict(&limited).confirmed);
        // A sleep evaluated once per matching row (twice here) still tracks the delays.
        let per_row = [(0, 0.02), (2, 4.01), (1, 2.02), (2, 4.03), (1, 2.01)];
        assert!(timing_verdict(&per_row).confirmed);
        // No control, or no delayed call: nothing is confirmed.
        assert!(!timing_verdict(&[(2, 2.0), (1, 1.0), (2, 2.0), (1, 1.0)]).confirmed);
        assert!(!timing_verdict(&[(0, 0.01)]).confirmed);
        assert!(timing_verdict(&tracked).note.contains("2 s → 2.03 s"));
    }

    #[test]
    fn the_marker_is_never_in_the_payload() {
        for _ in 0..200 {
            let p = Product::random();
            assert!((1000..=9999).contains(&p.a) && (1000..=9999).contains(&p.b));
            for (payload, _) in shell_payloads(&p) {
                assert!(
                    !payload.contains(&p.marker()),
                    "{payload} holds {}",
                    p.marker()
                );
            }
        }
    }
}
