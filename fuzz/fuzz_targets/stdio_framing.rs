//! The stdio line framing: any bytes, fed whole and in fuzzer-chosen chunks, give the same
//! lines, and the framer never holds more than its cap plus one chunk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpprobe::protocol::stdio::{Frame, LineFramer};

fn drain(f: &mut LineFramer, out: &mut Vec<Frame>) {
    while let Some(frame) = f.next_line() {
        out.push(frame);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (head, body) = data.split_at(2);
    let max = usize::from(head[0] % 32);
    let step = usize::from(head[1]).max(1);
    let mut whole = LineFramer::new(max);
    whole.push(body);
    let mut once = Vec::new();
    drain(&mut whole, &mut once);
    let mut chunked = LineFramer::new(max);
    let mut many = Vec::new();
    for chunk in body.chunks(step) {
        chunked.push(chunk);
        assert!(
            chunked.pending() <= max + step,
            "the framer holds more than a line and a chunk"
        );
        drain(&mut chunked, &mut many);
    }
    assert_eq!(once, many, "chunks of {step}");
    for f in &once {
        if let Frame::Line(l) = f {
            assert!(l.len() <= max && !l.contains(&b'\n'));
        }
    }
});
