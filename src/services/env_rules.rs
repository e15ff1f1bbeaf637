//! Which environment variables a caller may hand to a child, and why not: the one rule for
//! every route that takes `env` (environments and sessions now; shells, processes, terminals,
//! code runs and sandboxes next). A refused name is one that lets the value decide what code
//! runs, where it loads from, whom it trusts, where its traffic or configuration goes, or
//! that carries a secret (secrets reach runtimes only through vault credentials).
//!
//! Names are compared without regard to case: several tools read `http_proxy` and
//! `HTTP_PROXY` alike, and npm reads `npm_config_*` in any case.

/// Exact names, by family.
const EXACT: &[(&[&str], &str)] = &[
    (
        &["PATH", "HOME", "SHELL", "IFS", "PWD"],
        "the server sets it for the child",
    ),
    (
        &[
            "ENV",
            "BASH_ENV",
            "ZDOTDIR",
            "PROMPT_COMMAND",
            "PS0",
            "PS1",
            "PS2",
            "PS3",
            "PS4",
            "SHELLOPTS",
            "BASHOPTS",
            "INPUTRC",
            "HISTFILE",
        ],
        "shell start-up hooks and prompts run code in every shell",
    ),
    (
        &[
            "EDITOR",
            "VISUAL",
            "PAGER",
            "MANPAGER",
            "LESSOPEN",
            "LESSCLOSE",
            "BROWSER",
            "SSH_ASKPASS",
            "SUDO_ASKPASS",
        ],
        "the variable names a program that other tools run",
    ),
    (
        &[
            "NODE_OPTIONS",
            "NODE_PATH",
            "NODE_REPL_EXTERNAL_MODULE",
            "NODE_TLS_REJECT_UNAUTHORIZED",
            "PERL5LIB",
            "PERL5OPT",
            "PERLLIB",
            "PERL5DB",
            "RUBYOPT",
            "RUBYLIB",
            "GEM_HOME",
            "GEM_PATH",
            "JAVA_TOOL_OPTIONS",
            "_JAVA_OPTIONS",
            "JDK_JAVA_OPTIONS",
            "CLASSPATH",
            "LUA_INIT",
            "LUA_PATH",
            "LUA_CPATH",
            "TCLLIBPATH",
            "DOTNET_STARTUP_HOOKS",
            "GCONV_PATH",
            "LOCPATH",
            "NLSPATH",
            "MALLOC_CONF",
            "GLIBC_TUNABLES",
            "GOFLAGS",
            "RUSTC_WRAPPER",
            "RUSTFLAGS",
            "RUSTDOCFLAGS",
        ],
        "interpreter and loader options decide which code runs",
    ),
    (
        &[
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "AWS_CA_BUNDLE",
            "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
            "OPENSSL_CONF",
            "OPENSSL_ENGINES",
            "OPENSSL_MODULES",
        ],
        "CA bundles and TLS settings decide whom the child trusts",
    ),
    (
        &[
            "GOPROXY",
            "GONOSUMDB",
            "GONOSUMCHECK",
            "GOPRIVATE",
            "GOINSECURE",
            "GONOPROXY",
            "GOSUMDB",
            "GOPATH",
            "GOMODCACHE",
            "GEMRC",
            "NPMRC",
        ],
        "package registry settings decide where code is downloaded from",
    ),
    (
        &[
            "MAKEFLAGS",
            "MFLAGS",
            "GNUMAKEFLAGS",
            "MAKEFILES",
            "KUBECONFIG",
            "CURL_HOME",
            "WGETRC",
            "NETRC",
            "DOCKER_CONFIG",
            "DOCKER_HOST",
            "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE",
            "HGRCPATH",
            "SSH_AUTH_SOCK",
        ],
        "the variable names options or a configuration file that can run programs or redirect traffic",
    ),
];

/// Name prefixes, by family. `keep` lists names under a prefix that only tune output.
const PREFIXES: &[(&str, &[&str], &str)] = &[
    ("SVC_", &[], "`SVC_*` variables configure this server"),
    (
        "GIT_",
        &[],
        "`GIT_*` variables change what git runs and where it writes",
    ),
    (
        "LD_",
        &[],
        "loader variables can inject code into every process",
    ),
    (
        "DYLD_",
        &[],
        "loader variables can inject code into every process",
    ),
    (
        "BASH_FUNC_",
        &[],
        "exported shell functions run in every shell",
    ),
    (
        "OPENAI_",
        &[],
        "runtime-specific variables are set by the operator",
    ),
    (
        "ANTHROPIC_",
        &[],
        "runtime-specific variables are set by the operator",
    ),
    (
        "CODEX_",
        &[],
        "runtime-specific variables are set by the operator",
    ),
    (
        "CLAUDE_",
        &[],
        "runtime-specific variables are set by the operator",
    ),
    (
        "RT_",
        &[],
        "runtime-specific variables are set by the operator",
    ),
    (
        "PYTHON",
        &[
            "PYTHONUNBUFFERED",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONIOENCODING",
            "PYTHONHASHSEED",
            "PYTHONUTF8",
        ],
        "interpreter and loader options decide which code runs",
    ),
    (
        "XDG_",
        &[],
        "XDG directories decide where every tool reads its configuration (git's included)",
    ),
    (
        "NPM_CONFIG_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "YARN_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "PIP_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "UV_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "POETRY_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "BUNDLE_",
        &[],
        "package registry settings decide where code is downloaded from",
    ),
    (
        "CARGO_",
        &["CARGO_TERM_COLOR", "CARGO_TERM_VERBOSE", "CARGO_TERM_QUIET"],
        "package registry and build settings decide where code comes from and what runs",
    ),
];

