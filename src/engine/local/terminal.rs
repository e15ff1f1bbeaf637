//! A terminal in a sandbox: a shell on a PTY (the PTY service), in the sandbox's folder
//! with its environment and `TERM`, leading a session the sandbox records (so everything
//! it starts is found). The terminal lives as long as its client: when the client's input
//! closes, the shell and its session are ended.

use super::super::provider::{
    ProviderResult, TerminalInput, TerminalIo, TerminalOpen, check_argv, check_env,
};
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
    check_argv(("shell", "args"), &open.shell, &open.args)?;
    check_env("env", &open.env)?;
    let shell = open.shell.as_str();
    // `TERM` first: a caller's own `TERM` in `env` wins.
    let mut extra = BTreeMap::from([("TERM".to_owned(), env::TERM.to_owned())]);
    extra.extend(open.env.clone());
    let env = inside::env_for(env::with(&core.env, &extra, &core.id), who);
    let cwd = inside::working_dir(core, open.cwd.as_deref())?;
    let shell = inside::program(core, &env, shell, &cwd).map_err(|_| {
        EngineError::new(
            Code::InvalidArgument,
            format!("no shell `{shell}` in sandbox `{}`", core.id),
        )
    })?;
    // Into the machine, and the cgroup joined by the shell itself before it runs.
    let (through, enter, cwd, ptmx_in) = match &core.isolated {
        Some(isolated) => {
            let (program, args, entry) = isolated.machine.way_in(
                &isolated.tools,
                who.unwrap_or(crate::services::namespaces::Identity::User),
                &cwd.shown,
                shell.clone(),
                open.args.clone(),
            );
            // Started through `nsenter` when the engine may not enter directly.
            let through = entry.is_none().then_some((program, args));
            // The sandbox's own devpts, so the shell's terminal has a name inside.
            (through, entry, None, Some(isolated.machine.root()))
        }
        None => (None, None, Some(cwd.host.clone()), None),
    };
    let spec = pty::Spec {
        shell,
        args: open.args.clone(),
        through,
        enter,
        join_cgroup: core
            .cgroup
            .as_ref()
            .map(crate::services::cgroup::Cgroup::join_files)
            .unwrap_or_default(),
        cwd,
        ptmx_in,
        env,
        size,
    };
    let pass = core.admit().await?;
    let record = core
        .terminals
        .create(&core.id, &spec)
        .map_err(|e| EngineError::from_domain(&e))?;
    core.note_session(record.pid);
    drop(pass);
    let terminal = core
        .terminals
        .terminal(&core.id, &record.id)
        .map_err(|e| EngineError::from_domain(&e))?;
    let mut attachment = terminal.attach();
    let ended = terminal.clone();
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
    // How the shell ended, as a command's exit says it (128 + the signal).
    let exit = async move {
        ended
            .wait()
            .await
            .and_then(|exit| exit.code.or(exit.signal.map(|s| 128 + s)))
    };
    Ok(TerminalIo {
        input,
        output: Box::pin(output),
        exit: Box::pin(exit),
    })
}
