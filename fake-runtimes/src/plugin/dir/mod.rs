//! `svc-plugin-dir`, the example plugin: sandboxes as folders under its working folder,
//! declaring `sandboxes`, `timeout`, `files` and `commands`. The main thread reads stdin:
//! each request is served on a thread of its own (calls overlap), the chunks of a write go
//! to that write, a cancel raises the call's flag. When stdin closes, the plugin exits.

mod commands;
mod files;
mod paths;
mod store;

use super::{Answer, EngineHello, Fault, FromEngine, Out, Request, hello, read_hello};
use std::collections::HashMap;
use std::io::BufRead;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::Store;

const FEATURES: &[&str] = &["sandboxes", "timeout", "files", "commands"];

/// What every serving thread shares.
struct Plugin {
    store: Store,
    out: Out,
    alive_every: Duration,
    cancels: Mutex<HashMap<u64, Arc<AtomicBool>>>,
}

pub fn main() -> ExitCode {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(EngineHello {
        protocol: 1,
        timeout_ms,
        ..
    }) = lines
        .next()
        .and_then(Result::ok)
        .as_deref()
        .and_then(read_hello)
    else {
        eprintln!("the first line is not the engine's hello for protocol 1");
        return ExitCode::from(2);
    };
    let root = match std::env::current_dir().and_then(|cwd| Store::open(cwd.join("sandboxes"))) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("cannot open the sandboxes folder: {e}");
            return ExitCode::from(1);
        }
    };
    let out = Out::default();
    out.send(&hello(
        "dir",
        "Directory sandboxes",
        env!("CARGO_PKG_VERSION"),
        FEATURES,
    ));
    // Say `alive` three times per idle limit of the engine, so a long call never looks hung.
    let alive_every =
        Duration::from_millis(timeout_ms.unwrap_or(30_000) / 3).max(Duration::from_millis(20));
    let plugin = Arc::new(Plugin {
        store: root,
        out,
        alive_every,
        cancels: Mutex::new(HashMap::new()),
    });
    let sweeper = plugin.clone();
    std::thread::spawn(move || {
        loop {
            sweeper.store.sweep();
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    let mut uploads: HashMap<u64, files::Upload> = HashMap::new();
    for line in lines {
        let Ok(line) = line else { break };
        match serde_json::from_str::<FromEngine>(&line) {
            Ok(FromEngine::Request(request)) if request.op == "files_write" => {
                match plugin
                    .home(&request)
                    .and_then(|home| files::start_write(&home, &request.params, request.id))
                {
                    Ok(upload) => {
                        uploads.insert(request.id, upload);
                    }
                    Err(fault) => plugin.out.respond(request.id, Err(fault)),
                }
            }
            Ok(FromEngine::Request(request)) => {
                let flag = Arc::new(AtomicBool::new(false));
                lock(&plugin.cancels).insert(request.id, flag.clone());
                let plugin = plugin.clone();
                std::thread::spawn(move || plugin.serve(request, &flag));
            }
            Ok(FromEngine::Chunk { id, data, last }) => {
                // Chunks of a write that was refused (or cancelled) are dropped.
                let Some(upload) = uploads.get_mut(&id) else {
                    continue;
                };
                let appended = data
                    .as_deref()
                    .map_or(Ok(()), |d| super::unb64(d).and_then(|b| upload.append(&b)));
                if let Err(fault) = appended {
                    uploads.remove(&id);
                    plugin.out.respond(id, Err(fault));
                } else if last && let Some(upload) = uploads.remove(&id) {
                    plugin.out.respond(id, upload.finish());
                }
            }
            Ok(FromEngine::Cancel { id }) => {
                uploads.remove(&id);
                if let Some(flag) = lock(&plugin.cancels).get(&id) {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => eprintln!("not a message of the engine ({e}): {line}"),
        }
    }
    ExitCode::SUCCESS
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn sandbox_id(request: &Request) -> Result<&str, Fault> {
    request
        .sandbox_id
        .as_deref()
        .ok_or_else(|| Fault::new("E4001", format!("`{}` needs a `sandbox_id`", request.op)))
}

impl Plugin {
    /// The home of the request's sandbox, once it is known to be this account's.
    fn home(&self, request: &Request) -> Result<std::path::PathBuf, Fault> {
        let id = sandbox_id(request)?;
        self.store.get(&request.account, id)?;
        Ok(self.store.home(id))
    }

    fn serve(&self, request: Request, cancel: &AtomicBool) {
        let id = request.id;
        // A read answers itself (its response, then its chunks).
        if request.op == "files_read" {
            match self.home(&request) {
                Ok(home) => files::read(&home, &request.params, &self.out, id, cancel),
                Err(fault) => self.out.respond(id, Err(fault)),
            }
        } else {
            let answer = self.answer(&request, cancel);
            if !cancel.load(Ordering::Relaxed) {
                self.out.respond(id, answer);
            }
        }
        lock(&self.cancels).remove(&id);
    }

    fn answer(&self, request: &Request, cancel: &AtomicBool) -> Answer {
        let (account, params) = (&request.account, &request.params);
        let json = |r: store::Record| {
            serde_json::to_value(r).map_err(|e| Fault::new("E9001", e.to_string()))
        };
        match request.op.as_str() {
            "sandboxes_create" => {
                let body = serde_json::from_value(params.clone())
                    .map_err(|e| Fault::new("E4001", format!("a bad create body: {e}")))?;
                json(self.store.create(account, body)?)
            }
            "sandboxes_list" => self.store.list(account, params),
            "sandboxes_connect" | "sandboxes_info" => {
                json(self.store.get(account, sandbox_id(request)?)?.record)
            }
            "sandboxes_kill" => json(self.store.kill(account, sandbox_id(request)?)?),
            "sandboxes_timeout" => {
                let seconds = params["timeout"]
                    .as_u64()
                    .ok_or_else(|| Fault::new("E4001", "`timeout` is required"))?;
                json(
                    self.store
                        .set_timeout(account, sandbox_id(request)?, seconds)?,
                )
            }
            "commands_run" | "commands_stream" => {
                let sandbox = self.store.get(account, sandbox_id(request)?)?;
                let home = self.store.home(&sandbox.record.sandbox_id);
                let ctx = commands::Ctx {
                    out: &self.out,
                    id: request.id,
                    alive_every: self.alive_every,
                    cancel,
                };
                if request.op == "commands_run" {
                    commands::run(&ctx, &home, &sandbox, params.clone())
                } else {
                    commands::stream(&ctx, &home, &sandbox, params.clone())
                }
            }
            "files_list" => files::list(&self.home(request)?, params),
            "files_info" => files::info(&self.home(request)?, params),
            "files_exists" => files::exists_answer(&self.home(request)?, params),
            "files_mkdir" => files::mkdir(&self.home(request)?, params),
            "files_move" => files::rename(&self.home(request)?, params),
            "files_remove" => files::remove(&self.home(request)?, params),
            other => Err(Fault::new(
                "E8004",
                format!("the dir provider does not do `{other}`"),
            )),
        }
    }
}
