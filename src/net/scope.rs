//! Where the one request outside the target's origin may go (SPEC §7): the authorization-server
//! GET of AUTH-03. An advertised URL is a server's word, so it is judged by the addresses it
//! resolves to (after DNS, the same addresses the request is pinned to), never by its text
//! alone: loopback, private, link-local (cloud metadata), CGNAT and unspecified addresses, and
//! their IPv4-mapped, IPv4-compatible and NAT64 forms, are refused unless the target's own
//! address is in that same range.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

/// The kind of range an address is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Range {
    Loopback,
    /// RFC 1918 and IPv6 unique-local (fc00::/7).
    Private,
    /// 169.254/16 and fe80::/10: where cloud metadata services answer.
    LinkLocal,
    /// 100.64/10 (RFC 6598).
    Cgnat,
    /// 0.0.0.0/8, `::`.
    Unspecified,
    /// Multicast, broadcast and reserved blocks: no authorization server lives there.
    NotUnicast,
    Public,
}

impl Range {
    pub fn describe(self) -> &'static str {
        match self {
            Range::Loopback => "loopback",
            Range::Private => "private (RFC 1918 / fc00::/7)",
            Range::LinkLocal => "link-local (169.254/16, fe80::/10: cloud metadata services)",
            Range::Cgnat => "carrier-grade NAT (100.64/10)",
            Range::Unspecified => "unspecified",
            Range::NotUnicast => "multicast, broadcast or reserved",
            Range::Public => "public",
        }
    }
}

fn range_v4(ip: Ipv4Addr) -> Range {
    let o = ip.octets();
    if ip.is_loopback() {
        Range::Loopback
    } else if ip.is_private() {
        Range::Private
    } else if ip.is_link_local() {
        Range::LinkLocal
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Range::Cgnat
    } else if o[0] == 0 {
        Range::Unspecified
    } else if ip.is_multicast() || ip.is_broadcast() || o[0] >= 240 {
        Range::NotUnicast
    } else {
        Range::Public
    }
}

/// The IPv4 address inside an IPv6 one that carries it: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, deprecated but still routed by some stacks) and the NAT64
/// well-known prefix (`64:ff9b::/96`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0; 6] && !ip.is_unspecified() && !ip.is_loopback() {
        return Some(tail);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    None
}

/// The range an address is in (an IPv6 address carrying an IPv4 one is judged as that one).
pub fn range(ip: IpAddr) -> Range {
    match ip {
        IpAddr::V4(v4) => range_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return range_v4(v4);
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Range::Loopback
            } else if v6.is_unspecified() {
                Range::Unspecified
            } else if (first & 0xfe00) == 0xfc00 {
                Range::Private
            } else if (first & 0xffc0) == 0xfe80 {
                Range::LinkLocal
            } else if v6.is_multicast() {
                Range::NotUnicast
            } else {
                Range::Public
            }
        }
    }
}

/// Why the authorization-server URL may not be fetched, in words for the finding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AsRefusal {
    #[error(
        "its scheme is {0}: only https is fetched (http only when the target itself is loopback)"
    )]
    Scheme(String),
    #[error("it has no host")]
    NoHost,
    #[error("{host} resolves to {addr}, a {} address, and the target is not in that range", .range.describe())]
    Address {
        host: String,
        addr: IpAddr,
        range: Range,
    },
}

/// Whether a request to `url`, resolved to `addrs`, is allowed for a target at `target`.
pub fn judge(url: &Url, addrs: &[IpAddr], target: &[IpAddr]) -> Result<(), AsRefusal> {
    let target_loopback = !target.is_empty() && target.iter().all(|a| range(*a) == Range::Loopback);
    match url.scheme() {
        "https" => {}
        "http" if target_loopback => {}
        other => return Err(AsRefusal::Scheme(other.to_string())),
    }
    let host = url.host_str().ok_or(AsRefusal::NoHost)?;
    let target_ranges: Vec<Range> = target.iter().map(|a| range(*a)).collect();
    for addr in addrs {
        let r = range(*addr);
        if r != Range::Public && !target_ranges.contains(&r) {
            return Err(AsRefusal::Address {
                host: host.to_string(),
                addr: *addr,
                range: r,
            });
        }
    }
    Ok(())
}

