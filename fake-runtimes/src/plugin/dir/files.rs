//! A sandbox's files. A read answers `{size}` then sends the bytes as chunks; a write
//! receives chunks into a temporary file beside the target, renamed into place at the last
//! chunk (so a reader never sees half a file).

use super::paths::{entry, follow, io_fault, missing, resolve, shown};
use crate::plugin::{Answer, CHUNK_BYTES, Fault, Out};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

fn text<'a>(params: &'a Value, name: &str) -> Result<&'a str, Fault> {
    params[name]
        .as_str()
        .ok_or_else(|| Fault::new("E4001", format!("`{name}` is required")))
}

fn flag(params: &Value, name: &str, default: bool) -> bool {
    params[name].as_bool().unwrap_or(default)
}

/// Answers `{size}` and sends the file's bytes; stops early when the call is cancelled.
pub fn read(home: &Path, params: &Value, out: &Out, id: u64, cancel: &AtomicBool) {
    let opened = (|| -> Result<(std::fs::File, u64), Fault> {
        let path = resolve(home, text(params, "path")?)?;
        follow(home, &path)?;
        let meta = std::fs::metadata(&path).map_err(|e| io_fault(&path, &e))?;
        if meta.is_dir() {
            return Err(Fault::new(
                "E4006",
                format!("`{}` is a directory", shown(&path)),
            ));
        }
        let file = std::fs::File::open(&path).map_err(|e| io_fault(&path, &e))?;
        Ok((file, meta.len()))
    })();
    let (mut file, size) = match opened {
        Ok(opened) => opened,
        Err(fault) => return out.respond(id, Err(fault)),
    };
    out.respond(id, Ok(json!({ "size": size })));
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut left = size;
    while left > 0 && !cancel.load(Ordering::Relaxed) {
        let want = buf.len().min(left as usize);
        match file.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => {
                out.chunk(id, &buf[..n]);
                left -= n as u64;
            }
            Err(e) => {
                let fault = Fault::new("E9001", format!("the read failed: {e}"));
                return out.send(
                    &json!({"type": "chunk", "id": id, "last": true, "error": fault.to_json()}),
                );
            }
        }
    }
    out.last_chunk(id);
}

/// A write in progress: the chunks go to `temp`, renamed to `path` at the end.
pub struct Upload {
    path: PathBuf,
    temp: PathBuf,
    file: std::fs::File,
    overwrite: bool,
}

/// Checks a write and opens its temporary file (`overwrite` and `parents` default true).
pub fn start_write(home: &Path, params: &Value, id: u64) -> Result<Upload, Fault> {
    let path = resolve(home, text(params, "path")?)?;
    follow(home, &path)?;
    // This example keeps plain files only: metadata is refused before anything is written,
    // never dropped.
    if params["metadata"]
        .as_object()
        .is_some_and(|m| !m.is_empty())
    {
        return Err(
            Fault::new("E8004", "the `dir` plugin keeps no file metadata")
                .suggest("write the file without metadata"),
        );
    }
    let overwrite = flag(params, "overwrite", true);
    if let Ok(meta) = std::fs::metadata(&path) {
        if meta.is_dir() {
            return Err(Fault::new(
                "E4006",
                format!("`{}` is a directory", shown(&path)),
            ));
        }
        if !overwrite {
            return Err(exists(&path));
        }
    }
    let parent = path.parent().unwrap_or(home);
    if !parent.exists() {
        if !flag(params, "parents", true) {
            return Err(missing(parent));
        }
        std::fs::create_dir_all(parent).map_err(|e| io_fault(parent, &e))?;
    }
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let temp = parent.join(format!(".{name}.upload-{id}"));
    let file = std::fs::File::create(&temp).map_err(|e| io_fault(&temp, &e))?;
    Ok(Upload {
        path,
        temp,
        file,
        overwrite,
    })
}

fn exists(path: &Path) -> Fault {
    Fault::new("E4004", format!("`{}` already exists", shown(path)))
        .suggest("pass `overwrite=true`, or choose another path")
}

