//! `svc sandbox cp SRC DST`: exactly one side is `ID:PATH` (a sandbox's file), the other a
//! local path or `-` (stdin or stdout). The bytes stream both ways (a large file is never
//! held whole), a download lands through a temp file and a rename (a failed one leaves no
//! half file), and a file over 8 MiB shows a progress bar when stderr is a terminal.
//!
//! A side is local when it is `-`, starts with `/`, `.` or `~`, or has no `:` before its
//! first `/` (`./a:b` names a local file `a:b`); otherwise it is `ID:PATH`.

use crate::client::{Client, ClientError, Progress, Upload, WriteOptions};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Files larger than this show a progress bar (on a terminal).
const PROGRESS_OVER: u64 = 8 * 1024 * 1024;

#[derive(Args)]
pub struct CpArgs {
    /// `ID:PATH`, a local file, or `-` for stdin.
    src: String,
    /// `ID:PATH`, a local file or directory, or `-` for stdout.
    dst: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Side {
    Stdio,
    Local(PathBuf),
    Sandbox { id: String, path: String },
}

fn side(text: &str) -> Side {
    if text == "-" {
        return Side::Stdio;
    }
    if !text.starts_with(['/', '.', '~'])
        && let Some((id, path)) = text.split_once(':')
        && !id.is_empty()
        && !id.contains('/')
    {
        return Side::Sandbox {
            id: id.to_owned(),
            path: path.to_owned(),
        };
    }
    Side::Local(PathBuf::from(text))
}

pub async fn run(client: &Client, args: CpArgs) -> ExitCode {
    let result = match (side(&args.src), side(&args.dst)) {
        (Side::Sandbox { id, path }, local @ (Side::Local(_) | Side::Stdio)) => {
            download(client, &id, &path, local).await
        }
        (local @ (Side::Local(_) | Side::Stdio), Side::Sandbox { id, path }) => {
            upload(client, local, &id, &path).await
        }
        (Side::Sandbox { .. }, Side::Sandbox { .. }) => {
            Err(usage("copy between two sandboxes through a local file"))
        }
        _ => Err(usage("one side must be a sandbox's file, `ID:PATH`")),
    };
    super::say::report(result)
}

fn usage(message: &str) -> ClientError {
    ClientError::Io {
        context: "svc sandbox cp".into(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, message.to_owned()),
    }
}

/// The last component of a path, for a copy into a directory.
fn file_name(path: &str) -> Option<&str> {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
}

fn progress_bar(size: Option<u64>) -> Option<(ProgressBar, Progress)> {
    let size = size.filter(|s| *s > PROGRESS_OVER)?;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(size);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
    {
        bar.set_style(style);
    }
    let ticker = bar.clone();
    let progress: Progress = Arc::new(move |n| ticker.inc(n));
    Some((bar, progress))
}

async fn upload(client: &Client, src: Side, id: &str, path: &str) -> Result<(), ClientError> {
    let (source, size, name) = match &src {
        Side::Local(local) => {
            let meta = std::fs::metadata(local)
                .map_err(|e| ClientError::io(format!("cannot read {}", local.display()), e))?;
            if meta.is_dir() {
                return Err(usage("cp copies files, not directories"));
            }
            let name = local.file_name().map(|n| n.to_string_lossy().into_owned());
            (Upload::File(local.clone()), Some(meta.len()), name)
        }
        _ => (Upload::reader(tokio::io::stdin()), None, None),
    };
    let target = upload_target(client, id, path, name.as_deref()).await?;
    let bar = progress_bar(size);
    let options = WriteOptions {
        overwrite: Some(true),
        parents: None,
    };
    let result = client
        .write_file(
            id,
            &target,
            &source,
            options,
            bar.as_ref().map(|(_, p)| p.clone()),
        )
        .await;
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    result.map(|_| ())
}

/// Where an upload goes: into the directory `path` names (with the source's name) when it
/// ends with `/` or is a directory in the sandbox, else `path` itself.
async fn upload_target(
    client: &Client,
    id: &str,
    path: &str,
    name: Option<&str>,
) -> Result<String, ClientError> {
    let into_dir = if path.is_empty() || path.ends_with('/') {
        true
    } else {
        match client.file_info(id, path).await {
            Ok(info) => info.is_dir(),
            // Not there (or not visible): the path names the new file.
            Err(ClientError::Api(_)) => false,
            Err(e) => return Err(e),
        }
    };
    if !into_dir {
        return Ok(path.to_owned());
    }
    let Some(name) = name else {
        return Err(usage("stdin has no file name: name the target file"));
    };
    let dir = if path.is_empty() {
        "."
    } else {
        path.trim_end_matches('/')
    };
    Ok(format!("{dir}/{name}"))
}

async fn download(client: &Client, id: &str, path: &str, dst: Side) -> Result<(), ClientError> {
    let mut file = client.read_file(id, path).await?;
    let bar = progress_bar(file.size);
    let progress = bar.as_ref().map(|(_, p)| p.clone());
    let result = match dst {
        Side::Local(local) => {
            let target = local_target(&local, path)?;
            let tmp = temp_beside(&target);
            let written = async {
                let mut out = tokio::fs::File::create(&tmp)
                    .await
                    .map_err(|e| ClientError::io(format!("cannot create {}", tmp.display()), e))?;
                let context = format!("cannot write {}", tmp.display());
                file.write_to(&mut out, &context, progress).await?;
                drop(out);
                tokio::fs::rename(&tmp, &target).await.map_err(|e| {
                    ClientError::io(format!("cannot rename to {}", target.display()), e)
                })
            }
            .await;
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        }
        _ => file
            .write_to(&mut tokio::io::stdout(), "cannot write to stdout", progress)
            .await
            .map(|_| ()),
    };
    if let Some((bar, _)) = bar {
        bar.finish_and_clear();
    }
    result
}

/// The local file a download writes: inside `local` when it is a directory (or ends with
/// `/`), named as in the sandbox.
fn local_target(local: &Path, remote: &str) -> Result<PathBuf, ClientError> {
    let is_dir = local.is_dir() || local.as_os_str().to_string_lossy().ends_with('/');
    if !is_dir {
        return Ok(local.to_path_buf());
    }
    let name = file_name(remote).ok_or_else(|| usage("the sandbox path has no file name"))?;
    Ok(local.join(name))
}

/// A temp name in the target's directory, so the final rename stays on one filesystem.
fn temp_beside(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "download".into());
    target.with_file_name(format!(".{name}.svc-{}.part", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides() {
        assert_eq!(side("-"), Side::Stdio);
        assert_eq!(
            side("sb_1:/tmp/a:b"),
            Side::Sandbox {
                id: "sb_1".into(),
                path: "/tmp/a:b".into()
            }
        );
        assert_eq!(side("./a:b"), Side::Local("./a:b".into()));
        assert_eq!(side("/x/y:z"), Side::Local("/x/y:z".into()));
        assert_eq!(side("dir/a:b"), Side::Local("dir/a:b".into()));
        assert_eq!(side(":x"), Side::Local(":x".into()));
        assert_eq!(side("plain.txt"), Side::Local("plain.txt".into()));
        assert_eq!(
            side("sb:"),
            Side::Sandbox {
                id: "sb".into(),
                path: String::new()
            }
        );
    }

    #[test]
    fn names_and_targets() {
        assert_eq!(file_name("/a/b.txt"), Some("b.txt"));
        assert_eq!(file_name("/a/dir/"), Some("dir"));
        assert_eq!(file_name("/"), None);
        let dir = std::env::temp_dir();
        assert_eq!(local_target(&dir, "/x/f.bin").unwrap(), dir.join("f.bin"));
        assert_eq!(
            temp_beside(Path::new("/a/f.bin")).parent(),
            Some(Path::new("/a"))
        );
    }
}
