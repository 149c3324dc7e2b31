//! The address rule (SPEC §1.2, §7): which range an address is in, and where the requests of a
//! scan may go because of it. One function, [`classify`], judges every address mcpprobe is about
//! to connect to in two places:
//!
//! - the gate: every address a DNS-proven name resolves to (the addresses the scan is then
//!   pinned to) must be public, unless the user said `--allow-private-addresses`
//!   ([`first_not_public`]);
//! - AUTH-03's one GET to the authorization server a target advertises: an advertised URL is a
//!   server's word, so it is judged by the addresses it resolves to (after DNS, the same
//!   addresses the request is pinned to), never by its text alone ([`judge`]).
//!
//! An IPv6 address that carries an IPv4 one (IPv4-mapped, IPv4-compatible, SIIT-translated,
//! 6to4, NAT64) is judged by the IPv4 address it carries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

/// The kind of range an address is in. Everything but [`Range::Public`] is refused by the gate
/// without `--allow-private-addresses`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Range {
    /// 127/8, `::1`.
    Loopback,
    /// RFC 1918: 10/8, 172.16/12, 192.168/16.
    Private,
    /// IPv6 unique-local fc00::/7 (and the deprecated site-local fec0::/10).
    UniqueLocal,
    /// 169.254/16 and fe80::/10: where cloud metadata services answer.
    LinkLocal,
    /// 100.64/10 (RFC 6598).
    Cgnat,
    /// The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215): a translator of this network.
    LocalNat64,
    /// 198.18/15 and 2001:2::/48 (RFC 2544, RFC 5180).
    Benchmark,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 0.0.0.0/8, `::`.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// Blocks no server lives in: 240/4, 192.0.0/24, 192.88.99/24, 100::/64, Teredo
    /// 2001::/32, ORCHID 2001:10::/28 and 2001:20::/28.
    Reserved,
    Public,
}

impl Range {
    /// The range in words, as messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            Range::Loopback => "loopback",
            Range::Private => "private (RFC 1918)",
            Range::UniqueLocal => "unique-local (fc00::/7)",
            Range::LinkLocal => "link-local (cloud metadata services answer there)",
            Range::Cgnat => "carrier-grade NAT (RFC 6598)",
            Range::LocalNat64 => "local-use NAT64 (RFC 8215)",
            Range::Benchmark => "benchmarking (RFC 2544)",
            Range::Documentation => "documentation",
            Range::Unspecified => "unspecified",
            Range::Multicast => "multicast",
            Range::Broadcast => "broadcast",
            Range::Reserved => "reserved",
            Range::Public => "public",
        }
    }

    /// The short name reports and tests can match on (`link-local`, `private`, …).
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// How an IPv6 address carries the IPv4 address it is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// `::ffff:a.b.c.d` (::ffff:0:0/96).
    Mapped,
    /// `::a.b.c.d` (::/96, deprecated but still routed by some stacks).
    Compatible,
    /// `::ffff:0:a.b.c.d` (::ffff:0:0:0/96, SIIT).
    Translated,
    /// 2002:AABB:CCDD::/48 (6to4, 2002::/16).
    SixToFour,
    /// 64:ff9b::a.b.c.d (the NAT64 well-known prefix 64:ff9b::/96).
    Nat64,
}

impl Carrier {
    fn describe(self) -> &'static str {
        match self {
            Carrier::Mapped => "an IPv4-mapped address (::ffff:0:0/96)",
            Carrier::Compatible => "an IPv4-compatible address (::/96)",
            Carrier::Translated => "an IPv4-translated address (::ffff:0:0:0/96)",
            Carrier::SixToFour => "a 6to4 address (2002::/16)",
            Carrier::Nat64 => "a NAT64 address (64:ff9b::/96)",
        }
    }
}

/// What [`classify`] found: the range, the block (CIDR) it was found in and, for an IPv6
/// address that carries an IPv4 one, how and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub range: Range,
    /// The block, `10.0.0.0/8`; `None` for a public address.
    pub block: Option<&'static str>,
    pub carried: Option<(Carrier, Ipv4Addr)>,
}

impl Class {
    pub fn is_public(&self) -> bool {
        self.range == Range::Public
    }
}

