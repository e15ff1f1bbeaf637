//! Arguments that make an allow-listed program run code of the caller's choosing. An allow
//! list names programs; these arguments would turn an allowed `make` or `git` into any
//! program, so under an allow list they are refused. The list is of what is known, not a
//! promise: a program that runs what its input files say (a `Makefile`, a repository's
//! hooks and config, `package.json` scripts, any interpreter) runs whatever the caller can
//! write there, which the README's Security section says plainly. Known and not refused
//! here, for that reason: `make -f -` (a makefile from stdin) or any makefile the caller
//! wrote, `git -C`/`--git-dir` pointing at a repository whose config the caller wrote.

/// Why `args` make `program` (by its file name) run code of the caller's choosing, or
/// `None`.
pub fn runs_code(program: &str, args: &[String]) -> Option<&'static str> {
    match program {
        "make" | "gmake" => make(args),
        "git" => git(args),
        _ => None,
    }
}

/// Whether `arg` is the long option `--name` or a prefix of it, with or without `=VALUE`:
/// GNU make and git's option parser take any unambiguous prefix of a long option (`--ev`
/// is `--eval`), and an ambiguous one they refuse themselves, so every prefix is read as
/// the option.
fn long_option(arg: &str, name: &str) -> bool {
    arg.strip_prefix("--")
        .map(|long| long.split('=').next().unwrap_or_default())
        .is_some_and(|given| !given.is_empty() && name.starts_with(given))
}

/// Whether `arg` is a bundle of short options (`-sE`) holding `letter`.
fn short_option(arg: &str, letter: char) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|short| !short.starts_with('-') && short.contains(letter))
}

/// `make --eval=TEXT` (or a prefix of it, `--ev`) and `make -E TEXT` evaluate makefile
/// text: `$(shell ...)` runs a command before any target is read. A variable set on the
/// line with `!=`, or whose text holds a `$`, runs a command as it is read too (`X!=id`,
/// `X:=$(shell id)`), after `--` as well: `--` ends the options, not the variables.
fn make(args: &[String]) -> Option<&'static str> {
    let options_end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let evaluates = |a: &String| long_option(a, "eval") || short_option(a, 'E');
    let sets_code = |a: &String| {
        a.split_once('=').is_some_and(|(name, value)| {
            name.ends_with('!') || name.contains('$') || value.contains('$')
        })
    };
    let option = |a: &String| a.starts_with('-');
    (args[..options_end].iter().any(|a| {
        if option(a) {
            evaluates(a)
        } else {
            sets_code(a)
        }
    }) || args[options_end..].iter().any(sets_code))
    .then_some(
        "`make --eval`, `make -E` and a variable set on the line with `!=` or a `$` \
             evaluate text that can run any command",
    )
}

/// Options of git commands that run a program the caller names, by command: the long ones
/// (any prefix, as [`long_option`] reads them) and the short ones. `clone --config` sets
/// configuration (`core.sshCommand`) and `--template` brings hooks, both used by the clone.
const GIT_COMMAND_OPTIONS: &[(&str, &[&str], &[char])] = &[
    ("clone", &["upload-pack", "config", "template"], &['u', 'c']),
    ("fetch", &["upload-pack"], &[]),
    ("pull", &["upload-pack"], &[]),
    ("ls-remote", &["upload-pack", "exec"], &[]),
    ("push", &["receive-pack", "exec"], &[]),
    ("archive", &["exec"], &[]),
    ("rebase", &["exec"], &['x']),
    ("difftool", &["extcmd"], &['x']),
    ("init", &["template"], &[]),
    ("grep", &["open-files-in-pager"], &['O']),
    ("fetch-pack", &["upload-pack", "exec"], &[]),
    ("send-pack", &["receive-pack", "exec"], &[]),
    ("send-email", &["sendmail-cmd", "smtp-server"], &[]),
];

/// Git commands whose work is to run a command the caller names (`git bisect run CMD`,
/// `git submodule foreach CMD`, `git filter-branch --tree-filter CMD`): the command, and
/// the word after it that does (`None`: any use).
const GIT_RUNNING_COMMANDS: &[(&str, Option<&str>)] = &[
    ("bisect", Some("run")),
    ("submodule", Some("foreach")),
    ("filter-branch", None),
];

/// Whether git's `command`, given `args` (those after it), runs a program the caller names.
/// `git config` that sets a value is one: the value can be an alias starting with `!`, a
/// pager or `core.sshCommand`, which the next git call runs; only its reading forms pass.
fn git_command(command: &str, args: &[String]) -> bool {
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|a| *a != "--")
        .collect();
    if command == "config" {
        const READING: &[&str] = &[
            "get",
            "list",
            "--get",
            "--get-all",
            "--get-regexp",
            "--list",
            "-l",
        ];
        return !args.iter().any(|a| READING.contains(a));
    }
    let runs = GIT_RUNNING_COMMANDS
        .iter()
        .any(|(name, word)| *name == command && word.is_none_or(|word| args.contains(&word)));
    runs || GIT_COMMAND_OPTIONS
        .iter()
        .filter(|(name, _, _)| *name == command)
        .any(|(_, long, short)| {
            args.iter().any(|a| {
                long.iter().any(|l| long_option(a, l)) || short.iter().any(|&c| short_option(a, c))
            })
        })
}

