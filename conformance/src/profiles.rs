//! Profiles: how the runner configures what it launches for a group of cases.
//! Each profile belongs to one [`Contract`]. `{dir}` in env values, the
//! template, args and file contents stands for the profile's fresh temp dir.
//! An engine profile is one provider (its cases connect as that provider, and
//! skip what it does not declare), or none for the engine's own routes.

use crate::contract::Contract;

/// A server configuration cases can ask for.
#[derive(Debug)]
pub struct Profile {
    /// Unique; shown in skip reasons and the report.
    pub name: &'static str,
    /// What the profile configures, so what its cases test: the runner
    /// launches it with that contract's command.
    pub contract: Contract,
    /// Engine profiles: the provider every case connects as (`X-Svc-Connection`
    /// `{provider}`); the runner reads its declared features from `GET
    /// /v1/providers` and skips the cases tagged `feature:<name>` it lacks.
    /// `None`: the engine's own routes, no provider needed. Server profiles: `None`.
    pub provider: Option<&'static str>,
    /// Extra environment for the server process.
    pub env: &'static [(&'static str, &'static str)],
    /// `template.yaml` text; written to `{dir}/template.yaml` and passed as
    /// `SVC_CONFIG` and `{config}`.
    pub template: Option<&'static str>,
    /// Extra CLI args appended to the server command.
    pub args: &'static [&'static str],
    /// Extra files written into `{dir}` before launch: (relative path, content).
    pub files: &'static [(&'static str, &'static str)],
}

impl Profile {
    /// Only `ANY` cases run against a server the runner did not launch.
    pub fn is_any(&self) -> bool {
        std::ptr::eq(self, &ANY) || self.name == ANY.name
    }
}

/// Cases that hold for any server whatever its configuration; the only ones
/// run with `--base-url`.
pub static ANY: Profile = Profile {
    name: "any",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[],
};

/// No env, no template: anonymous caller, default groups.
pub static DEFAULT: Profile = Profile {
    name: "default",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[],
};

/// Three identities, named commands, audit of every call into `{dir}/audit.jsonl`.
pub static SECURED: Profile = Profile {
    name: "secured",
    contract: Contract::Server,
    provider: None,
    env: &[("DEPLOYER_TOKEN", "deployer-token")],
    template: Some(
        r#"
server:
  audit: all
  audit_file: "{dir}/audit.jsonl"
identities:
  - {id: admin, token: admin-token, scopes: ["*"]}
  - {id: reader, token: reader-token, scopes: ["files:read", "commands:read"]}
  - {id: deployer, token_env: DEPLOYER_TOKEN, scopes: ["commands:*"]}
commands:
  - name: greet
    description: Print a greeting
    argv: ["echo", "hello,", "{who}"]
    args:
      - {name: who, type: string, required: true}
  - name: deploy
    description: Needs a scope of its own
    argv: ["echo", "deployed"]
    scopes: ["ops:deploy"]
"#,
    ),
    args: &[],
    files: &[],
};

/// `SVC_SERVER_TOKEN` alone.
pub static SERVER_TOKEN: Profile = Profile {
    name: "server-token",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_SERVER_TOKEN", "the-one-token")],
    template: None,
    args: &[],
    files: &[],
};

/// Every template and environment rule kind at once, and `audit: deny`.
pub static POLICY: Profile = Profile {
    name: "policy",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_SERVER_ENABLED_GROUPS", "dev_tools,-process")],
    template: Some(
        r#"
server:
  preset: read-only
  audit: deny
  audit_file: "{dir}/audit.jsonl"
  groups: {terminal: false}
  endpoints: {system_info: false, pty_list: true}
"#,
    ),
    args: &[],
    files: &[],
};

/// Group switches chosen by the launching program (`svc serve --disable-group system
/// --enable-group browser`); implementations without such flags skip `needs:code-layer`.
pub static CODE_LAYER: Profile = Profile {
    name: "code-layer",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: None,
    args: &["--disable-group", "system", "--enable-group", "browser"],
    files: &[],
};

