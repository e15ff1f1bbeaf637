//! Search under a directory: names by glob, text contents by regular expression. The walk
//! opens every directory beneath its parent's descriptor without following links (a link is
//! a name that may match, never a way in), skips what the guard denies, skips binary files
//! (a NUL byte in the first 8 KiB), and its work is bounded: it stops at `max_results`, and
//! at a budget of entries, bytes and time, reporting `truncated`.

use super::error::FileError;
use super::walk::DIR;
use crate::services::paths::PathGuard;
use globset::GlobBuilder;
use nix::dir::{Dir, Type};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat};
use regex::bytes::{Regex, RegexBuilder};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const DEFAULT_MAX_RESULTS: usize = 1000;
pub const MAX_RESULTS: usize = 10_000;
/// The longest line text a content match carries (longer lines are cut, on a char boundary).
pub const MAX_MATCH_TEXT: usize = 512;
/// Bytes read to decide that a file is binary.
pub const BINARY_PROBE: usize = 8 * 1024;

/// The longest glob accepted, and the deepest nesting of `{...}` alternations in it: a
/// longer or deeper one expands to a regular expression too large to build.
pub const MAX_GLOB_BYTES: usize = 1024;
pub const MAX_GLOB_NESTING: usize = 8;
/// The longest regular expression accepted, and the deepest nesting of its groups.
pub const MAX_PATTERN_BYTES: usize = 4096;
pub const MAX_PATTERN_NESTING: u32 = 64;
/// What the compiled forms of a glob or pattern may take: a larger one is refused.
const COMPILED_BYTES: usize = 1 << 20;
/// The longest compiler message quoted in a refusal (they can quote the whole input).
const MAX_WHY_BYTES: usize = 512;

/// What to search for. At least one of `glob` and `pattern`.
#[derive(Debug, Clone)]
pub struct SearchQuery {
    /// Matched against each name (or, when it holds a `/`, against the path relative to
    /// the searched directory).
    pub glob: Option<String>,
    /// A regular expression matched against each line of text files.
    pub pattern: Option<String>,
    /// 1..=10000.
    pub max_results: usize,
    /// The work budget (entries visited, bytes read, time).
    pub budget: SearchBudget,
}

impl SearchQuery {
    pub fn new(
        glob: Option<String>,
        pattern: Option<String>,
        max_results: Option<usize>,
    ) -> SearchQuery {
        SearchQuery {
            glob,
            pattern,
            max_results: max_results.unwrap_or(DEFAULT_MAX_RESULTS),
            budget: SearchBudget::default(),
        }
    }
}

/// Where a search stops even short of `max_results` (then `truncated`).
#[derive(Debug, Clone, Copy)]
pub struct SearchBudget {
    pub max_entries: u64,
    pub max_bytes: u64,
    /// Files larger than this are not read for `pattern` (their names still match `glob`).
    pub max_file_bytes: u64,
    pub time: Duration,
}

impl Default for SearchBudget {
    /// 2,000,000 entries, 4 GiB read, files up to 64 MiB, 20 s.
    fn default() -> SearchBudget {
        SearchBudget {
            max_entries: 2_000_000,
            max_bytes: 4 << 30,
            max_file_bytes: 64 << 20,
            time: Duration::from_secs(20),
        }
    }
}

/// One hit: a name (`line` and `text` absent) or a line of a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SearchMatch {
    pub path: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SearchResult {
    pub matches: Vec<SearchMatch>,
    /// Stopped before the whole tree was searched (`max_results` reached, or the budget).
    pub truncated: bool,
}

pub(crate) struct Compiled {
    glob: Option<Regex>,
    glob_on_path: bool,
    pattern: Option<Regex>,
    max_results: usize,
    budget: SearchBudget,
}

impl Compiled {
    pub fn new(query: &SearchQuery) -> Result<Compiled, FileError> {
        let invalid = |param, message| FileError::InvalidArgument { param, message };
        if !(1..=MAX_RESULTS).contains(&query.max_results) {
            return Err(invalid(
                "max_results",
                format!("max_results must be 1 to {MAX_RESULTS}"),
            ));
        }
        if query.glob.is_none() && query.pattern.is_none() {
            return Err(invalid("glob", "give a glob, a pattern or both".into()));
        }
        let glob = match &query.glob {
            Some(g) => Some(compile_glob(g).map_err(|why| invalid("glob", why))?),
            None => None,
        };
        let pattern = match &query.pattern {
            Some(p) => Some(compile_pattern(p).map_err(|why| invalid("pattern", why))?),
            None => None,
        };
        Ok(Compiled {
            glob_on_path: query.glob.as_deref().is_some_and(|g| g.contains('/')),
            glob,
            pattern,
            max_results: query.max_results,
            budget: query.budget,
        })
    }
}

