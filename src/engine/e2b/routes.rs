//! The front's route table: every call it serves, one row each, declared beside its handler
//! (each module's `OPS`, gathered by [`super::ops`]) with its id, door, method, path and a
//! line saying what it is. The
//! three doors' routers are built from these rows and nothing else, the route list of
//! `docs/e2b.md` is generated from them (`just docs`), and the coverage gate asks a
//! conformance case of each id (`tests/integration/engine_coverage.rs`).

use super::Front;
use axum::Router;
use axum::routing::MethodRouter;
use std::sync::Arc;

/// Which of the front's three protocols a route belongs to; a request is sent to one door
/// by its headers (`E2b-Sandbox-Id`, `E2b-Sandbox-Port`) before any path is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The control plane (`E2B_API_URL`, `X-API-KEY`).
    Control,
    /// A sandbox's envd (port 49983, `X-Access-Token`).
    Envd,
    /// A sandbox's code interpreter (port 49999).
    Code,
}

impl Door {
    pub fn name(self) -> &'static str {
        match self {
            Door::Control => "control plane",
            Door::Envd => "envd (port 49983)",
            Door::Code => "code interpreter (port 49999)",
        }
    }
}

/// Where a route answers: a path, or every path of its door no other row has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum At {
    Path(&'static str),
    Else,
}

/// One row: a route and its handler.
pub struct Op {
    pub id: &'static str,
    pub door: Door,
    /// `POST`, `GET`, `DELETE`, or `any` for a row answering every method.
    pub method: &'static str,
    pub at: At,
    pub summary: &'static str,
    pub bind: fn() -> MethodRouter<Arc<Front>>,
}

/// The router of `door`'s rows among `ops` (their method routers merged where they share
/// a path).
pub fn router(ops: impl Iterator<Item = &'static Op>, door: Door) -> Router<Arc<Front>> {
    ops.filter(|op| op.door == door)
        .fold(Router::new(), |router, op| match op.at {
            At::Path(path) => router.route(path, (op.bind)()),
            At::Else => router.fallback((op.bind)()),
        })
}

/// The route list of `docs/e2b.md` from `ops`: a table per door.
pub fn markdown(ops: impl Iterator<Item = &'static Op> + Clone) -> String {
    let mut out = String::new();
    for door in [Door::Control, Door::Envd, Door::Code] {
        out.push_str(&format!(
            "\n### {}\n\n| id | method | path | what |\n|---|---|---|---|\n",
            door.name()
        ));
        for op in ops.clone().filter(|op| op.door == door) {
            let path = match op.at {
                At::Path(path) => format!("`{path}`"),
                At::Else => "any other".to_owned(),
            };
            out.push_str(&format!(
                "| `{}` | {} | {path} | {} |\n",
                op.id, op.method, op.summary
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    #[test]
    fn ids_and_routes_are_each_in_one_row() {
        let mut ids = BTreeSet::new();
        let mut routes = BTreeSet::new();
        for op in super::super::ops() {
            assert!(ids.insert(op.id), "id {} twice", op.id);
            assert!(
                op.id.starts_with("e2b_"),
                "{}: ids name their contract",
                op.id
            );
            assert!(
                routes.insert((op.door as u8, op.method, op.at)),
                "{} {:?} twice",
                op.method,
                op.at
            );
        }
    }
}
