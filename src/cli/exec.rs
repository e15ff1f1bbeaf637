//! `svc sandbox exec ID [--cwd D] [--env K=V]... [--timeout S] -- PROGRAM [ARGS]...` (or
//! `--shell 'LINE'`): runs a command in a sandbox with its output streamed as it comes,
//! stdout to stdout and stderr to stderr, bytes exact.
//!
//! The words after `--` are the program and its arguments exactly as given, never a shell
//! line: a word with spaces stays one argument, as it would under `exec`. A shell line is
//! asked for by name, with `--shell`.
//!
//! Exit status: the command's own; 124 when its timeout ended it (as `timeout(1)`); 125
//! when the command could not be run or its result not learned (no engine, no sandbox, a
//! refused request, a broken stream), with the reason on stderr, so that a failure of
//! `svc` never reads as the command's success or as its own exit code 1.

use super::say::{parse_pair, status_of, stdin_chunks};
use crate::client::{Client, ClientError, CommandEvent};
use crate::wire::CommandBody;
use clap::Args;
use futures::StreamExt;
use std::io::Write;
use std::process::ExitCode;

/// The command ran out of its timeout.
pub const EXIT_TIMED_OUT: u8 = 124;
/// `svc` could not run the command or learn how it ended.
pub const EXIT_FAILED: u8 = 125;

#[derive(Args)]
#[command(
    after_help = "Exit status: the command's; 124 when its timeout ended it; 125 when \
                        svc could not run it (the reason on stderr)."
)]
pub struct ExecArgs {
    /// The sandbox.
    id: String,
    /// The working directory in the sandbox.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// An environment variable of the command (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_pair)]
    env: Vec<(String, String)>,
    /// Seconds before the command is ended; 0: no limit [default: 60].
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<u64>,
    /// Run this line with the sandbox's shell (`/bin/sh -c`) instead of a program.
    #[arg(long, value_name = "LINE", conflicts_with = "command")]
    shell: Option<String>,
    /// Forward this terminal's stdin to the command (otherwise its stdin is empty).
    #[arg(short = 'i', long = "stdin")]
    forward_stdin: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM", required_unless_present = "shell")]
    command: Vec<String>,
}

impl ExecArgs {
    fn body(&self) -> Option<CommandBody> {
        let (cmd, args) = match &self.shell {
            Some(line) => (line.clone(), None),
            None => {
                let (program, args) = self.command.split_first()?;
                // `args` present, even empty: a program, no shell.
                (program.clone(), Some(args.to_vec()))
            }
        };
        Some(CommandBody {
            cmd,
            args,
            env: (!self.env.is_empty()).then(|| self.env.iter().cloned().collect()),
            cwd: self.cwd.clone(),
            user: None,
            timeout: self.timeout,
            // Empty and closed unless stdin is forwarded: a command that reads it sees
            // its end instead of waiting forever.
            stdin: (!self.forward_stdin).then(String::new),
        })
    }
}

/// How the command ended, as the exit status of `svc`.
fn exit_status(exit_code: i32, timed_out: bool) -> u8 {
    if timed_out {
        return EXIT_TIMED_OUT;
    }
    status_of(exit_code)
}

pub async fn run(client: &Client, args: ExecArgs) -> ExitCode {
    let Some(body) = args.body() else {
        eprintln!("svc: error: name a program after `--`, or a line with --shell");
        return ExitCode::from(EXIT_FAILED);
    };
    match stream(client, &args.id, &body, args.forward_stdin).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("svc: error: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

async fn stream(
    client: &Client,
    id: &str,
    body: &CommandBody,
    forward_stdin: bool,
) -> Result<u8, ClientError> {
    let mut events = client.stream(id, body).await?;
    let mut pid = None;
    let mut interrupts = 0u32;
    let mut ctrl_c = Box::pin(tokio::signal::ctrl_c());
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = &mut ctrl_c => {
                // Ctrl-C: SIGTERM to the command, a second one SIGKILL; the stream then
                // reports how it ended.
                interrupts += 1;
                ctrl_c = Box::pin(tokio::signal::ctrl_c());
                if let Some(pid) = pid {
                    let signal = if interrupts == 1 { 15 } else { 9 };
                    let _ = client.signal(id, pid, signal).await;
                }
                continue;
            }
        };
        match event {
            Some(Ok(CommandEvent::Start { pid: started })) => {
                pid = Some(started);
                if forward_stdin {
                    forward(client.clone(), id.to_owned(), started);
                }
            }
            Some(Ok(CommandEvent::Stdout(bytes))) => {
                if write_out(&mut std::io::stdout(), &bytes).is_err() {
                    // The reader went away (`| head`): end the command as well.
                    if let Some(pid) = pid {
                        let _ = client.signal(id, pid, 15).await;
                    }
                    return Ok(141);
                }
            }
            Some(Ok(CommandEvent::Stderr(bytes))) => {
                let _ = write_out(&mut std::io::stderr(), &bytes);
            }
            Some(Ok(CommandEvent::Exit {
                exit_code,
                timed_out,
            })) => {
                if timed_out {
                    eprintln!("svc: the command timed out");
                }
                // `end` follows; drain it so the engine sees a reader to the end.
                while let Some(Ok(_)) = events.next().await {}
                return Ok(exit_status(exit_code, timed_out));
            }
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ClientError::Transport(
                    "the command's stream ended without its exit".into(),
                ));
            }
        }
    }
}

fn write_out(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.flush()
}

/// Copies this process's stdin to the command's, then closes it.
fn forward(client: Client, id: String, pid: u32) {
    let mut rx = stdin_chunks("svc-exec-stdin", 64 * 1024);
    tokio::spawn(async move {
        while let Some(chunk) = rx.recv().await {
            if client.write_stdin(&id, pid, &chunk, false).await.is_err() {
                return;
            }
        }
        let _ = client.write_stdin(&id, pid, &[], true).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        exec: ExecArgs,
    }

    fn parse(args: &[&str]) -> ExecArgs {
        Cli::try_parse_from(std::iter::once("exec").chain(args.iter().copied()))
            .unwrap()
            .exec
    }

    #[test]
    fn words_are_a_program_and_arguments() {
        let body = parse(&["sb", "--", "printf", "%s\n", "a b"])
            .body()
            .unwrap();
        assert_eq!(body.cmd, "printf");
        assert_eq!(body.args, Some(vec!["%s\n".to_owned(), "a b".to_owned()]));
        let body = parse(&["sb", "--", "echo hi"]).body().unwrap();
        assert_eq!(body.cmd, "echo hi");
        assert_eq!(body.args, Some(vec![]));
        assert_eq!(body.stdin.as_deref(), Some(""));
    }

    #[test]
    fn a_shell_line_is_asked_for_by_name() {
        let body = parse(&["sb", "--shell", "exit 7", "--env", "A=1"])
            .body()
            .unwrap();
        assert_eq!(body.cmd, "exit 7");
        assert_eq!(body.args, None);
        assert_eq!(body.env.unwrap()["A"], "1");
        assert!(Cli::try_parse_from(["exec", "sb"]).is_err());
        assert!(Cli::try_parse_from(["exec", "sb", "--shell", "x", "--", "y"]).is_err());
    }

    #[test]
    fn exit_statuses() {
        assert_eq!(exit_status(0, false), 0);
        assert_eq!(exit_status(7, false), 7);
        assert_eq!(exit_status(137, false), 137);
        assert_eq!(exit_status(0, true), EXIT_TIMED_OUT);
        assert_eq!(exit_status(-1, false), 1);
        assert_eq!(exit_status(256, false), 1);
    }
}