/// A low connection cap and a short header timeout (`server.connections`).
pub static CONNECTIONS: Profile = Profile {
    name: "connections",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  connections: {max: 8, header_timeout_secs: 3}
"#,
    ),
    args: &[],
    files: &[],
};

/// Rate, concurrency and body limits on a few endpoints.
pub static LIMITS: Profile = Profile {
    name: "limits",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  limits:
    endpoints:
      commands_list: {rate: "2/m"}
      commands_run: {concurrency: 1}
      capabilities_check: {body_bytes: 1024}
commands:
  - name: nap
    description: Sleeps a little, to hold a concurrency slot
    argv: ["sleep", "1.5"]
"#,
    ),
    args: &[],
    files: &[],
};

/// Path rules: one allowed tree with a read-only part, deny patterns, symlinks refused.
pub static PATHS: Profile = Profile {
    name: "paths",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
paths:
  allow: ["{dir}/work"]
  read_only: ["{dir}/work/vendor"]
  deny: ["**/.env", "**/.git/**"]
  symlinks: deny
"#,
    ),
    args: &[],
    files: &[
        ("work/vendor/lib.txt", "vendored\n"),
        ("work/notes.txt", "notes\n"),
    ],
};

/// Named commands, anonymous caller.
pub static COMMANDS: Profile = Profile {
    name: "commands",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
commands:
  - name: greet
    description: Print a greeting
    argv: ["echo", "hello,", "{who}"]
    args:
      - {name: who, type: string, required: true, description: Whom to greet, max_length: 512}
      - {name: times, type: integer, min: 1, max: 3, default: 1, description: Unused count}
  - name: fail
    description: Exits with status 3
    argv: ["sh", "-c", "echo failing >&2; exit 3"]
  - name: slow
    description: Runs past its timeout
    argv: ["sleep", "30"]
    timeout_secs: 1
  - name: missing
    description: Names a program that does not exist
    argv: ["/nonexistent/svc-conformance-program"]
"#,
    ),
    args: &[],
    files: &[],
};

/// The agents group switched on through the environment.
pub static AGENTS: Profile = Profile {
    name: "agents",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_SERVER_ENABLED_GROUPS", "agents")],
    template: None,
    args: &[],
    files: &[],
};

/// Only implemented endpoints reachable: the groups still pending are switched off, so
/// no generated request can reach a 501.
pub static FUZZ: Profile = Profile {
    name: "fuzz",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  groups: {file_ops: false, process: false, terminal: false, system: false}
"#,
    ),
    args: &[],
    files: &[],
};

