//! `svc sandbox ...`: sandboxes through the local engine, which the client starts when none
//! runs. Records print as short text, or as JSON with `--json`; `create` prints the new id
//! alone on its first line so that `id=$(svc sandbox create | head -1)` works.

use super::cp::CpArgs;
use super::engine::runtime;
use super::exec::ExecArgs;
use super::say::{parse_pair, report, say};
use super::terminal::TerminalArgs;
use crate::client::{Client, ClientOptions};
use crate::wire::{
    Connection, CreateSandbox, Isolation, ListSandboxes, SandboxRecord, SandboxStatus,
};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Args)]
pub struct SandboxArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(subcommand)]
    command: SandboxCommand,
}

/// Who the engine speaks to the provider as (sent with every request, never stored).
#[derive(Args)]
struct ConnectionArgs {
    /// The provider id [default: local].
    #[arg(long, global = true)]
    provider: Option<String>,
    /// The provider's API key.
    #[arg(long, global = true, env = "SVC_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The provider's API URL.
    #[arg(long, global = true, value_name = "URL")]
    api_url: Option<String>,
}

#[derive(Subcommand)]
enum SandboxCommand {
    /// Create a sandbox; prints its id alone on the first line, then a summary.
    Create(CreateArgs),
    /// List this connection's sandboxes.
    List {
        /// Only sandboxes in this status (creating, running, paused, stopping, stopped,
        /// error).
        #[arg(long, value_parser = parse_status)]
        status: Option<SandboxStatus>,
        /// Print `{sandboxes: [...]}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a sandbox's record.
    Info {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// End a sandbox and everything in it.
    Kill { id: String },
    /// Stop every process of a sandbox until it is resumed.
    Pause { id: String },
    /// Continue a paused sandbox.
    Resume { id: String },
    /// Run a command in a sandbox, its output streamed; exits with the command's code.
    Exec(ExecArgs),
    /// Copy a file into or out of a sandbox: one side is `ID:PATH`, the other a local path
    /// or `-` (stdin or stdout).
    Cp(CpArgs),
    /// An interactive terminal in a sandbox; exits when its shell does, with its exit code.
    Terminal(TerminalArgs),
}

#[derive(Args)]
struct CreateArgs {
    /// The template [default: base].
    #[arg(long)]
    template: Option<String>,
    /// Lifetime in seconds, 1-86400 [default: 300].
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<u64>,
    /// An environment variable of every process in the sandbox (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_pair)]
    envs: Vec<(String, String)>,
    /// A metadata entry (repeatable).
    #[arg(long = "metadata", value_name = "K=V", value_parser = parse_pair)]
    metadata: Vec<(String, String)>,
    /// CPU cores, 1-65536.
    #[arg(long)]
    cpu: Option<u32>,
    /// Memory in MB.
    #[arg(long, value_name = "MB")]
    memory: Option<u64>,
    /// `namespaces`: a machine of its own (untrusted code); `none`: the engine's user,
    /// seeing the whole machine [default: the provider's; `namespaces` for `local`].
    #[arg(long, value_parser = parse_isolation)]
    isolation: Option<Isolation>,
    /// Only a loopback of its own, no other network (not with `--isolation none`).
    #[arg(long)]
    no_internet: bool,
    /// The most processes it may hold at once, 1-4194304 [default: 4096].
    #[arg(long, value_name = "N")]
    max_processes: Option<u32>,
    /// Print the record as JSON instead.
    #[arg(long)]
    json: bool,
}

fn parse_isolation(text: &str) -> Result<Isolation, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| format!("`{text}` is not an isolation: namespaces or none"))
}

fn parse_status(text: &str) -> Result<SandboxStatus, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| {
        "expected one of creating, running, paused, stopping, stopped, error".to_owned()
    })
}

pub fn main(args: SandboxArgs) -> ExitCode {
    let client = match client(&args.connection) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    rt.block_on(async move {
        match args.command {
            SandboxCommand::Exec(exec) => super::exec::run(&client, exec).await,
            SandboxCommand::Cp(cp) => super::cp::run(&client, cp).await,
            SandboxCommand::Terminal(t) => super::terminal::run(&client, t).await,
            other => report(records(&client, other).await),
        }
    })
}

fn client(args: &ConnectionArgs) -> Result<Client, ExitCode> {
    let connection = Connection {
        provider: args.provider.clone(),
        api_key: args.api_key.clone(),
        api_url: args.api_url.clone(),
        ..Connection::default()
    };
    Client::new(ClientOptions {
        connection,
        ..ClientOptions::default()
    })
    .map_err(|e| {
        eprintln!("svc: error: {e}");
        ExitCode::FAILURE
    })
}

