//! Text cut by reads: a program's output arrives in pieces of whatever size the pipe gave,
//! and a UTF-8 character may straddle two of them. [`Utf8Carry`] holds back the start of
//! such a character until the rest arrives, so every streamed piece that was text when the
//! program wrote it is text on the wire too (the server's shell stream and the engine's
//! command stream both use it).

/// Holds back the end of a chunk that is the start of a UTF-8 character cut by the read,
/// so text split across reads still arrives as text.
#[derive(Debug, Default)]
pub struct Utf8Carry {
    pending: Vec<u8>,
}

impl Utf8Carry {
    /// What to send now of `bytes` (after what was held back).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.pending);
        all.extend_from_slice(bytes);
        let keep = incomplete_tail(&all);
        self.pending = all.split_off(all.len() - keep);
        all
    }

    /// What is still held back, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that is not complete (0
/// when the end is complete, or when those bytes could never be UTF-8 anyway).
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_by_a_read_arrives_whole() {
        let text = "héllo €".as_bytes();
        for cut in 0..=text.len() {
            let mut carry = Utf8Carry::default();
            let mut out = carry.push(&text[..cut]);
            assert!(std::str::from_utf8(&out).is_ok(), "cut at {cut}");
            out.extend(carry.push(&text[cut..]));
            out.extend(carry.finish());
            assert_eq!(out, text);
        }
        let mut carry = Utf8Carry::default();
        assert_eq!(carry.push(b"\xff\xfe"), b"\xff\xfe");
        assert_eq!(carry.push(b"a\xE2\x82"), b"a");
        assert_eq!(carry.finish(), b"\xE2\x82");
    }

    #[test]
    fn a_four_byte_character_cut_twice_arrives_whole() {
        let text = "a😀b".as_bytes();
        let mut carry = Utf8Carry::default();
        let mut out = Vec::new();
        for byte in text {
            let piece = carry.push(std::slice::from_ref(byte));
            assert!(std::str::from_utf8(&piece).is_ok());
            out.extend(piece);
        }
        out.extend(carry.finish());
        assert_eq!(out, text);
    }
}