impl std::fmt::Display for Class {
    /// `the private (RFC 1918) range 10.0.0.0/8`; for a carried address `the link-local (…)
    /// range 169.254.0.0/16 (169.254.169.254 inside an IPv4-mapped address (::ffff:0:0/96))`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.block {
            Some(block) => write!(f, "the {} range {block}", self.range.describe())?,
            None => write!(f, "the {} range", self.range.describe())?,
        }
        if let Some((carrier, v4)) = self.carried {
            write!(f, " ({v4} inside {})", carrier.describe())?;
        }
        Ok(())
    }
}

fn v4_block(ip: Ipv4Addr) -> (Range, Option<&'static str>) {
    let o = ip.octets();
    let (range, block) = match o {
        [0, ..] => (Range::Unspecified, "0.0.0.0/8"),
        [10, ..] => (Range::Private, "10.0.0.0/8"),
        [100, b, ..] if (64..128).contains(&b) => (Range::Cgnat, "100.64.0.0/10"),
        [127, ..] => (Range::Loopback, "127.0.0.0/8"),
        [169, 254, ..] => (Range::LinkLocal, "169.254.0.0/16"),
        [172, b, ..] if (16..32).contains(&b) => (Range::Private, "172.16.0.0/12"),
        [192, 0, 0, _] => (Range::Reserved, "192.0.0.0/24"),
        [192, 0, 2, _] => (Range::Documentation, "192.0.2.0/24"),
        [192, 88, 99, _] => (Range::Reserved, "192.88.99.0/24"),
        [192, 168, ..] => (Range::Private, "192.168.0.0/16"),
        [198, 18 | 19, ..] => (Range::Benchmark, "198.18.0.0/15"),
        [198, 51, 100, _] => (Range::Documentation, "198.51.100.0/24"),
        [203, 0, 113, _] => (Range::Documentation, "203.0.113.0/24"),
        [a, ..] if (224..240).contains(&a) => (Range::Multicast, "224.0.0.0/4"),
        [255, 255, 255, 255] => (Range::Broadcast, "255.255.255.255/32"),
        [a, ..] if a >= 240 => (Range::Reserved, "240.0.0.0/4"),
        _ => return (Range::Public, None),
    };
    (range, Some(block))
}

fn tail_v4(s: &[u16; 8]) -> Ipv4Addr {
    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8)
}

/// The IPv4 address inside an IPv6 one that carries it, and how.
fn carried_v4(ip: Ipv6Addr) -> Option<(Carrier, Ipv4Addr)> {
    let s = ip.segments();
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => Some((Carrier::Mapped, tail_v4(&s))),
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, ..] => Some((Carrier::Compatible, tail_v4(&s))),
        [0, 0, 0, 0, 0xffff, 0, ..] => Some((Carrier::Translated, tail_v4(&s))),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some((Carrier::Nat64, tail_v4(&s))),
        [0x2002, a, b, ..] => Some((
            Carrier::SixToFour,
            Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8),
        )),
        _ => None,
    }
}

fn v6_block(ip: Ipv6Addr) -> (Range, Option<&'static str>) {
    let s = ip.segments();
    let (range, block) = if ip.is_unspecified() {
        (Range::Unspecified, "::/128")
    } else if ip.is_loopback() {
        (Range::Loopback, "::1/128")
    } else if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        (Range::LocalNat64, "64:ff9b:1::/48")
    } else if s[0] == 0x100 && s[1..4] == [0, 0, 0] {
        (Range::Reserved, "100::/64")
    } else if s[0] == 0x2001 && s[1] == 0 {
        (Range::Reserved, "2001::/32 (Teredo)")
    } else if s[0] == 0x2001 && s[1] == 2 && s[2] == 0 {
        (Range::Benchmark, "2001:2::/48")
    } else if s[0] == 0x2001 && (s[1] & 0xfff0) == 0x10 {
        (Range::Reserved, "2001:10::/28 (ORCHID)")
    } else if s[0] == 0x2001 && (s[1] & 0xfff0) == 0x20 {
        (Range::Reserved, "2001:20::/28 (ORCHIDv2)")
    } else if s[0] == 0x2001 && s[1] == 0xdb8 {
        (Range::Documentation, "2001:db8::/32")
    } else if s[0] == 0x3fff && s[1] < 0x1000 {
        (Range::Documentation, "3fff::/20")
    } else if (s[0] & 0xfe00) == 0xfc00 {
        (Range::UniqueLocal, "fc00::/7")
    } else if (s[0] & 0xffc0) == 0xfe80 {
        (Range::LinkLocal, "fe80::/10")
    } else if (s[0] & 0xffc0) == 0xfec0 {
        (Range::UniqueLocal, "fec0::/10 (deprecated site-local)")
    } else if (s[0] & 0xff00) == 0xff00 {
        (Range::Multicast, "ff00::/8")
    } else {
        return (Range::Public, None);
    };
    (range, Some(block))
}