async fn records(
    client: &Client,
    command: SandboxCommand,
) -> Result<(), crate::client::ClientError> {
    match command {
        SandboxCommand::Create(args) => {
            let body = CreateSandbox {
                template: args.template,
                timeout: args.timeout,
                envs: non_empty(args.envs),
                metadata: non_empty(args.metadata),
                cpu: args.cpu,
                memory: args.memory,
                isolation: args.isolation,
                allow_internet_access: args.no_internet.then_some(false),
                max_processes: args.max_processes,
                ..CreateSandbox::default()
            };
            let record = client.create(&body).await?;
            if args.json {
                print_json(&record);
            } else {
                say!("{}", record.sandbox_id);
                say!("{}", summary(&record));
            }
        }
        SandboxCommand::List { status, json } => {
            let query = ListSandboxes {
                status,
                ..ListSandboxes::default()
            };
            let sandboxes = client.list(&query).await?;
            if json {
                print_json(&serde_json::json!({ "sandboxes": sandboxes }));
            } else {
                print_table(&sandboxes);
            }
        }
        SandboxCommand::Info { id, json } => {
            let record = client.info(&id).await?;
            if json {
                print_json(&record);
            } else {
                print_record(&record);
            }
        }
        SandboxCommand::Kill { id } => {
            let record = client.kill(&id).await?;
            say!(
                "{} killed ({})",
                record.sandbox_id,
                status_name(record.status)
            );
        }
        SandboxCommand::Pause { id } => {
            let record = client.pause(&id).await?;
            say!("{} {}", record.sandbox_id, status_name(record.status));
        }
        SandboxCommand::Resume { id } => {
            let record = client.resume(&id).await?;
            say!("{} {}", record.sandbox_id, status_name(record.status));
        }
        SandboxCommand::Exec(_) | SandboxCommand::Cp(_) | SandboxCommand::Terminal(_) => {}
    }
    Ok(())
}

fn non_empty(pairs: Vec<(String, String)>) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| pairs.into_iter().collect())
}

fn print_json(value: &impl serde::Serialize) {
    say!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

fn status_name(status: SandboxStatus) -> String {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{status:?}").to_lowercase(),
    }
}

fn summary(r: &SandboxRecord) -> String {
    format!(
        "{} sandbox from template `{}` (provider {}), expires {}",
        status_name(r.status),
        r.template,
        r.provider,
        r.expires_at
    )
}

fn print_record(r: &SandboxRecord) {
    say!("sandbox_id  {}", r.sandbox_id);
    say!("status      {}", status_name(r.status));
    say!("provider    {}", r.provider);
    say!("template    {}", r.template);
    say!("created_at  {}", r.created_at);
    say!("expires_at  {}", r.expires_at);
    if let Some(cpu) = r.cpu {
        say!("cpu         {cpu}");
    }
    if let Some(memory) = r.memory {
        say!("memory      {memory} MB");
    }
    if !r.envs_keys.is_empty() {
        say!("envs        {}", r.envs_keys.join(", "));
    }
    for (key, value) in &r.metadata {
        say!("metadata    {key}={value}");
    }
    let unenforced: Vec<&str> = r
        .limits_enforced
        .iter()
        .filter(|(_, enforced)| !**enforced)
        .map(|(name, _)| name.as_str())
        .collect();
    if !unenforced.is_empty() {
        say!("not enforced {}", unenforced.join(", "));
    }
}

fn print_table(sandboxes: &[SandboxRecord]) {
    if sandboxes.is_empty() {
        say!("no sandboxes");
        return;
    }
    let width = sandboxes
        .iter()
        .map(|s| s.sandbox_id.len())
        .max()
        .unwrap_or(0)
        .max("SANDBOX".len());
    say!(
        "{:<width$}  {:<9}  {:<12}  EXPIRES",
        "SANDBOX",
        "STATUS",
        "TEMPLATE"
    );
    for s in sandboxes {
        say!(
            "{:<width$}  {:<9}  {:<12}  {}",
            s.sandbox_id,
            status_name(s.status),
            s.template,
            s.expires_at
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_statuses() {
        assert_eq!(parse_pair("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert_eq!(parse_pair("A=").unwrap(), ("A".into(), String::new()));
        assert!(parse_pair("=x").is_err());
        assert!(parse_pair("novalue").is_err());
        assert_eq!(parse_status("paused").unwrap(), SandboxStatus::Paused);
        assert!(parse_status("asleep").is_err());
        assert_eq!(status_name(SandboxStatus::Stopping), "stopping");
    }
}