impl Upload {
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        self.file
            .write_all(bytes)
            .map_err(|e| io_fault(&self.temp, &e))
    }

    /// Puts the file in place; its entry info.
    pub fn finish(self) -> Answer {
        if !self.overwrite && self.path.exists() {
            return Err(exists(&self.path));
        }
        std::fs::rename(&self.temp, &self.path).map_err(|e| io_fault(&self.path, &e))?;
        entry(&self.path)
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        // Gone once renamed; left over when the write failed or was cancelled.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// `files_list`: entries down to `depth`, each folder's by name.
pub fn list(home: &Path, params: &Value) -> Answer {
    let path = resolve(home, text(params, "path")?)?;
    let meta = std::fs::metadata(&path).map_err(|e| io_fault(&path, &e))?;
    if !meta.is_dir() {
        return Err(Fault::new(
            "E4006",
            format!("`{}` is not a directory", shown(&path)),
        ));
    }
    let depth = params["depth"].as_u64().unwrap_or(1).clamp(1, 10);
    let mut entries = Vec::new();
    walk(&path, depth, &mut entries)?;
    Ok(json!({ "entries": entries }))
}

fn walk(dir: &Path, depth: u64, entries: &mut Vec<Value>) -> Result<(), Fault> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io_fault(dir, &e))?
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        entries.push(entry(&path)?);
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if depth > 1 && is_dir {
            walk(&path, depth - 1, entries)?;
        }
    }
    Ok(())
}

pub fn info(home: &Path, params: &Value) -> Answer {
    entry(&resolve(home, text(params, "path")?)?)
}

/// `a.txt/` of a file is not there (`E4006` from [`resolve`]), as the kernel answers.
pub fn exists_answer(home: &Path, params: &Value) -> Answer {
    let path = match resolve(home, text(params, "path")?) {
        Err(fault) if fault.code == "E4006" => return Ok(json!({ "exists": false })),
        resolved => resolved?,
    };
    Ok(json!({ "exists": std::fs::symlink_metadata(path).is_ok() }))
}

/// `parents` defaults to true; an existing directory is fine then (as `mkdir -p`).
pub fn mkdir(home: &Path, params: &Value) -> Answer {
    let path = resolve(home, text(params, "path")?)?;
    let parents = flag(params, "parents", true);
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if parents && meta.is_dir() => return entry(&path),
        Ok(_) => return Err(exists(&path)),
        Err(_) => {}
    }
    let made = if parents {
        std::fs::create_dir_all(&path)
    } else {
        std::fs::create_dir(&path)
    };
    made.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(path.parent().unwrap_or(home)),
        _ => io_fault(&path, &e),
    })?;
    entry(&path)
}

/// `overwrite` defaults to false.
pub fn rename(home: &Path, params: &Value) -> Answer {
    let from = resolve(home, text(params, "from")?)?;
    let to = resolve(home, text(params, "to")?)?;
    if std::fs::symlink_metadata(&from).is_err() {
        return Err(missing(&from));
    }
    if std::fs::symlink_metadata(&to).is_ok() && !flag(params, "overwrite", false) {
        return Err(exists(&to));
    }
    std::fs::rename(&from, &to).map_err(|e| io_fault(&to, &e))?;
    entry(&to)
}

pub fn remove(home: &Path, params: &Value) -> Answer {
    let path = resolve(home, text(params, "path")?)?;
    if path == home {
        return Err(Fault::new(
            "E4001",
            "the sandbox's own folder cannot be removed",
        ));
    }
    let meta = std::fs::symlink_metadata(&path).map_err(|e| io_fault(&path, &e))?;
    let removed = match (meta.is_dir(), flag(params, "recursive", false)) {
        (true, true) => std::fs::remove_dir_all(&path),
        (true, false) => std::fs::remove_dir(&path),
        (false, _) => std::fs::remove_file(&path),
    };
    removed.map_err(|e| io_fault(&path, &e))?;
    Ok(json!({ "path": shown(&path), "deleted": true }))
}
