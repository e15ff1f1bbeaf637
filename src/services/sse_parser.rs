//! A server-sent events parser (the WHATWG event-stream format), fed a body's chunks as they
//! arrive: the engine's client reads its streams with it, and the `rest` provider the
//! remote engine's. Written here rather than taken from a crate: the format is a page long
//! and both need only `event` and `data`; `id` and `retry` are read and ignored (the
//! engine's streams are not resumable).

/// One dispatched event: its name (`message` when none was given) and its data lines
/// joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet ended.
    line: Vec<u8>,
    /// The last chunk ended with `\r`: a `\n` opening the next one belongs to that ending.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds a chunk; returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut bytes = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' | b'\r' => {
                    self.line.extend_from_slice(&bytes[start..i]);
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        out.push(event);
                    }
                    if bytes[i] == b'\r' {
                        if i + 1 == bytes.len() {
                            self.after_cr = true;
                        } else if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    }
                    start = i + 1;
                }
                _ => {}
            }
            i += 1;
        }
        self.line.extend_from_slice(&bytes[start..]);
        out
    }

    /// Processes one line (without its ending); a blank line dispatches.
    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            // Spec: an event with no data line is not dispatched.
            return data.map(|data| SseEvent {
                event: event.unwrap_or_else(|| "message".to_owned()),
                data,
            });
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_with_names_and_multi_line_data() {
        let mut p = SseParser::new();
        let got = p.push(
            b"event: stdout\ndata: {\"data\":\"hi\"}\n\n: keep-alive\n\ndata: a\ndata: b\n\n",
        );
        assert_eq!(
            got,
            vec![ev("stdout", "{\"data\":\"hi\"}"), ev("message", "a\nb")]
        );
    }

    #[test]
    fn any_split_of_the_bytes_gives_the_same_events() {
        let text = b"event: start\r\ndata: {\"pid\":1}\r\n\r\nevent:exit\rdata:{}\r\revent: end\ndata: {}\n\n";
        let mut whole = SseParser::new();
        let expected = whole.push(text);
        assert_eq!(expected.len(), 3);
        assert_eq!(expected[1], ev("exit", "{}"));
        for cut in 0..text.len() {
            let mut p = SseParser::new();
            let mut got = p.push(&text[..cut]);
            got.extend(p.push(&text[cut..]));
            assert_eq!(got, expected, "cut at {cut}");
        }
        // Byte by byte too.
        let mut p = SseParser::new();
        let got: Vec<_> = text.iter().flat_map(|b| p.push(&[*b])).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn data_less_events_and_unknown_fields_are_skipped() {
        let mut p = SseParser::new();
        let got = p.push(b"event: ping\n\nid: 4\nretry: 10\nfoo\ndata\n\n");
        assert_eq!(got, vec![ev("message", "")]);
    }

    #[test]
    fn an_unfinished_event_waits_for_its_blank_line() {
        let mut p = SseParser::new();
        assert!(p.push(b"event: end\ndata: {}\n").is_empty());
        assert_eq!(p.push(b"\n"), vec![ev("end", "{}")]);
    }

    #[test]
    fn bad_utf8_does_not_panic() {
        let mut p = SseParser::new();
        let got = p.push(b"data: \xff\xfe\n\n");
        assert_eq!(got.len(), 1);
    }
}
