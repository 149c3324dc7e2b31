//! SSE framing: any bytes, fed in one chunk and split at a fuzzer-chosen position, must give
//! the same events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::protocol::sse::{MAX_EVENT, SseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    let mut whole = SseParser::new();
    let once = whole.push(body);
    let at = if body.is_empty() {
        0
    } else {
        usize::from(cut) * body.len() / 255
    };
    let mut split = SseParser::new();
    let mut twice = split.push(&body[..at]);
    twice.extend(split.push(&body[at..]));
    assert_eq!(once, twice, "split at {at}");
    assert_eq!(whole.dropped, split.dropped);
    for e in &once {
        assert!(e.data.len() <= MAX_EVENT);
    }
});
