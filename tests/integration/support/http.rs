//! A real HTTP server (axum) on 127.0.0.1:0 that answers from a route table and records every
//! request it receives (method, path, headers, body, arrival time).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

/// What a route answers. `echo` answers with the request's headers as the body.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub echo: bool,
    /// Answers with the value of this request header (a server that reflects credentials).
    pub echo_header: Option<String>,
}

impl Answer {
    pub fn new(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.to_string(),
            ..Answer::default()
        }
    }
    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

#[derive(Clone, Default)]
struct Shared {
    routes: Arc<HashMap<String, Answer>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

pub struct TestHttp {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn handle(State(s): State<Shared>, req: Request) -> Response {
    // When the request arrived (its head), not when its body was read.
    let at = Instant::now();
    let (parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let path = parts.uri.path().to_string();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    s.seen.lock().expect("lock").push(Seen {
        method: parts.method.to_string(),
        path: path.clone(),
        headers: headers.clone(),
        body: String::from_utf8_lossy(&bytes).into_owned(),
        at,
    });
    let key = format!("{} {}", parts.method, path);
    let answer = s
        .routes
        .get(&key)
        .or_else(|| s.routes.get(&format!("* {path}")));
    let Some(a) = answer else {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    };
    let mut map = HeaderMap::new();
    for (n, v) in &a.headers {
        if let (Ok(n), Ok(v)) = (n.parse::<axum::http::HeaderName>(), v.parse()) {
            map.insert(n, v);
        }
    }
    let reflected = a
        .echo_header
        .as_ref()
        .and_then(|h| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(h)))
        .map(|(_, v)| format!("unauthorized: {v}"));
    let body = if let Some(r) = reflected {
        r
    } else if a.echo {
        headers
            .iter()
            .map(|(n, v)| format!("{n}: {v}\n"))
            .collect::<String>()
    } else {
        a.body.clone()
    };
    (
        StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK),
        map,
        body,
    )
        .into_response()
}

impl TestHttp {
    /// Routes are keyed `"METHOD /path"` or `"* /path"`; anything else is a 404.
    pub fn start(rt: &tokio::runtime::Runtime, routes: Vec<(&str, Answer)>) -> TestHttp {
        Self::bind(rt, "127.0.0.1:0", routes)
    }

    /// [`TestHttp::start`] on a given origin's port (`http://127.0.0.1:PORT`), for a server
    /// whose own address must appear in what it serves.
    pub fn start_on(
        rt: &tokio::runtime::Runtime,
        origin: &str,
        routes: Vec<(&str, Answer)>,
    ) -> TestHttp {
        let addr = origin.trim_start_matches("http://");
        Self::bind(rt, addr, routes)
    }

    fn bind(rt: &tokio::runtime::Runtime, bind: &str, routes: Vec<(&str, Answer)>) -> TestHttp {
        let shared = Shared {
            routes: Arc::new(
                routes
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            ),
            seen: Arc::default(),
        };
        let seen = shared.seen.clone();
        let bind = bind.to_string();
        let addr = rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind(bind).await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let app = axum::Router::new().fallback(handle).with_state(shared);
            tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            addr
        });
        TestHttp { addr, seen }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    pub fn count(&self) -> usize {
        self.seen().len()
    }
}
