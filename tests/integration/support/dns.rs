//! A real authoritative DNS server (hickory-server) on 127.0.0.1, UDP and TCP, for one zone.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::TokioRuntimeProvider;
use hickory_server::proto::rr::LowerName;
use hickory_server::proto::serialize::txt::Parser;
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};

pub struct TestDns {
    pub addr: SocketAddr,
}

impl TestDns {
    /// Serves `$ORIGIN test.` with the given record lines (zone-file syntax, relative names).
    pub fn start(rt: &tokio::runtime::Runtime, records: &[&str]) -> TestDns {
        let zone = format!(
            "$ORIGIN test.\n@ 60 IN SOA ns.test. admin.test. 1 3600 600 86400 60\n@ 60 IN NS ns.test.\nns 60 IN A 127.0.0.1\n{}\n",
            records.join("\n")
        );
        rt.block_on(async move {
            let (origin, records) = Parser::new(zone, None, None)
                .parse()
                .expect("the test zone parses");
            let handler = InMemoryZoneHandler::<TokioRuntimeProvider>::new(
                origin.clone(),
                records,
                ZoneType::Primary,
                AxfrPolicy::Deny,
            )
            .expect("a zone handler");
            let mut catalog = Catalog::new();
            catalog.upsert(LowerName::from(&origin), vec![Arc::new(handler)]);
            // UDP and TCP on one port: a free UDP port may be taken for TCP, so try a few.
            let mut pair = None;
            for _ in 0..50 {
                let udp = tokio::net::UdpSocket::bind("127.0.0.1:0")
                    .await
                    .expect("udp bind");
                let addr = udp.local_addr().expect("udp addr");
                if let Ok(tcp) = tokio::net::TcpListener::bind(addr).await {
                    pair = Some((udp, tcp, addr));
                    break;
                }
            }
            let (udp, tcp, addr) = pair.expect("a port free for both UDP and TCP");
            let mut server = Server::new(catalog);
            server.register_socket(udp);
            server.register_listener(tcp, Duration::from_secs(5), 16);
            // The server runs on the runtime's tasks until the runtime is dropped.
            tokio::spawn(async move {
                let _keep = server;
                std::future::pending::<()>().await;
            });
            TestDns { addr }
        })
    }

    pub fn arg(&self) -> String {
        self.addr.to_string()
    }
}
