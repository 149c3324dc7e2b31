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

#[cfg(test)]
mod tests {
    use super::*;

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