/// A URL as it may be shown: any `user:password@` replaced by `[REDACTED]@`.
pub fn shown_url(url: &Url) -> String {
    if url.username().is_empty() && url.password().is_none() {
        return url.to_string();
    }
    let mut u = url.clone();
    // Setting the userinfo fails only for URLs that cannot have one (and then had none).
    if u.set_password(None).is_err() || u.set_username("").is_err() {
        return "[REDACTED URL]".into();
    }
    let s = u.to_string();
    match s.find("://") {
        Some(i) => format!("{}://[REDACTED]@{}", &s[..i], &s[i + 3..]),
        None => "[REDACTED URL]".into(),
    }
}

/// A URL string as it may be shown (userinfo redacted); unparsable text is kept as is.
pub fn shown_url_str(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(u) => shown_url(&u),
        Err(_) => raw.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn ranges_include_mapped_and_compatible_forms() {
        assert_eq!(range(ip("169.254.169.254")), Range::LinkLocal);
        assert_eq!(range(ip("::ffff:169.254.169.254")), Range::LinkLocal);
        assert_eq!(range(ip("::169.254.169.254")), Range::LinkLocal);
        assert_eq!(range(ip("64:ff9b::a9fe:a9fe")), Range::LinkLocal);
        assert_eq!(range(ip("fe80::1")), Range::LinkLocal);
        assert_eq!(range(ip("::ffff:127.0.0.1")), Range::Loopback);
        assert_eq!(range(ip("::1")), Range::Loopback);
        assert_eq!(range(ip("10.1.2.3")), Range::Private);
        assert_eq!(range(ip("fd00::1")), Range::Private);
        assert_eq!(range(ip("100.64.0.1")), Range::Cgnat);
        assert_eq!(range(ip("100.128.0.1")), Range::Public);
        assert_eq!(range(ip("0.0.0.0")), Range::Unspecified);
        assert_eq!(range(ip("::")), Range::Unspecified);
        assert_eq!(range(ip("93.184.216.34")), Range::Public);
        assert_eq!(range(ip("2606:4700::1")), Range::Public);
    }

    #[test]
    fn judge_refuses_other_ranges_and_plain_http() {
        let url = |s: &str| Url::parse(s).expect("a URL");
        let remote = [ip("10.200.0.2")];
        let metadata = [ip("169.254.169.254")];
        assert!(matches!(
            judge(&url("https://as.test/"), &metadata, &remote),
            Err(AsRefusal::Address { .. })
        ));
        assert!(matches!(
            judge(&url("https://as.test/"), &[ip("127.0.0.1")], &remote),
            Err(AsRefusal::Address { .. })
        ));
        // Same range as the target: allowed.
        assert!(judge(&url("https://as.test/"), &[ip("10.9.9.9")], &remote).is_ok());
        assert!(matches!(
            judge(&url("http://as.test/"), &[ip("10.9.9.9")], &remote),
            Err(AsRefusal::Scheme(_))
        ));
        let local = [ip("127.0.0.1")];
        assert!(judge(&url("http://127.0.0.1:9/"), &local, &local).is_ok());
        assert!(judge(&url("ftp://127.0.0.1:9/"), &local, &local).is_err());
        assert!(judge(&url("https://x/"), &[ip("169.254.169.254")], &local).is_err());
    }

    #[test]
    fn userinfo_is_redacted() {
        let u = Url::parse("https://alice:hunter2@as.test/x").expect("a URL");
        let s = shown_url(&u);
        assert!(!s.contains("hunter2") && !s.contains("alice"), "{s}");
        assert_eq!(s, "https://[REDACTED]@as.test/x");
        assert_eq!(
            shown_url_str("https://as.test/y"),
            "https://as.test/y".to_string()
        );
    }
}