/// The range an address is in, the block it was found in, and the IPv4 address it carries
/// (an IPv6 address carrying an IPv4 one is judged as that one).
pub fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => {
            let (range, block) = v4_block(v4);
            Class {
                range,
                block,
                carried: None,
            }
        }
        IpAddr::V6(v6) => match carried_v4(v6) {
            Some((carrier, v4)) => {
                let (range, block) = v4_block(v4);
                Class {
                    range,
                    block,
                    carried: Some((carrier, v4)),
                }
            }
            None => {
                let (range, block) = v6_block(v6);
                Class {
                    range,
                    block,
                    carried: None,
                }
            }
        },
    }
}

/// The range an address is in (see [`classify`]).
pub fn range(ip: IpAddr) -> Range {
    classify(ip).range
}

/// Every one of `addrs` that is not public, with its class, in order.
pub fn not_public(addrs: &[IpAddr]) -> Vec<(IpAddr, Class)> {
    addrs
        .iter()
        .map(|a| (*a, classify(*a)))
        .filter(|(_, c)| !c.is_public())
        .collect()
}

/// The first of `addrs` that is not public, with its class: what refuses a DNS-proven name
/// without `--allow-private-addresses` (a mix of public and such addresses included).
pub fn first_not_public(addrs: &[IpAddr]) -> Option<(IpAddr, Class)> {
    addrs
        .iter()
        .map(|a| (*a, classify(*a)))
        .find(|(_, c)| !c.is_public())
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
    #[error("{host} resolves to {addr}, in {class}, and that is not the target's own host")]
    Address {
        host: String,
        addr: IpAddr,
        class: Class,
    },
}

/// Whether `addr` is one of the target's own addresses (loopback counts as one host: this
/// machine). IPv4-mapped forms compare as their IPv4 address.
fn same_host(addr: IpAddr, target: &[IpAddr]) -> bool {
    let addr = addr.to_canonical();
    target.iter().any(|t| {
        let t = t.to_canonical();
        t == addr || (range(t) == Range::Loopback && range(addr) == Range::Loopback)
    })
}