/// Words that make a name secret-like when they stand between underscores.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "PRIVATE",
    "COOKIE",
    "PRIVATEKEY",
    "SECRETKEY",
    "PASSPHRASE",
    "PAT",
    "AUTHORIZATION",
    "JWT",
    "BEARER",
    "DSN",
    "WEBHOOK",
];

/// Endings that make a name secret-like even without an underscore before them
/// (`MYSQL_PWD` but not `PWD` or `OLDPWD`, `DATABASE_URL`).
const SECRET_ENDINGS: &[&str] = &[
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PRIVATEKEY",
    "SECRETKEY",
    "_PWD",
    "DATABASE_URL",
];

/// Why a caller may not set the variable `name` for a child, or `None` when it may.
pub fn refused_env_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    if let Some((_, why)) = EXACT
        .iter()
        .find(|(names, _)| names.contains(&upper.as_str()))
    {
        return Some(why);
    }
    if upper.ends_with("_PROXY") {
        return Some("proxy variables would redirect the child's traffic");
    }
    if let Some((_, _, why)) = PREFIXES
        .iter()
        .find(|(prefix, keep, _)| upper.starts_with(prefix) && !keep.contains(&upper.as_str()))
    {
        return Some(why);
    }
    secret_like(name).then_some(
        "secret-like names are refused: secrets reach runtimes only through vault credentials",
    )
}

/// Whether `name` looks like it holds a secret (a word like `TOKEN` or `PASSWORD` between
/// underscores, or a name ending in one): refused as a caller's variable, and masked where
/// the server shows a value (`GET /system/env`).
pub fn secret_like(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.split('_').any(|w| SECRET_WORDS.contains(&w))
        || SECRET_ENDINGS.iter().any(|w| upper.ends_with(w))
}

/// Whether `value` carries a credential in a URL (`postgres://user:password@host/db`): a
/// password in the authority of any URL in it. Refused as a caller's value and masked where
/// the server shows one, whatever the name.
pub fn secret_value(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = rest.split(['/', '?', '#', ' ']).next().unwrap_or_default();
        authority
            .rsplit_once('@')
            .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    })
}

#[cfg(test)]
mod tests {
    use super::{refused_env_name, secret_like, secret_value};

    #[test]
    fn secret_names_and_values_the_probe_found() {
        for name in [
            "PRIVATEKEY",
            "SECRETKEY",
            "MYSQL_PWD",
            "GITHUB_PAT",
            "GH_PAT",
            "AUTHORIZATION",
            "JWT",
            "BEARER",
            "DATABASE_URL",
            "SENTRY_DSN",
            "SLACK_WEBHOOK_URL",
            "MY_PRIVATEKEY",
        ] {
            assert!(secret_like(name), "{name}");
        }
        for name in ["PWD", "OLDPWD", "PATH", "PATTERN", "LANG", "KEYBOARD"] {
            assert!(!secret_like(name), "{name}");
        }
        for value in [
            "postgres://u:pw@h/db",
            "redis://:pw@cache:6379",
            "see https://user:tok@example.com/x",
        ] {
            assert!(secret_value(value), "{value}");
        }
        for value in [
            "https://example.com/a@b",
            "https://user@example.com/",
            "plain",
            "a:b@c",
        ] {
            assert!(!secret_value(value), "{value}");
        }
    }

    #[test]
    fn refused_families() {
        for name in [
            "PATH",
            "home",
            "HTTPS_PROXY",
            "no_proxy",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "OPENAI_BASE_URL",
            "ANTHROPIC_MODEL",
            "CODEX_HOME",
            "GIT_DIR",
            "SVC_SERVER_TOKEN",
            "LD_PRELOAD",
            "BASH_ENV",
            "MY_APIKEY",
            "SESSION_COOKIE",
            // Interpreter and loader options.
            "NODE_OPTIONS",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "PYTHONHOME",
            "PERL5OPT",
            "RUBYOPT",
            "JAVA_TOOL_OPTIONS",
            // CA bundles.
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            // Package registries.
            "npm_config_registry",
            "NPM_CONFIG_USERCONFIG",
            "PIP_INDEX_URL",
            "PIP_CONFIG_FILE",
            "UV_INDEX_URL",
            "GOPROXY",
            "CARGO_HOME",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            // Shell start-up hooks.
            "PROMPT_COMMAND",
            "PS4",
            "ZDOTDIR",
            "ENV",
            "EDITOR",
            // XDG directories.
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "xdg_config_dirs",
            // Options and configuration files that run programs.
            "MAKEFLAGS",
            "KUBECONFIG",
            "CURL_HOME",
        ] {
            assert!(refused_env_name(name).is_some(), "{name}");
        }
        for name in [
            "LANG",
            "RUST_LOG",
            "PROJECT_NAME",
            "MONKEY_COUNT",
            "KEYBOARD",
            "NODE_ENV",
            "PYTHONUNBUFFERED",
            "CARGO_TERM_COLOR",
            "CI",
        ] {
            assert!(refused_env_name(name).is_none(), "{name}");
        }
    }
}