/// Git's global options before the subcommand: `-c NAME=VALUE` and `--config-env` set any
/// configuration (an alias starting with `!`, `core.fsmonitor`, `core.sshCommand`, a
/// pager: each runs a command), `--exec-path` chooses where git's own programs come from.
/// Under an allow list only the global options known here pass: one that is not known
/// (a newer git's, or one that takes a value this list would not skip) is refused rather
/// than guessed at. Git reads its global options whole (no prefixes); then the command's
/// own options that run a program are refused ([`GIT_COMMAND_OPTIONS`]).
fn git(args: &[String]) -> Option<&'static str> {
    /// Global options that take the next argument as their value (or `=VALUE`).
    const WITH_VALUE: &[&str] = &[
        "-C",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--attr-source",
        "--shallow-file",
    ];
    /// Global options that take a value only as `=VALUE`.
    const EQUALS_VALUE: &[&str] = &["--list-cmds"];
    /// Global options that take no value.
    const FLAGS: &[&str] = &[
        "-p",
        "--paginate",
        "-P",
        "--no-pager",
        "--no-replace-objects",
        "--bare",
        "--literal-pathspecs",
        "--no-literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-advice",
        "--html-path",
        "--man-path",
        "--info-path",
        "-h",
        "--help",
        "-v",
        "--version",
    ];
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-c" || arg.starts_with("--config-env") || arg.starts_with("--exec-path") {
            return Some(
                "`git -c`, `--config-env` and `--exec-path` set configuration or programs that \
                 run commands",
            );
        }
        if arg == "--" {
            return None;
        }
        if !arg.starts_with('-') {
            return git_command(arg, &args[i + 1..]).then_some(
                "this git command or option runs a program the caller names (`--upload-pack`, \
                 `--exec`, `rebase -x`, `bisect run`, ...)",
            );
        }
        if WITH_VALUE.contains(&arg.as_str()) {
            i += 2;
        } else if FLAGS.contains(&arg.as_str())
            || arg.split_once('=').is_some_and(|(name, _)| {
                name.starts_with("--")
                    && (WITH_VALUE.contains(&name) || EQUALS_VALUE.contains(&name))
            })
        {
            i += 1;
        } else {
            return Some(
                "a git global option this allow list does not know is refused: it could take \
                 a value that hides `-c`",
            );
        }
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
            ("make", "--ev=$(shell id)"),
            ("make", "--eva $(shell id)"),
            ("make", "-f /dev/null X!=id"),
            ("make", "-f /dev/null X:=$(shell id)"),
            ("git", "--attr-source HEAD -c alias.x=!id x"),
            ("git", "--no-such-option HEAD -c alias.x=!id x"),
            ("git", "--git-di . -c alias.x=!id x"),
            ("make", "--e=$(shell id)"),
            ("make", "-f Makefile -sE $(shell id)"),
            ("git", "clone --upload-pack=id r"),
            ("git", "clone --upl=id r"),
            ("git", "clone -u id r"),
            ("git", "clone -c core.sshCommand=id r"),
            ("git", "clone --conf core.sshCommand=id r"),
            ("git", "fetch --upload=id origin"),
            ("git", "-C sub push --rec=id origin"),
            ("git", "ls-remote --exec=id origin"),
            ("git", "rebase -x id main"),
            ("git", "rebase --ex=id main"),
            ("git", "difftool --extcmd=id"),
            ("git", "bisect run id"),
            ("git", "submodule foreach id"),
            ("git", "filter-branch --tree-filter id"),
            ("make", "-f /dev/null -- X!=id"),
            ("make", "-- X:=$(shell id)"),
            ("git", "config alias.x !id"),
            ("git", "config --global core.pager id"),
            ("git", "config set core.sshCommand id"),
            ("git", "init --template=/tmp/hooks repo"),
            ("git", "grep -O id pattern"),
            ("git", "grep --open-files-in-pager=id pattern"),
            ("git", "fetch-pack --upload-pack=id origin"),
            ("git", "send-pack --receive-pack=id origin"),
            ("git", "send-email --sendmail-cmd=id patch"),
            ("git", "--list-cmds -c alias.x=!id x"),
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
            ("git", "--attr-source=HEAD --no-pager -C sub log"),
            ("make", "--environment-overrides PREFIX=/usr install"),
            ("curl", "-c jar"),
            ("git", "fetch --unshallow origin"),
            ("git", "log --exit-code"),
            ("git", "commit -u -m x"),
            ("git", "rebase -i main"),
            ("git", "bisect start"),
            ("git", "submodule update"),
            ("git", "push origin -- --exec"),
            ("make", "-- all"),
            ("git", "config --get user.name"),
            ("git", "config --list"),
            ("git", "config get user.name"),
            ("git", "--list-cmds=main log"),
            ("git", "init repo"),
            ("git", "grep -n pattern"),
        ] {
            assert!(
                runs_code(program, &words(args)).is_none(),
                "{program} {args}"
            );
        }
    }
}