struct Search<'a> {
    guard: &'a PathGuard,
    query: &'a Compiled,
    root: &'a Path,
    matches: Vec<SearchMatch>,
    truncated: bool,
    entries: u64,
    bytes: u64,
    deadline: Instant,
}

/// Searches the directory open as `dir` at `path`, or the single file `name` in it.
pub(crate) fn run(
    guard: &PathGuard,
    query: &Compiled,
    path: &Path,
    dir: OwnedFd,
    file: Option<OsString>,
) -> SearchResult {
    let mut search = Search {
        guard,
        query,
        root: path,
        matches: Vec::new(),
        truncated: false,
        entries: 0,
        bytes: 0,
        deadline: Instant::now() + query.budget.time,
    };
    match file {
        Some(name) => search.file(&dir, &name, path),
        None => search.tree(dir, path.to_path_buf()),
    }
    SearchResult {
        matches: search.matches,
        truncated: search.truncated,
    }
}

impl Search<'_> {
    fn done(&self) -> bool {
        self.truncated
    }

    /// Adds a match; `false` once `max_results` are there (the next one truncates).
    fn push(&mut self, m: SearchMatch) -> bool {
        if self.matches.len() >= self.query.max_results {
            self.truncated = true;
            return false;
        }
        self.matches.push(m);
        true
    }

    fn over_budget(&mut self) -> bool {
        if self.entries > self.query.budget.max_entries
            || self.bytes > self.query.budget.max_bytes
            || (self.entries % 256 == 1 && Instant::now() > self.deadline)
        {
            self.truncated = true;
        }
        self.truncated
    }

    fn name_matches(&self, name: &std::ffi::OsStr, path: &Path) -> bool {
        match &self.query.glob {
            None => true,
            Some(glob) if self.query.glob_on_path => glob.is_match(
                path.strip_prefix(self.root)
                    .unwrap_or(path)
                    .as_os_str()
                    .as_bytes(),
            ),
            Some(glob) => glob.is_match(name.as_bytes()),
        }
    }

    fn tree(&mut self, top: OwnedFd, top_path: PathBuf) {
        let mut pending = vec![(top, top_path)];
        while let Some((fd, dir_path)) = pending.pop() {
            let Ok(mut dir) = Dir::from_fd(fd) else {
                continue;
            };
            let mut names: Vec<(OsString, Option<Type>)> = dir
                .iter()
                .filter_map(Result::ok)
                .filter(|e| !matches!(e.file_name().to_bytes(), b"." | b".."))
                .map(|e| {
                    (
                        std::ffi::OsStr::from_bytes(e.file_name().to_bytes()).to_os_string(),
                        e.file_type(),
                    )
                })
                .collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            let mut subdirs = Vec::new();
            for (name, kind) in names {
                self.entries += 1;
                if self.over_budget() {
                    return;
                }
                let path = dir_path.join(&name);
                if self.guard.matches_deny(&path) {
                    continue;
                }
                let kind = match kind {
                    Some(k) => k,
                    None => match nix::sys::stat::fstatat(
                        &dir,
                        name.as_os_str(),
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    ) {
                        Ok(s) => type_of(s.st_mode),
                        Err(_) => continue,
                    },
                };
                match kind {
                    Type::Directory => {
                        if self.query.pattern.is_none() && self.name_matches(&name, &path) {
                            let m = SearchMatch {
                                path: path.clone(),
                                line: None,
                                text: None,
                            };
                            if !self.push(m) {
                                return;
                            }
                        }
                        if let Ok(fd) = openat(&dir, name.as_os_str(), DIR, Mode::empty()) {
                            subdirs.push((fd, path));
                        }
                    }
                    Type::File => {
                        self.file(&dir, &name, &path);
                        if self.done() {
                            return;
                        }
                    }
                    _ => {
                        // Links and special files: their names may match, never their content.
                        if self.query.pattern.is_none() && self.name_matches(&name, &path) {
                            let m = SearchMatch {
                                path,
                                line: None,
                                text: None,
                            };
                            if !self.push(m) {
                                return;
                            }
                        }
                    }
                }
            }
            // Depth first, in name order.
            pending.extend(subdirs.into_iter().rev());
        }
    }

    fn file(&mut self, dir: &impl std::os::fd::AsFd, name: &std::ffi::OsStr, path: &Path) {
        if !self.name_matches(name, path) {
            return;
        }
        let Some(pattern) = &self.query.pattern else {
            self.push(SearchMatch {
                path: path.to_path_buf(),
                line: None,
                text: None,
            });
            return;
        };
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let Ok(fd) = openat(dir, name, flags, Mode::empty()) else {
            return;
        };
        match fstat(&fd) {
            Ok(s) if type_of(s.st_mode) == Type::File => {
                if s.st_size as u64 > self.query.budget.max_file_bytes {
                    return;
                }
                // A read refuses a file of several names while deny rules exist; so does
                // a search of its content.
                if self.guard.check_links(path, &s).is_err() {
                    return;
                }
            }
            _ => return,
        }
        let mut reader = BufReader::with_capacity(64 * 1024, File::from(fd));
        match reader.fill_buf() {
            Ok(head) if head[..head.len().min(BINARY_PROBE)].contains(&0) => return,
            Ok(_) => {}
            Err(_) => return,
        }
        let pattern = pattern.clone();
        let mut line = Vec::new();
        let mut number = 0u64;
        let mut reader = reader.take(self.query.budget.max_file_bytes);
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(n) => self.bytes += n as u64,
            }
            number += 1;
            if pattern.is_match(trim_eol(&line)) {
                let m = SearchMatch {
                    path: path.to_path_buf(),
                    line: Some(number),
                    text: Some(excerpt(trim_eol(&line))),
                };
                if !self.push(m) {
                    return;
                }
            }
            if number.is_multiple_of(4096) && self.over_budget() {
                return;
            }
        }
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    if text.len() <= MAX_MATCH_TEXT {
        return text.into_owned();
    }
    let mut end = MAX_MATCH_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

