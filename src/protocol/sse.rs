//! A bounded Server-Sent Events parser (WHATWG HTML §9.2): `event`, `data` (multi-line), `id`,
//! comments, CR / LF / CRLF line ends. An event larger than the cap is dropped, not buffered.

/// The largest event kept (its `data` joined).
pub const MAX_EVENT: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type "message".
    pub event: Option<String>,
    pub data: String,
    pub id: Option<String>,
}

#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    last_was_cr: bool,
    event: Option<String>,
    data: String,
    id: Option<String>,
    has_data: bool,
    oversized: bool,
    /// Events dropped because they exceeded [`MAX_EVENT`].
    pub dropped: usize,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.last_was_cr => {
                    self.last_was_cr = false;
                }
                b'\n' | b'\r' => {
                    self.last_was_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(e) = self.line_done(&line) {
                        out.push(e);
                    }
                }
                _ => {
                    self.last_was_cr = false;
                    if self.line.len() < MAX_EVENT {
                        self.line.push(b);
                    } else {
                        self.oversized = true;
                    }
                }
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None; // comment
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f.to_string(), v.strip_prefix(' ').unwrap_or(v).to_string()),
            None => (text.to_string(), String::new()),
        };
        match field.as_str() {
            "event" => self.event = Some(value),
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT {
                    self.oversized = true;
                } else {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(&value);
                    self.has_data = true;
                }
            }
            "id" if !value.contains('\0') => self.id = Some(value),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = std::mem::take(&mut self.data);
        let had = std::mem::replace(&mut self.has_data, false);
        if std::mem::replace(&mut self.oversized, false) {
            self.dropped += 1;
            return None;
        }
        if !had && event.is_none() {
            return None;
        }
        Some(SseEvent {
            event,
            data,
            id: self.id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_across_chunks_and_line_ends() {
        let mut p = SseParser::new();
        let mut all = p.push(b"event: endpoint\r\ndata: /messages?sessionId=1\r\n\r\n: comment\n");
        all.extend(p.push(b"id: 7\ndata: {\"a\":\ndata: 1}\n"));
        all.extend(p.push(b"\nevent: message\rdata: x\r\r"));
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].event.as_deref(), Some("endpoint"));
        assert_eq!(all[0].data, "/messages?sessionId=1");
        assert_eq!(
            (all[1].data.as_str(), all[1].id.as_deref()),
            ("{\"a\":\n1}", Some("7"))
        );
        assert_eq!(all[2].data, "x");
    }

    #[test]
    fn priming_event_with_empty_data_is_an_event() {
        let mut p = SseParser::new();
        let e = p.push(b"id: 1\ndata: \n\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].data, "");
    }
}