/// Agents sessions (issue 3): the fake runtimes run turns in `{dir}/workspace`, keep
/// their conversations in `{dir}/rt-state` and report a fixed clock.
pub static AGENTS_SESSIONS: Profile = Profile {
    name: "agents-sessions",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions with `rt-two` as the default runtime and traces switched on.
pub static AGENTS_SESSIONS_TWO: Profile = Profile {
    name: "agents-sessions-two",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
        ("SVC_AGENTS_DEFAULT", "rt-two"),
        ("SVC_AGENTS_TRACES", "1"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions keeping only 20 events per session, to provoke the gap signal.
pub static AGENTS_SESSIONS_SMALL_HISTORY: Profile = Profile {
    name: "agents-sessions-small-history",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
        ("SVC_AGENTS_EVENT_HISTORY", "20"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions with two identities holding every scope, for owner isolation.
pub static AGENTS_SESSIONS_OWNERS: Profile = Profile {
    name: "agents-sessions-owners",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
    ],
    template: Some(
        r#"
identities:
  - {id: alice, token: alice-token, scopes: ["*"]}
  - {id: bob, token: bob-token, scopes: ["*"]}
  - {id: carol, token: carol-token, scopes: ["*"]}
  - {id: dave, token: dave-token, scopes: ["*"]}
"#,
    ),
    args: &[],
    files: &[],
};

/// Agents sessions with a PATH that holds no runtime binary (the profile's env is
/// applied after the runner's PATH, so it replaces it): rt-one and rt-two are not installed.
/// The server command must name the server by an absolute path.
pub static AGENTS_SESSIONS_NO_RUNTIMES: Profile = Profile {
    name: "agents-sessions-no-runtimes",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("PATH", "{dir}/bin:/usr/local/bin:/usr/bin:/bin"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// The agents group with a 1 KiB file limit (`SVC_AGENTS_MAX_FILE_BYTES`).
pub static AGENTS_SMALL_FILES: Profile = Profile {
    name: "agents-small-files",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_MAX_FILE_BYTES", "1024"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// The agents group with a limit of two vaults per identity (`SVC_AGENTS_MAX_VAULTS`).
pub static AGENTS_FEW_VAULTS: Profile = Profile {
    name: "agents-few-vaults",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_MAX_VAULTS", "2"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions whose MCP servers and credentials may be on loopback over http
/// (`SVC_AGENTS_ALLOW_PRIVATE_URLS=1`), so a case can run the MCP server itself.
pub static AGENTS_LOCAL_MCP: Profile = Profile {
    name: "agents-local-mcp",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("SVC_AGENTS_ALLOW_PRIVATE_URLS", "1"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions with every request audited to `{dir}/audit.jsonl` and the most verbose
/// log, so a case can check what the server writes down.
pub static AGENTS_AUDITED: Profile = Profile {
    name: "agents-audited",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("SVC_SERVER_AUDIT", "all"),
        ("SVC_SERVER_AUDIT_FILE", "{dir}/audit.jsonl"),
        ("RUST_LOG", "trace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents with the operator's launch additions for both runtimes (template.yaml
/// `agents.runtimes`).
pub static AGENTS_LAUNCH: Profile = Profile {
    name: "agents-launch",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
    ],
    template: Some(
        r#"
server:
  groups: [agents]
agents:
  runtimes:
    rt-one:
      args: ["-c", "model_verbosity=\"low\""]
      env: {OPERATOR_MARK: op-one-31}
    rt-two:
      env: {OPERATOR_MARK: op-two-47}
"#,
    ),
    args: &[],
    files: &[],
};

/// Agents sessions with webhooks allowed to a local receiver (http, loopback) and retries
/// 50 ms apart. A session's events go to every endpoint of its owner, so each case that
/// runs sessions or watches deliveries acts as an identity of its own.
pub static AGENTS_WEBHOOKS: Profile = Profile {
    name: "agents-webhooks",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("RT_FAKE_FIXED_CLOCK", "1"),
        ("SVC_AGENTS_WEBHOOK_ALLOW_HTTP", "1"),
        ("SVC_AGENTS_ALLOW_PRIVATE_URLS", "1"),
        ("SVC_AGENTS_WEBHOOK_RETRY_BASE_MS", "50"),
    ],
    template: Some(
        r#"
identities:
  - {id: alice, token: alice-token, scopes: ["*"]}
  - {id: bob, token: bob-token, scopes: ["*"]}
  - {id: carol, token: carol-token, scopes: ["*"]}
  - {id: dave, token: dave-token, scopes: ["*"]}
  - {id: erin, token: erin-token, scopes: ["*"]}
  - {id: frank, token: frank-token, scopes: ["*"]}
  - {id: grace, token: grace-token, scopes: ["*"]}
"#,
    ),
    args: &[],
    files: &[],
};

/// Agents under an operator path policy: writes only below `{dir}`, `{dir}/frozen`
/// read-only, `*.pem` denied.
pub static AGENTS_PATHS: Profile = Profile {
    name: "agents-paths",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
    ],
    template: Some(
        r#"
server:
  groups: [agents]
paths:
  allow: ["{dir}"]
  read_only: ["{dir}/frozen"]
  deny: ["**/*.pem"]
"#,
    ),
    args: &[],
    files: &[],
};

/// Agents sessions on a server started with its own token, another `SVC_*` variable and a
/// cloud secret in its environment, passing two variables on to children on purpose
/// (`SVC_SERVER_CHILD_ENV`): what a runtime may and may not inherit.
pub static AGENTS_SESSIONS_SERVER_SECRETS: Profile = Profile {
    name: "agents-sessions-server-secrets",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*,CHILD_VISIBLE"),
        ("SVC_SERVER_TOKEN", SERVER_SECRET_TOKEN),
        ("SVC_AGENTS_TRACES", "1"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-9c41e7d2"),
        ("CHILD_VISIBLE", "passed-on-purpose-5e8a"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// The token of [`AGENTS_SESSIONS_SERVER_SECRETS`].
pub const SERVER_SECRET_TOKEN: &str = "svc-server-token-0b7f3c9a";

/// Agents sessions with a 2 s turn time limit (`SVC_AGENTS_TURN_TIMEOUT`), to provoke it.
pub static AGENTS_SESSIONS_SMALL_LIMITS: Profile = Profile {
    name: "agents-sessions-small-limits",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("SVC_AGENTS_TURN_TIMEOUT", "2"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// Agents sessions with a 1 MiB output cap (`SVC_AGENTS_MAX_OUTPUT_BYTES`), to provoke it.
/// Apart from the 2 s time limit: a turn writing megabytes on a busy machine may take
/// longer than that, and the cap, not the clock, is what its case tests.
pub static AGENTS_SESSIONS_OUTPUT_CAP: Profile = Profile {
    name: "agents-sessions-output-cap",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SVC_SERVER_ENABLED_GROUPS", "agents"),
        ("SVC_AGENTS_WORKSPACE", "{dir}/workspace"),
        ("RT_FAKE_STATE_DIR", "{dir}/rt-state"),
        ("SVC_SERVER_CHILD_ENV", "RT_FAKE_*"),
        ("SVC_AGENTS_MAX_OUTPUT_BYTES", "1048576"),
    ],
    template: None,
    args: &[],
    files: &[],
};

/// The file_ops group (on by default) under a path policy built from `{dir}`: two allowed
/// roots (`{dir}/root`, `{dir}/shared`), `{dir}/root/ro` read-only, `.env` files and
/// `private/` trees denied, links followed only while they stay in the allowed roots, a
/// 4 MiB per-file limit under a 16 MiB body limit, uploads of `.txt`, `.md` and `.bin` only,
/// at most 5 file parts an upload. `{dir}/outside` holds what no call may ever read or change. Each case works in a
/// directory of its own under `{dir}/root`.
pub static FILES: Profile = Profile {
    name: "files",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  max_body_bytes: 16777216
paths:
  allow: ["{dir}/root", "{dir}/shared"]
  read_only: ["{dir}/root/ro"]
  deny: ["**/.env", "**/private/**"]
  symlinks: within
  max_file_bytes: 4194304
  upload_extensions: {allow: [txt, md, bin]}
  max_upload_files: 5
"#,
    ),
    args: &[],
    files: &[
        ("root/ro/frozen.txt", "frozen\n"),
        ("root/.env", "TOKEN=never-shown\n"),
        ("shared/common.txt", "common\n"),
        ("outside/secret.txt", "outside secret\n"),
    ],
};

/// Large writes: the file_ops group with `{dir}/root` allowed, a 32 MiB per-file limit under
/// a 64 MiB body limit ([`FILES`] keeps 4 MiB for its limit cases). Each case works in a
/// directory of its own under `{dir}/root`.
pub static FILES_LARGE: Profile = Profile {
    name: "files-large",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  max_body_bytes: 67108864
paths:
  allow: ["{dir}/root"]
  max_file_bytes: 33554432
"#,
    ),
    args: &[],
    files: &[],
};

/// The process group under a deny list: `shred` refused by `process.deny_commands`,
/// `BLOCKED_*` variables by `process.deny_env`, 64 KiB of each output stream kept. The
/// anonymous caller holds every scope; each case works in `{dir}/work/<case>`.
pub static PROCESS: Profile = Profile {
    name: "process",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
process:
  deny_commands: [shred]
  deny_env: ["BLOCKED_*"]
  output_bytes: 65536
"#,
    ),
    args: &[],
    files: &[("work/.keep", "")],
};

/// The process group under an allow list and identities: only `{dir}/work` for `cwd`;
/// programs `echo`, `cat`, `sleep`, `sh`, `true`, `make`, `curl`, `kubectl`, and `git` for
/// callers holding `vcs:write`; variables `APP_*` only.
pub static PROCESS_GUARD: Profile = Profile {
    name: "process-guard",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
identities:
  - {id: admin, token: admin-token, scopes: ["*"]}
  - {id: runner, token: runner-token, scopes: ["process:*"]}
  - {id: other, token: other-token, scopes: ["process:*"]}
paths:
  allow: ["{dir}/work"]
process:
  allow_commands: [echo, cat, sleep, sh, "true", make, curl, kubectl, {command: git, scopes: ["vcs:write"]}]
  allow_env: ["APP_*"]
"#,
    ),
    args: &[],
    files: &[("work/.keep", "")],
};

/// A server of its own for the case that stops it (SIGTERM) with children running.
pub static PROCESS_SHUTDOWN: Profile = Profile {
    name: "process-shutdown",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[("work/.keep", "")],
};

/// Limits on the process routes: `shell_stream` one at a time, `process_stdin` three a
/// minute, `process_start` bodies of 2 KiB at most (a profile of its own: a held stream
/// would refuse other cases' streams).
pub static PROCESS_LIMITS: Profile = Profile {
    name: "process-limits",
    contract: Contract::Server,
    provider: None,
    env: &[],
    template: Some(
        r#"
server:
  limits:
    endpoints:
      shell_stream: {concurrency: 1}
      process_stdin: {rate: "3/m", burst: 3}
      process_start: {body_bytes: 2048}
"#,
    ),
    args: &[],
    files: &[("work/.keep", "")],
};

/// The system group: children get `SYSTEM_TEST_*` from the server (one of them secret-like,
/// so `GET /system/env` must mask it), paths only under `{dir}`, `BLOCKED_*` variables
/// refused by `process.deny_env`. Cases that change the environment use names of their own.
pub static SYSTEM: Profile = Profile {
    name: "system",
    contract: Contract::Server,
    provider: None,
    env: &[
        ("SYSTEM_TEST_API_TOKEN", "tok-0c9f2e"),
        ("SYSTEM_TEST_PLAIN", "visible"),
        ("SYSTEM_TEST_GONE", "here"),
        ("SVC_SERVER_CHILD_ENV", "SYSTEM_TEST_*"),
    ],
    template: Some(
        r#"
paths:
  allow: ["{dir}"]
process:
  deny_env: ["BLOCKED_*"]
"#,
    ),
    args: &[],
    files: &[("work/.keep", "")],
};

/// The dev_tools group switched on (it is opt-in): python3, bash and sh allowed (node is
/// not), any public host for `http_fetch` but `*.denied.example`.
pub static DEV_TOOLS: Profile = Profile {
    name: "dev-tools",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_SERVER_ENABLED_GROUPS", "dev_tools")],
    template: Some(
        r#"
dev_tools:
  languages: [python3, bash, sh]
  url_deny: ["*.denied.example"]
"#,
    ),
    args: &[],
    files: &[],
};

/// `http_fetch` opened to exactly two loopback ports: the test's own page server
/// (`127.0.0.1:28461`, started by the cases) and a port where nothing listens (`28463`).
/// Both are below the ephemeral range, so no other socket takes them by chance.
pub static DEV_TOOLS_LOCAL: Profile = Profile {
    name: "dev-tools-local",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_SERVER_ENABLED_GROUPS", "dev_tools")],
    template: Some(
        r#"
dev_tools:
  url_allow: ["127.0.0.1:28461", "127.0.0.1:28463"]
"#,
    ),
    args: &[],
    files: &[],
};

/// The browser group switched on, loopback admitted so cases can navigate to the pages they
/// serve themselves (private, link-local and metadata addresses stay refused). One browser
/// per server, so each browser case has a profile of its own.
const BROWSER_TEMPLATE: &str = r#"
server:
  groups: [browser]
"#;
const BROWSER_ENV: &[(&str, &str)] = &[("SVC_BROWSER_ALLOW_PRIVATE", "loopback")];

/// The page case: navigate, type, click, content, screenshots.
pub static BROWSER: Profile = Profile {
    name: "browser",
    contract: Contract::Server,
    provider: None,
    env: BROWSER_ENV,
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// Start, status and stop, and the operations while no browser runs.
pub static BROWSER_LIFECYCLE: Profile = Profile {
    name: "browser-lifecycle",
    contract: Contract::Server,
    provider: None,
    env: BROWSER_ENV,
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// A browser killed under the server.
pub static BROWSER_DEATH: Profile = Profile {
    name: "browser-death",
    contract: Contract::Server,
    provider: None,
    env: BROWSER_ENV,
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// The URL refusals, a refused redirect, an unreachable page.
pub static BROWSER_URLS: Profile = Profile {
    name: "browser-urls",
    contract: Contract::Server,
    provider: None,
    env: BROWSER_ENV,
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// A navigation that never finishes.
pub static BROWSER_TIMEOUT: Profile = Profile {
    name: "browser-timeout",
    contract: Contract::Server,
    provider: None,
    env: BROWSER_ENV,
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// `SVC_BROWSER_BIN` naming no binary: the start is refused.
pub static BROWSER_MISSING: Profile = Profile {
    name: "browser-missing",
    contract: Contract::Server,
    provider: None,
    env: &[("SVC_BROWSER_BIN", "/nonexistent/chromium")],
    template: Some(BROWSER_TEMPLATE),
    args: &[],
    files: &[],
};

/// The engine's own routes (health, providers, the door, unmatched routes): no
/// provider needed.
pub static ENGINE: Profile = Profile {
    name: "engine",
    contract: Contract::Engine,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[],
};

/// An engine of its own with a cap of 4 connections (`SVC_ENGINE_MAX_CONNECTIONS`), for
/// the case that floods it.
pub static ENGINE_CONNECTIONS: Profile = Profile {
    name: "engine-connections",
    contract: Contract::Engine,
    provider: None,
    env: &[("SVC_ENGINE_MAX_CONNECTIONS", "4")],
    template: None,
    args: &[],
    files: &[],
};

/// An engine of its own for a case that stops it (`POST /v1/shutdown`).
pub static ENGINE_STOPPED: Profile = Profile {
    name: "engine-stopped",
    contract: Contract::Engine,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[],
};

/// The builtin provider `local`: sandboxes as folders and process groups on
/// the engine's machine.
pub static LOCAL: Profile = Profile {
    name: "local",
    contract: Contract::Engine,
    provider: Some("local"),
    env: &[],
    template: None,
    args: &[],
    files: &[],
};

/// An engine that finds no bubblewrap (its `PATH` names no folder), as on a machine
/// without it: isolation is refused, never silently dropped. No provider of its own (the
/// default, `local`): the case is about this engine's machine, so it has no copies per
/// provider.
pub static LOCAL_WITHOUT_BWRAP: Profile = Profile {
    name: "local-without-bwrap",
    contract: Contract::Engine,
    provider: None,
    env: &[("PATH", "/nonexistent-svc-conformance")],
    template: None,
    args: &[],
    files: &[],
};

/// The second engine behind a provider that reaches another (`rest`): launched
/// first, with its own state folder and token; no case talks to it directly.
pub static ENGINE_UPSTREAM: Profile = Profile {
    name: "engine-upstream",
    contract: Contract::Engine,
    provider: None,
    env: &[],
    template: None,
    args: &[],
    files: &[],
};
