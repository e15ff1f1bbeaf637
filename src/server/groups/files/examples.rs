//! What the files examples need of their own (the runner is `server::example_run`): one
//! server for all; each example's files laid out in a directory of its own standing for
//! `/workspace`; the umask the docs assume, so files a call creates get the permissions
//! shown. `modified_at` and the size of directories vary by machine and are left out.

use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::example::EXAMPLE_ROOT;
use crate::server::example_run::{Call, Harness};
use crate::server::route::Route;
use nix::sys::stat::{Mode, umask};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

pub(crate) struct Examples {
    app: axum::Router,
    temp: tempfile::TempDir,
    /// The umask before the example's call, given back after it.
    umask: Option<Mode>,
}

fn lay_out(root: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        let mut dir = path.parent().unwrap().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        while dir.starts_with(root) {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            dir.pop();
        }
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

impl Harness for Examples {
    async fn start() -> Result<Self, String> {
        let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
        Ok(Self {
            app: crate::server::router::app(AppState::with_settings(settings)),
            temp: tempfile::tempdir().unwrap(),
            umask: None,
        })
    }

    async fn prepare(&mut self, route: &Route) -> Call {
        let ws = self.temp.path().join(format!("{:?}", route.id()));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o755)).unwrap();
        lay_out(&ws, route.example.files);
        self.umask = Some(umask(Mode::from_bits_truncate(0o022)));
        Call {
            app: self.app.clone(),
            swaps: vec![(EXAMPLE_ROOT, ws.display().to_string())],
        }
    }

    /// `modified_at` dropped, and a directory's `size` (filesystems differ).
    fn keep(&self, object: &Map<String, Value>, key: &str) -> bool {
        let is_dir = object.get("type") == Some(&Value::from("dir"));
        key != "modified_at" && !(is_dir && key == "size")
    }

    async fn finish(&mut self) {
        if let Some(old) = self.umask.take() {
            umask(old);
        }
    }
}
