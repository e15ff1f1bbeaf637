//! Which Chromium to start: the operator's override, else the first of the usual names on
//! `PATH` (Debian's `chromium`, Ubuntu's `chromium-browser`, Google's builds).

use std::path::{Path, PathBuf};

/// The variable naming the browser binary (a path, or a name looked up on `PATH`).
pub const OVERRIDE_VAR: &str = "SVC_BROWSER_BIN";

/// Names tried on `PATH`, in order.
pub const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The package that provides the browser on Debian (named in the error when none is found).
pub const PACKAGE: &str = "chromium";

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn on_path(name: &str, path: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// The browser to run given the override and `PATH`; `Err` says what was tried.
pub fn find(override_bin: Option<&str>, path: &str) -> Result<PathBuf, String> {
    match override_bin.filter(|s| !s.is_empty()) {
        Some(name) => on_path(name, path).ok_or_else(|| {
            format!(
                "{OVERRIDE_VAR}=`{name}` is not an executable file (nor one on PATH); install Debian's `{PACKAGE}` package (apt-get install -y {PACKAGE}) or fix {OVERRIDE_VAR}"
            )
        }),
        None => CANDIDATES
            .iter()
            .find_map(|name| on_path(name, path))
            .ok_or_else(|| {
                format!(
                    "no browser found: none of {} is on PATH; install Debian's `{PACKAGE}` package (apt-get install -y {PACKAGE}) or set {OVERRIDE_VAR}",
                    CANDIDATES.join(", ")
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_override_wins_and_a_missing_one_is_named() {
        assert_eq!(find(Some("/bin/sh"), "").unwrap(), PathBuf::from("/bin/sh"));
        assert_eq!(
            find(Some("sh"), "/bin:/usr/bin")
                .unwrap()
                .file_name()
                .unwrap(),
            "sh"
        );
        let e = find(Some("/nonexistent/chrome"), "/bin").unwrap_err();
        assert!(
            e.contains(OVERRIDE_VAR) && e.contains("/nonexistent/chrome"),
            "{e}"
        );
    }

    #[test]
    fn no_candidate_names_the_package() {
        let empty = tempfile_dir();
        let e = find(None, &empty).unwrap_err();
        assert!(e.contains("apt-get install -y chromium"), "{e}");
    }

    fn tempfile_dir() -> String {
        std::env::temp_dir()
            .join("svc-browser-no-such-dir")
            .display()
            .to_string()
    }
}
