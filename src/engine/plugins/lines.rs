//! Reading the plugin's stdout a line at a time, never more than [`MAX_LINE`] bytes held.

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
