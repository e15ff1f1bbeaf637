//! A terminal in a sandbox: a shell on a PTY (the PTY service), in the sandbox's folder
//! with its environment and `TERM`, leading a session the sandbox records (so everything
//! it starts is found). The terminal lives as long as its client: when the client's input
//! closes, the shell and its session are ended.

use super::super::provider::{ProviderResult, TerminalInput, TerminalIo, TerminalOpen};
use super::sandbox::Core;
use super::{env, inside};
use crate::error::engine::{Code, EngineError};
use crate::services::pty::{self, Size};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Input frames waiting for the shell.
const INPUT_QUEUE: usize = 64;

pub async fn open(core: &Arc<Core>, open: &TerminalOpen) -> ProviderResult<TerminalIo> {
    let size = Size::new(open.cols, open.rows).map_err(|e| EngineError::from_domain(&e))?;
    let who = inside::identity(core, open.user.as_deref())?;
    let shell = open.shell.as_str();
    let term = [("TERM".to_owned(), env::TERM.to_owned())];
    let env = env::with(&core.env, &BTreeMap::from(term), &core.id);
    let home = inside::home(core);
    let shell = inside::program(core, &env, shell, &home).map_err(|_| {
        EngineError::new(
            Code::InvalidArgument,
            format!("no shell `{shell}` in sandbox `{}`", core.id),
        )
    })?;
    // Through the machine; the cgroup is joined below, once the shell has a pid (a PTY's
    // session leader cannot be started by a wrapping shell without losing the terminal).
    let (through, cwd) = match &core.isolated {
        Some(isolated) => {
            let (program, args) = isolated.machine.enter(
                &isolated.tools,
                who.unwrap_or(crate::services::namespaces::Identity::User),
                &home.shown,
                shell.clone(),
                Vec::new(),
            );
            (Some((program, args)), None)
        }
        None => (None, Some(home.host.clone())),
    };
    let spec = pty::Spec {
        shell,
        through,
        cwd,
        env,
        size,
    };
    let pass = core.admit().await?;
    let record = core
        .terminals
        .create(&core.id, &spec)
        .map_err(|e| EngineError::from_domain(&e))?;
    // The shell leads its own session; it has not read its first line yet, so what it
    // runs is inside the cgroup (its startup files may race the move: said, not hidden).
    core.note_session(record.pid);
    if let Some(cgroup) = &core.cgroup {
        let _ = cgroup.add(record.pid);
    }
    drop(pass);
    let terminal = core
        .terminals
        .terminal(&core.id, &record.id)
        .map_err(|e| EngineError::from_domain(&e))?;
    let mut attachment = terminal.attach();
    let replay = std::mem::take(&mut attachment.replay);

    let (input, mut inputs) = mpsc::channel::<TerminalInput>(INPUT_QUEUE);
    let owner = core.clone();
    let id = record.id.clone();
    tokio::spawn(async move {
        while let Some(input) = inputs.recv().await {
            let done = match input {
                TerminalInput::Bytes(bytes) => terminal.write(&bytes).await.is_err(),
                TerminalInput::Resize { cols, rows } => match Size::new(cols, rows) {
                    Ok(size) => terminal.resize(size).is_err(),
                    Err(_) => false,
                },
            };
            if done && !terminal.is_running() {
                break;
            }
        }
        // The client is gone (or the shell is): so is the terminal.
        let _ = owner.terminals.kill(&owner.id, &id).await;
    });

    let first = (!replay.is_empty()).then(|| Bytes::from(replay));
    let output =
        futures::stream::unfold((first, attachment), |(first, mut attachment)| async move {
            if let Some(bytes) = first {
                return Some((bytes, (None, attachment)));
            }
            let bytes = attachment.next().await?;
            Some((bytes, (None, attachment)))
        });
    Ok(TerminalIo {
        input,
        output: Box::pin(output),
    })
}
