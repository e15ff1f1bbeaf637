//! `svc sandbox terminal ID`: an interactive terminal. This terminal goes into raw mode
//! (every key goes to the sandbox's shell, Ctrl-C included) and always comes back: the
//! mode is restored by a guard's `Drop`, on the normal exit, on an error and on a panic. The
//! window size is sent at the start and again on every SIGWINCH; the command exits when the
//! shell does, with the shell's exit status (as `ssh` and `docker exec` do).

use super::say::{report, status_of, stdin_chunks};
use crate::client::{Client, ClientError};
use clap::Args;
use nix::sys::termios::{SetArg, Termios, cfmakeraw, tcgetattr, tcsetattr};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

#[derive(Args)]
pub struct TerminalArgs {
    /// The sandbox.
    id: String,
    /// The shell to run [default: /bin/bash].
    #[arg(long)]
    shell: Option<String>,
    /// Who runs the shell in an isolated sandbox: `user` (the default) or `root`.
    #[arg(long)]
    user: Option<String>,
}

/// Raw mode of stdin for the guard's life.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    fn enter() -> nix::Result<RawMode> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin)?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(&stdin, SetArg::TCSANOW, &raw)?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &self.saved);
    }
}

/// The window's columns and rows, from whichever of stdout and stdin is a terminal.
fn window_size() -> Option<(u32, u32)> {
    use terminal_size::{Height, Width, terminal_size_of};
    let (Width(cols), Height(rows)) =
        terminal_size_of(std::io::stdout()).or_else(|| terminal_size_of(std::io::stdin()))?;
    (cols > 0 && rows > 0).then_some((u32::from(cols), u32::from(rows)))
}

pub async fn run(client: &Client, args: TerminalArgs) -> ExitCode {
    match session(client, &args).await {
        Ok(status) => ExitCode::from(status),
        Err(e) => report(Err(e)),
    }
}

async fn session(client: &Client, args: &TerminalArgs) -> Result<u8, ClientError> {
    let size = window_size();
    let terminal = client
        .terminal(
            &args.id,
            size.map(|s| s.0),
            size.map(|s| s.1),
            args.shell.as_deref(),
            args.user.as_deref(),
        )
        .await?;
    let _raw = if std::io::stdin().is_terminal() {
        Some(RawMode::enter().map_err(|e| ClientError::io("cannot set raw mode", e.into()))?)
    } else {
        None
    };
    let (mut writer, mut reader) = terminal.split();
    let mut input = stdin_chunks("svc-terminal-stdin", 8192);
    let mut input_open = true;
    let signal_io = |e| ClientError::io("cannot watch signals", e);
    let mut winch = signal(SignalKind::window_change()).map_err(signal_io)?;
    let mut term = signal(SignalKind::terminate()).map_err(signal_io)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(signal_io)?;
    let mut stdout = std::io::stdout();
    loop {
        tokio::select! {
            output = reader.recv() => match output {
                Some(Ok(bytes)) => {
                    stdout
                        .write_all(&bytes)
                        .and_then(|()| stdout.flush())
                        .map_err(|e| ClientError::io("cannot write to stdout", e))?;
                }
                Some(Err(e)) => return Err(e),
                // The shell has exited: its code is ours (0 when the engine did not say).
                None => return Ok(reader.exit_code().map_or(0, status_of)),
            },
            chunk = input.recv(), if input_open => match chunk {
                Some(bytes) => writer.send(bytes).await?,
                // Stdin ended (a pipe): the shell goes on until it exits.
                None => input_open = false,
            },
            _ = winch.recv() => {
                if let Some((cols, rows)) = window_size() {
                    writer.resize(cols, rows).await?;
                }
            }
            _ = term.recv() => break,
            _ = hangup.recv() => break,
        }
    }
    let _ = writer.close().await;
    Ok(0)
}
