//! The layer table of `docs/architecture.md`, enforced: every path a file of `src/` names
//! (`crate::...` anywhere outside comments, `super::...` in its top-level `use` lines,
//! resolved against the file's own module) is checked against what its layer may import.
//! It held only because people were careful; now a wrong import fails here, naming the
//! file, the line and the rule.

use std::path::{Path, PathBuf};

/// A module path of the crate, `["engine", "local", "files"]`.
type Module = Vec<String>;

struct Import {
    file: PathBuf,
    line: usize,
    /// Whom the file belongs to.
    from: Module,
    /// What it names (the crate path, without `crate`).
    to: Module,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file of `src/` is: `src/engine/local/mod.rs` is `engine::local`.
fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The path segments after `start` in `text`, up to the first that is not a name.
fn segments(text: &str) -> Module {
    text.split("::")
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|s| !s.is_empty())
        .collect()
}

fn imports(src: &Path) -> Vec<Import> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let from = module_of(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        // A file's parent module: `super` of `engine/local/files.rs` is `engine::local`,
        // of `engine/local/mod.rs` `engine`.
        let is_mod = matches!(
            file.file_stem().and_then(|s| s.to_str()),
            Some("mod" | "lib" | "main")
        );
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let mut push = |to: Module| {
                found.push(Import {
                    file: file.clone(),
                    line: number + 1,
                    from: from.clone(),
                    to,
                })
            };
            for (at, _) in code.match_indices("crate::") {
                let preceded = code[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
                if !preceded {
                    push(segments(&code[at + "crate::".len()..]));
                }
            }
            // Only top-level `use` lines: inside an inline `mod tests` `super` is the file.
            if let Some(rest) = code.strip_prefix("use super::") {
                let mut base = from.clone();
                if !is_mod {
                    base.pop();
                }
                let mut rest = rest;
                while let Some(more) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = more;
                }
                // `use super::{a, b}` names the parent itself.
                base.extend(segments(rest));
                push(base);
            }
        }
    }
    found
}

/// Why `import` breaks the table, or `None`.
fn broken(import: &Import) -> Option<&'static str> {
    let from = import.from.iter().map(String::as_str).collect::<Vec<_>>();
    let to = import.to.iter().map(String::as_str).collect::<Vec<_>>();
    let layer = from.first().copied().unwrap_or_default();
    let target = to.first().copied().unwrap_or_default();
    if layer == target && layer != "server" {
        return None;
    }
    match layer {
        "services" if target != "services" => Some(
            "services import only other services (no HTTP, no error table, no server or engine)",
        ),
        "error" if target != "error" => Some("error imports nothing else of the crate"),
        "connections" if target != "connections" => {
            Some("connections imports nothing else of the crate")
        }
        "wire" if !matches!(target, "wire" | "services") => {
            Some("wire is a leaf: it imports only services")
        }
        "client"
            if !matches!(
                target,
                "client" | "wire" | "error" | "services" | "zero_copy"
            ) =>
        {
            Some("client imports only wire, error, services and zero_copy")
        }
        "engine" if matches!(target, "server" | "client" | "cli") => {
            Some("engine never imports server, client or cli")
        }
        "server" if matches!(target, "engine" | "client" | "cli") => {
            Some("server never imports engine, client or cli")
        }
        "server" if from.get(1) == Some(&"groups") => {
            let group = from.get(2).copied();
            let other = (to.first() == Some(&"server") && to.get(1) == Some(&"groups"))
                .then(|| to.get(2).copied())
                .flatten();
            match (group, other) {
                (Some(a), Some(b)) if a != b => Some("a group never imports another group"),
                _ => None,
            }
        }
        "server" if from.get(1) == Some(&"agents") => {
            let part = to.get(1).copied();
            (to.first() == Some(&"server")
                && matches!(part, Some("groups" | "router" | "pipeline")))
            .then_some("the agents domain never imports the groups, the router or the pipeline")
        }
        _ => None,
    }
}

/// The crates a layer must not use at all: services serve no HTTP (the fetch service is an
/// HTTP client: reqwest is its business), the wire is types alone.
fn foreign_crates(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (layer, crates) in [
        ("services", &["axum", "tower_http"][..]),
        ("wire", &["axum", "hyper", "tower_http", "reqwest"][..]),
    ] {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default().trim_start();
                for name in crates {
                    if code.starts_with(&format!("use {name}"))
                        || code.contains(&format!(" {name}::"))
                        || code.contains(&format!("({name}::"))
                    {
                        found.push(format!(
                            "{}:{}: `{name}`: {layer} never uses it",
                            file.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_import_follows_the_layer_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let all = imports(&src);
    // The scan itself must see imports, or this test could not fail.
    assert!(all.len() > 500, "only {} imports found", all.len());
    assert!(
        all.iter()
            .any(|i| i.from == ["client"] && i.to.first().is_some_and(|t| t == "wire"))
    );
    let mut broken_lines: Vec<String> = all
        .iter()
        .filter_map(|i| {
            broken(i).map(|why| {
                format!(
                    "{}:{}: {} -> {}: {why}",
                    i.file.display(),
                    i.line,
                    i.from.join("::"),
                    i.to.join("::")
                )
            })
        })
        .collect();
    broken_lines.extend(foreign_crates(&src));
    assert!(
        broken_lines.is_empty(),
        "imports against docs/architecture.md:\n{}",
        broken_lines.join("\n")
    );
}

#[test]
fn the_rules_catch_what_they_name() {
    let import = |from: &[&str], to: &[&str]| Import {
        file: PathBuf::new(),
        line: 0,
        from: from.iter().map(|s| s.to_string()).collect(),
        to: to.iter().map(|s| s.to_string()).collect(),
    };
    assert!(broken(&import(&["services", "files"], &["engine", "wire"])).is_some());
    assert!(broken(&import(&["services", "files"], &["error"])).is_some());
    assert!(broken(&import(&["engine", "local"], &["server", "state"])).is_some());
    assert!(broken(&import(&["client", "files"], &["engine", "provider"])).is_some());
    assert!(broken(&import(&["client", "files"], &["wire", "EntryInfo"])).is_none());
    assert!(broken(&import(&["wire", "files"], &["engine"])).is_some());
    assert!(
        broken(&import(
            &["server", "groups", "files", "read"],
            &["server", "groups", "process", "render"]
        ))
        .is_some()
    );
    assert!(
        broken(&import(
            &["server", "groups", "files", "read"],
            &["server", "groups", "files", "entry"]
        ))
        .is_none()
    );
    assert!(
        broken(&import(
            &["server", "agents", "turn"],
            &["server", "router"]
        ))
        .is_some()
    );
    assert!(broken(&import(&["server", "router"], &["engine", "app"])).is_some());
}
