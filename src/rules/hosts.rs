//! URL and address helpers shared by the card rules.

use std::net::IpAddr;

use url::{Host, Url};

/// Parses an endpoint URL; `{var}` template parts are replaced by a placeholder label so that
/// `https://{tenant}.example.com/mcp` can be judged. `None` when the URL starts with a variable
/// (nothing to judge) .
pub fn parse_template(raw: &str) -> Option<Result<Url, url::ParseError>> {
    if raw.trim_start().starts_with('{') {
        return None;
    }
    let mut s = String::with_capacity(raw.len());
    let mut depth = 0usize;
    for c in raw.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    s.push_str("var");
                }
                depth += 1;
            }
            '}' if depth > 0 => depth -= 1,
            c if depth == 0 => s.push(c),
            _ => {}
        }
    }
    Some(Url::parse(&s))
}

/// Loopback: 127.0.0.0/8, ::1, and the name `localhost` (and `*.localhost`).
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        None => false,
    }
}

/// Why a URL's host is local, private or link-local, if it is.
pub fn private_host(url: &Url) -> Option<String> {
    let ip: Option<IpAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => Some(ip.into()),
        Some(Host::Ipv6(ip)) => Some(ip.into()),
        Some(Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            let internal = [
                ".local",
                ".internal",
                ".lan",
                ".corp",
                ".home.arpa",
                ".localhost",
                ".intranet",
            ];
            if d == "localhost" || internal.iter().any(|s| d.ends_with(s)) {
                return Some(format!("{d} is a local or internal name"));
            }
            None
        }
        None => None,
    };
    let ip = ip?;
    let why = match ip {
        IpAddr::V4(v4) if v4.is_loopback() => "loopback",
        IpAddr::V4(v4) if v4.is_private() => "private (RFC 1918)",
        IpAddr::V4(v4) if v4.is_link_local() => "link-local",
        IpAddr::V4(v4) if v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1]) => {
            "carrier-grade NAT"
        }
        IpAddr::V4(v4) if v4.is_unspecified() => "unspecified",
        IpAddr::V6(v6) if v6.is_loopback() => "loopback",
        IpAddr::V6(v6) if v6.is_unspecified() => "unspecified",
        IpAddr::V6(v6) if (v6.segments()[0] & 0xfe00) == 0xfc00 => "unique local",
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => "link-local",
        _ => return None,
    };
    Some(format!("{ip} is a {why} address"))
}
