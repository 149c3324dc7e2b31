//! DNS through hickory-resolver: the system configuration by default, or one named server
//! (`--resolver IP:PORT`, `MCPPROBE_RESOLVER`). Every name mcpprobe looks up goes through here,
//! and the HTTP client connects only to the addresses found here (pinned for the whole scan).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use hickory_resolver::{Resolver, TokioResolver};

/// Why a lookup gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DnsFailure {
    /// The name does not exist, or has no record of the type asked.
    #[error("no such record")]
    NoRecords,
    /// The server did not answer usefully (timeout, SERVFAIL, refused, network error).
    #[error("lookup failed: {0}")]
    Failed(String),
}

/// Why the resolver could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DnsSetupError {
    #[error("cannot read the system DNS configuration: {0}")]
    SystemConfig(#[source] hickory_resolver::net::NetError),
    #[error("cannot build the DNS resolver: {0}")]
    Build(#[source] hickory_resolver::net::NetError),
}

pub struct Dns {
    resolver: TokioResolver,
    /// Describes where questions go, for reports.
    pub source: String,
}

impl Dns {
    /// The system resolver, or `server` when given.
    pub fn new(server: Option<SocketAddr>) -> Result<Dns, DnsSetupError> {
        let mut opts = ResolverOpts::default();
        opts.timeout = Duration::from_secs(3);
        opts.attempts = 2;
        // Every scan re-checks: never answer from a cache.
        opts.cache_size = 0;
        let (builder, source) = match server {
            Some(addr) => {
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                let mut ns = NameServerConfig::udp_and_tcp(addr.ip());
                ns.connections = vec![udp, tcp];
                opts.use_hosts_file = ResolveHosts::Never;
                let config = ResolverConfig::from_parts(None, vec![], vec![ns]);
                (
                    Resolver::builder_with_config(config, TokioRuntimeProvider::default()),
                    format!("name server {addr}"),
                )
            }
            None => {
                let b = TokioResolver::builder_tokio().map_err(DnsSetupError::SystemConfig)?;
                (b, "the system resolver".to_string())
            }
        };
        let resolver = builder
            .with_options(opts)
            .build()
            .map_err(DnsSetupError::Build)?;
        Ok(Dns { resolver, source })
    }

    /// TXT records of `name`, each with its character-strings joined (a record split into
    /// several strings is one text).
    pub async fn txt(&self, name: &str) -> Result<Vec<String>, DnsFailure> {
        let fqdn = format!("{}.", name.trim_end_matches('.'));
        match self.resolver.txt_lookup(fqdn).await {
            Ok(lookup) => Ok(lookup
                .answers()
                .iter()
                .filter_map(|r| match &r.data {
                    RData::TXT(txt) => Some(
                        txt.txt_data
                            .iter()
                            .map(|part| String::from_utf8_lossy(part))
                            .collect(),
                    ),
                    _ => None,
                })
                .collect()),
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => Ok(Vec::new()),
            Err(e) => Err(DnsFailure::Failed(e.to_string())),
        }
    }

    /// The addresses of a host name (`localhost` is loopback by definition, RFC 6761).
    pub async fn addresses(&self, host: &str) -> Result<Vec<IpAddr>, DnsFailure> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if host == "localhost" || host.ends_with(".localhost") {
            return Ok(vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ]);
        }
        match self.resolver.lookup_ip(format!("{host}.")).await {
            Ok(lookup) => {
                let mut addrs: Vec<IpAddr> = lookup.iter().collect();
                addrs.sort();
                addrs.dedup();
                if addrs.is_empty() {
                    Err(DnsFailure::NoRecords)
                } else {
                    Ok(addrs)
                }
            }
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => Err(DnsFailure::NoRecords),
            Err(e) => Err(DnsFailure::Failed(e.to_string())),
        }
    }
}

/// Loopback: 127.0.0.0/8 and ::1 (and IPv4-mapped loopback).
pub fn is_loopback(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}