/// Whether a request to `url`, resolved to `addrs`, is allowed for a target pinned to
/// `target`: every address public, or the target's own host (a private target's
/// authorization server may be that same host, and no other address of its network).
pub fn judge(url: &Url, addrs: &[IpAddr], target: &[IpAddr]) -> Result<(), AsRefusal> {
    let target_loopback = !target.is_empty() && target.iter().all(|a| range(*a) == Range::Loopback);
    match url.scheme() {
        "https" => {}
        "http" if target_loopback => {}
        other => return Err(AsRefusal::Scheme(other.to_string())),
    }
    let host = url.host_str().ok_or(AsRefusal::NoHost)?;
    for addr in addrs {
        let class = classify(*addr);
        if !class.is_public() && !same_host(*addr, target) {
            return Err(AsRefusal::Address {
                host: host.to_string(),
                addr: *addr,
                class,
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

    #[test]
    fn range_names_are_the_ones_reports_match_on() {
        let names: Vec<&str> = [
            Range::Loopback,
            Range::Private,
            Range::UniqueLocal,
            Range::LinkLocal,
            Range::Cgnat,
            Range::LocalNat64,
            Range::Benchmark,
            Range::Documentation,
            Range::Unspecified,
            Range::Multicast,
            Range::Broadcast,
            Range::Reserved,
            Range::Public,
        ]
        .into_iter()
        .map(Range::name)
        .collect();
        assert_eq!(
            names,
            [
                "loopback",
                "private",
                "unique-local",
                "link-local",
                "cgnat",
                "local-nat64",
                "benchmark",
                "documentation",
                "unspecified",
                "multicast",
                "broadcast",
                "reserved",
                "public"
            ]
        );
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    /// Each address, the range it is in and the block named (None: public).
    fn assert_ranges(cases: &[(&str, Range, Option<&str>)]) {
        for (addr, want, block) in cases {
            let c = classify(ip(addr));
            assert_eq!(c.range, *want, "{addr}");
            assert_eq!(c.block, *block, "{addr}");
            assert_eq!(range(ip(addr)), *want, "{addr}");
        }
    }

    #[test]
    fn v4_ranges_and_their_boundaries() {
        use Range::*;
        assert_ranges(&[
            ("0.0.0.0", Unspecified, Some("0.0.0.0/8")),
            ("0.255.255.255", Unspecified, Some("0.0.0.0/8")),
            ("1.0.0.0", Public, None),
            ("9.255.255.255", Public, None),
            ("10.0.0.0", Private, Some("10.0.0.0/8")),
            ("10.255.255.255", Private, Some("10.0.0.0/8")),
            ("11.0.0.0", Public, None),
            ("100.63.255.255", Public, None),
            ("100.64.0.0", Cgnat, Some("100.64.0.0/10")),
            ("100.127.255.255", Cgnat, Some("100.64.0.0/10")),
            ("100.128.0.0", Public, None),
            ("126.255.255.255", Public, None),
            ("127.0.0.0", Loopback, Some("127.0.0.0/8")),
            ("127.255.255.255", Loopback, Some("127.0.0.0/8")),
            ("128.0.0.0", Public, None),
            ("169.253.255.255", Public, None),
            ("169.254.0.0", LinkLocal, Some("169.254.0.0/16")),
            ("169.254.169.254", LinkLocal, Some("169.254.0.0/16")),
            ("169.254.255.255", LinkLocal, Some("169.254.0.0/16")),
            ("169.255.0.0", Public, None),
            ("172.15.255.255", Public, None),
            ("172.16.0.0", Private, Some("172.16.0.0/12")),
            ("172.31.255.255", Private, Some("172.16.0.0/12")),
            ("172.32.0.0", Public, None),
            ("191.255.255.255", Public, None),
            ("192.0.0.0", Reserved, Some("192.0.0.0/24")),
            ("192.0.0.255", Reserved, Some("192.0.0.0/24")),
            ("192.0.1.0", Public, None),
            ("192.0.2.0", Documentation, Some("192.0.2.0/24")),
            ("192.0.2.255", Documentation, Some("192.0.2.0/24")),
            ("192.0.3.0", Public, None),
            ("192.88.98.255", Public, None),
            ("192.88.99.1", Reserved, Some("192.88.99.0/24")),
            ("192.88.100.0", Public, None),
            ("192.167.255.255", Public, None),
            ("192.168.0.0", Private, Some("192.168.0.0/16")),
            ("192.168.255.255", Private, Some("192.168.0.0/16")),
            ("192.169.0.0", Public, None),
            ("198.17.255.255", Public, None),
            ("198.18.0.0", Benchmark, Some("198.18.0.0/15")),
            ("198.19.255.255", Benchmark, Some("198.18.0.0/15")),
            ("198.20.0.0", Public, None),
            ("198.51.99.255", Public, None),
            ("198.51.100.0", Documentation, Some("198.51.100.0/24")),
            ("198.51.100.255", Documentation, Some("198.51.100.0/24")),
            ("198.51.101.0", Public, None),
            ("203.0.112.255", Public, None),
            ("203.0.113.0", Documentation, Some("203.0.113.0/24")),
            ("203.0.113.255", Documentation, Some("203.0.113.0/24")),
            ("203.0.114.0", Public, None),
            ("223.255.255.255", Public, None),
            ("224.0.0.0", Multicast, Some("224.0.0.0/4")),
            ("239.255.255.255", Multicast, Some("224.0.0.0/4")),
            ("240.0.0.0", Reserved, Some("240.0.0.0/4")),
            ("255.255.255.254", Reserved, Some("240.0.0.0/4")),
            ("255.255.255.255", Broadcast, Some("255.255.255.255/32")),
            ("8.8.8.8", Public, None),
            ("93.184.216.34", Public, None),
        ]);
    }

    #[test]
    fn v6_ranges_and_their_boundaries() {
        use Range::*;
        assert_ranges(&[
            ("::", Unspecified, Some("::/128")),
            ("::1", Loopback, Some("::1/128")),
            ("fc00::", UniqueLocal, Some("fc00::/7")),
            ("fd00::1", UniqueLocal, Some("fc00::/7")),
            (
                "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                UniqueLocal,
                Some("fc00::/7"),
            ),
            ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Public, None),
            ("fe00::", Public, None),
            ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Public, None),
            ("fe80::", LinkLocal, Some("fe80::/10")),
            ("fe80::1", LinkLocal, Some("fe80::/10")),
            (
                "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                LinkLocal,
                Some("fe80::/10"),
            ),
            (
                "fec0::1",
                UniqueLocal,
                Some("fec0::/10 (deprecated site-local)"),
            ),
            ("ff00::", Multicast, Some("ff00::/8")),
            ("ff02::1", Multicast, Some("ff00::/8")),
            ("2001:db8::", Documentation, Some("2001:db8::/32")),
            (
                "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
                Documentation,
                Some("2001:db8::/32"),
            ),
            ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", Public, None),
            ("2001:db9::", Public, None),
            ("3fff::1", Documentation, Some("3fff::/20")),
            ("3fff:fff::1", Documentation, Some("3fff::/20")),
            ("3fff:1000::", Public, None),
            ("3ffe:ffff::1", Public, None),
            ("3ff0::1", Public, None),
            ("2001:2::1", Benchmark, Some("2001:2::/48")),
            ("2001:2:0:ffff::", Benchmark, Some("2001:2::/48")),
            ("2001:2:1::", Public, None),
            ("2001::1", Reserved, Some("2001::/32 (Teredo)")),
            ("2001:10::1", Reserved, Some("2001:10::/28 (ORCHID)")),
            ("2001:20::1", Reserved, Some("2001:20::/28 (ORCHIDv2)")),
            ("2001:30::1", Public, None),
            ("100::1", Reserved, Some("100::/64")),
            ("100:0:0:1::", Public, None),
            ("64:ff9b:1::1", LocalNat64, Some("64:ff9b:1::/48")),
            ("64:ff9b:1:ffff::", LocalNat64, Some("64:ff9b:1::/48")),
            ("64:ff9b:2::1", Public, None),
            ("2606:4700::1", Public, None),
            ("2a00:1450:4001::1", Public, None),
        ]);
    }

    #[test]
    fn carried_ipv4_is_judged_as_itself() {
        use Range::*;
        let cases = [
            // IPv4-mapped.
            (
                "::ffff:169.254.169.254",
                LinkLocal,
                Carrier::Mapped,
                "169.254.169.254",
            ),
            ("::ffff:127.0.0.1", Loopback, Carrier::Mapped, "127.0.0.1"),
            ("::ffff:10.0.0.1", Private, Carrier::Mapped, "10.0.0.1"),
            (
                "::ffff:192.0.2.1",
                Documentation,
                Carrier::Mapped,
                "192.0.2.1",
            ),
            ("::ffff:8.8.8.8", Public, Carrier::Mapped, "8.8.8.8"),
            // IPv4-compatible and SIIT-translated.
            (
                "::169.254.169.254",
                LinkLocal,
                Carrier::Compatible,
                "169.254.169.254",
            ),
            ("::10.1.2.3", Private, Carrier::Compatible, "10.1.2.3"),
            (
                "::ffff:0:127.0.0.1",
                Loopback,
                Carrier::Translated,
                "127.0.0.1",
            ),
            // 6to4: the IPv4 address is bits 16–47.
            (
                "2002:a9fe:a9fe::1",
                LinkLocal,
                Carrier::SixToFour,
                "169.254.169.254",
            ),
            ("2002:7f00:1::", Loopback, Carrier::SixToFour, "127.0.0.1"),
            ("2002:0a00:0001::", Private, Carrier::SixToFour, "10.0.0.1"),
            ("2002:c612:1::", Benchmark, Carrier::SixToFour, "198.18.0.1"),
            ("2002:0808:0808::", Public, Carrier::SixToFour, "8.8.8.8"),
            // NAT64 well-known prefix: the last 32 bits.
            (
                "64:ff9b::a9fe:a9fe",
                LinkLocal,
                Carrier::Nat64,
                "169.254.169.254",
            ),
            ("64:ff9b::10.0.0.1", Private, Carrier::Nat64, "10.0.0.1"),
            ("64:ff9b::100.64.0.1", Cgnat, Carrier::Nat64, "100.64.0.1"),
            ("64:ff9b::127.0.0.1", Loopback, Carrier::Nat64, "127.0.0.1"),
            ("64:ff9b::8.8.8.8", Public, Carrier::Nat64, "8.8.8.8"),
        ];
        for (addr, want, carrier, v4) in cases {
            let c = classify(ip(addr));
            assert_eq!(c.range, want, "{addr}");
            assert_eq!(
                c.carried,
                Some((carrier, v4.parse().expect("v4"))),
                "{addr}"
            );
        }
        // Neighbours of the carrying prefixes are not carriers.
        assert_eq!(classify(ip("::ffff:1:0:1")).carried, None);
        assert_eq!(classify(ip("64:ff9b:0:1::a00:1")).carried, None);
        assert_eq!(classify(ip("2003::1")).range, Range::Public);
        assert_eq!(classify(ip("2001:db8::a00:1")).carried, None);
    }

    #[test]
    fn a_class_names_its_range_block_and_carrier() {
        let c = classify(ip("::ffff:169.254.169.254"));
        let s = c.to_string();
        assert!(
            s.contains("link-local") && s.contains("169.254.0.0/16"),
            "{s}"
        );
        assert!(
            s.contains("169.254.169.254") && s.contains("IPv4-mapped"),
            "{s}"
        );
        let s = classify(ip("10.1.2.3")).to_string();
        assert_eq!(s, "the private (RFC 1918) range 10.0.0.0/8");
    }

    #[test]
    fn the_first_address_that_is_not_public_refuses_a_mix() {
        assert_eq!(first_not_public(&[ip("8.8.8.8"), ip("2606:4700::1")]), None);
        assert_eq!(first_not_public(&[]), None);
        let (addr, class) =
            first_not_public(&[ip("8.8.8.8"), ip("127.0.0.1")]).expect("a loopback address");
        assert_eq!(addr, ip("127.0.0.1"));
        assert_eq!(class.range, Range::Loopback);
        let (addr, _) = first_not_public(&[ip("192.0.2.7"), ip("8.8.8.8")]).expect("doc");
        assert_eq!(addr, ip("192.0.2.7"));
        let all = not_public(&[ip("127.0.0.1"), ip("8.8.8.8"), ip("2001:db8::1")]);
        let found: Vec<(IpAddr, Range)> = all.iter().map(|(a, c)| (*a, c.range)).collect();
        assert_eq!(
            found,
            vec![
                (ip("127.0.0.1"), Range::Loopback),
                (ip("2001:db8::1"), Range::Documentation)
            ]
        );
    }

    #[test]
    fn judge_refuses_other_hosts_and_plain_http() {
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
        // A private target's authorization server may be that same host, no other of its
        // network.
        assert!(judge(&url("https://as.test:8443/"), &[ip("10.200.0.2")], &remote).is_ok());
        assert!(
            judge(
                &url("https://as.test/"),
                &[ip("::ffff:10.200.0.2")],
                &remote
            )
            .is_ok()
        );
        assert!(matches!(
            judge(&url("https://as.test/"), &[ip("10.200.0.1")], &remote),
            Err(AsRefusal::Address { .. })
        ));
        assert!(matches!(
            judge(
                &url("https://as.test/"),
                &[ip("10.200.0.2"), ip("10.9.9.9")],
                &remote
            ),
            Err(AsRefusal::Address { .. })
        ));
        // Public addresses are fine from any target.
        assert!(judge(&url("https://as.test/"), &[ip("8.8.8.8")], &remote).is_ok());
        assert!(judge(&url("https://as.test/"), &[ip("8.8.8.8")], &[ip("8.8.4.4")]).is_ok());
        // A public target's authorization server is never in a private range.
        assert!(
            judge(
                &url("https://as.test/"),
                &[ip("10.0.0.1")],
                &[ip("8.8.4.4")]
            )
            .is_err()
        );
        assert!(matches!(
            judge(&url("http://as.test/"), &[ip("10.200.0.2")], &remote),
            Err(AsRefusal::Scheme(_))
        ));
        // Loopback is one host: this machine.
        let local = [ip("127.0.0.1")];
        assert!(judge(&url("http://127.0.0.1:9/"), &local, &local).is_ok());
        assert!(
            judge(
                &url("http://localhost:9/"),
                &[ip("127.0.0.1"), ip("::1")],
                &local
            )
            .is_ok()
        );
        assert!(judge(&url("ftp://127.0.0.1:9/"), &local, &local).is_err());
        assert!(judge(&url("https://x/"), &[ip("169.254.169.254")], &local).is_err());
        assert!(judge(&url("https://x/"), &[ip("10.200.0.2")], &local).is_err());
        let msg = judge(&url("https://x/"), &metadata, &local)
            .expect_err("refused")
            .to_string();
        assert!(
            msg.contains("169.254.169.254") && msg.contains("link-local"),
            "{msg}"
        );
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
