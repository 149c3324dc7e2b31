//! JSON-RPC messages as a server sends them: a JSON body, a batch, or SSE events (the first
//! byte picks the content type), then the reply lookups the sessions make.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::protocol::rpc;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let content_type = match pick % 4 {
        0 => None,
        1 => Some("application/json"),
        2 => Some("text/event-stream"),
        _ => Some("TEXT/EVENT-STREAM; charset=utf-8"),
    };
    let msgs = rpc::messages(content_type, body);
    for id in [0, 1, u64::from(pick)] {
        if let Some(reply) = rpc::reply_to(&msgs, id) {
            let _ = reply.result();
            let _ = reply.error_code();
        }
        let _ = rpc::has_reply(content_type, body, id);
    }
    for m in &msgs {
        let _ = rpc::Reply::from_message(m);
    }
    if let Some(end) = rpc::last_event_end(body) {
        assert!(end <= body.len());
    }
});
