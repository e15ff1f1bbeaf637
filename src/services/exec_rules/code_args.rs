//! Arguments that make an allow-listed program run code of the caller's choosing. An allow
//! list names programs; these arguments would turn an allowed `make` or `git` into any
//! program, so under an allow list they are refused. The list is of what is known, not a
//! promise: a program that runs what its input files say (a `Makefile`, a repository's
//! hooks and config, `package.json` scripts, any interpreter) runs whatever the caller can
//! write there, which the README's Security section says plainly.

/// Why `args` make `program` (by its file name) run code of the caller's choosing, or
/// `None`.
pub fn runs_code(program: &str, args: &[String]) -> Option<&'static str> {
    match program {
        "make" | "gmake" => make(args),
        "git" => git(args),
        _ => None,
    }
}

/// `make --eval=TEXT` and `make -E TEXT` evaluate makefile text: `$(shell ...)` runs a
/// command before any target is read.
fn make(args: &[String]) -> Option<&'static str> {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| {
            a.starts_with("--eval")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('E'))
        })
        .then_some("`make --eval` and `make -E` evaluate text that can run any command")
}

/// Git's global options before the subcommand: `-c NAME=VALUE` and `--config-env` set any
/// configuration (an alias starting with `!`, `core.fsmonitor`, `core.sshCommand`, a
/// pager: each runs a command), `--exec-path` chooses where git's own programs come from.
fn git(args: &[String]) -> Option<&'static str> {
    const WITH_VALUE: &[&str] = &["-C", "--git-dir", "--work-tree", "--namespace"];
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-c" || arg.starts_with("--config-env") || arg.starts_with("--exec-path") {
            return Some(
                "`git -c`, `--config-env` and `--exec-path` set configuration or programs that \
                 run commands",
            );
        }
        if !arg.starts_with('-') || arg == "--" {
            return None;
        }
        i += if WITH_VALUE.contains(&arg.as_str()) {
            2
        } else {
            1
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::runs_code;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn known_code_running_arguments() {
        for (program, args) in [
            ("make", "--eval=$(shell id)"),
            ("make", "--eval $(shell id)"),
            ("make", "-E $(shell id)"),
            ("make", "-sE $(shell id)"),
            ("git", "-c alias.x=!id x"),
            ("git", "-C . -c core.fsmonitor=id status"),
            ("git", "--config-env=alias.x=V x"),
            ("git", "--exec-path=/tmp status"),
        ] {
            assert!(
                runs_code(program, &words(args)).is_some(),
                "{program} {args}"
            );
        }
        for (program, args) in [
            ("make", "all"),
            ("make", "-j4 -f Makefile"),
            ("make", "-- -E"),
            ("git", "status"),
            ("git", "commit -c HEAD"),
            ("git", "-C sub log"),
            ("curl", "-c jar"),
        ] {
            assert!(
                runs_code(program, &words(args)).is_none(),
                "{program} {args}"
            );
        }
    }
}
