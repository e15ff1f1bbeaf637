//! A terminal record on the wire: `{id, pid, cols, rows, shell, cwd, created_at, clients}`
//! (`created_at` in RFC 3339, `cwd` null only when the shell inherited the server's).

use crate::services::pty::TerminalRecord;
use serde_json::{Value, json};

pub(super) fn record_json(record: &TerminalRecord) -> Value {
    json!({
        "id": record.id,
        "pid": record.pid,
        "cols": record.cols,
        "rows": record.rows,
        "shell": record.shell,
        "cwd": record.cwd.as_ref().map(|p| p.to_string_lossy()),
        "created_at": crate::services::files::rfc3339(record.created_at),
        "clients": record.clients,
    })
}