pub(crate) fn type_of(mode: u32) -> Type {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => Type::File,
        SFlag::S_IFDIR => Type::Directory,
        SFlag::S_IFLNK => Type::Symlink,
        SFlag::S_IFIFO => Type::Fifo,
        SFlag::S_IFSOCK => Type::Socket,
        SFlag::S_IFCHR => Type::CharacterDevice,
        _ => Type::BlockDevice,
    }
}

/// A glob as the regular expression `globset` translates it to, built here under a size
/// limit: `globset`'s own matcher builds it without one and panics past the regex crate's
/// default limit (a deeply nested or 90,000-character glob did).
fn compile_glob(glob: &str) -> Result<Regex, String> {
    if glob.len() > MAX_GLOB_BYTES {
        return Err(format!(
            "`glob` is {} bytes; at most {MAX_GLOB_BYTES}",
            glob.len()
        ));
    }
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for c in glob.chars() {
        match c {
            '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_GLOB_NESTING {
        return Err(format!(
            "`glob` nests `{{...}}` {deepest} deep; at most {MAX_GLOB_NESTING}"
        ));
    }
    let parsed = GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|e| cut(format!("`{glob}` is not a glob: {e}")))?;
    RegexBuilder::new(parsed.regex())
        .size_limit(COMPILED_BYTES)
        .dfa_size_limit(8 * COMPILED_BYTES)
        .build()
        .map_err(|_| format!("`glob` expands to a matcher over {COMPILED_BYTES} bytes"))
}

/// A regular expression, bounded in length, nesting and compiled size.
fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "`pattern` is {} bytes; at most {MAX_PATTERN_BYTES}",
            pattern.len()
        ));
    }
    RegexBuilder::new(pattern)
        .size_limit(COMPILED_BYTES)
        .dfa_size_limit(8 * COMPILED_BYTES)
        .nest_limit(MAX_PATTERN_NESTING)
        .build()
        .map_err(|e| cut(format!("`pattern` is not a regular expression: {e}")))
}

/// `text` cut to [`MAX_WHY_BYTES`] on a char boundary.
fn cut(mut text: String) -> String {
    if text.len() > MAX_WHY_BYTES {
        let mut end = MAX_WHY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
