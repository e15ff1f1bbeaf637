//! Reading the plugin's stdout (and stderr) a line at a time, never more than a line's cap
//! held.

use super::protocol::MAX_LINE;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

pub(super) enum Read {
    Line,
    /// The pipe closed; `partial`: in the middle of a line.
    Eof {
        partial: bool,
    },
    TooLong,
}

/// One line into `buf` (without its newline), never more than [`MAX_LINE`] bytes.
pub(super) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Read> {
    let mut limited = reader.take(MAX_LINE as u64 + 1);
    let n = limited.read_until(b'\n', buf).await?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(Read::Line);
    }
    if buf.len() > MAX_LINE {
        return Ok(Read::TooLong);
    }
    Ok(Read::Eof { partial: n > 0 })
}

/// One line into `buf` (without its newline), keeping at most `cap` bytes of it: the rest
/// of a longer line is read and dropped, so what a writer sends without a newline never
/// grows the buffer. [`Read::TooLong`] is never answered: a long line is cut, not refused.
pub(super) async fn read_capped_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Read> {
    let mut partial = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(Read::Eof { partial });
        }
        partial = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        let used = newline.map_or(chunk.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Read::Line);
        }
    }
}
