//! The engine's handlers, one file per resource. Each file declares, beside its handlers,
//! an [`Op`] per route it serves: the row, how its handler binds, and what its request and
//! answer look like. The router binds every row through [`op`] (a test checks none is
//! missing) and the OpenAPI document (`engine::openapi`) reads the same declarations.

mod code;
mod commands;
mod engine;
mod files;
mod sandboxes;
mod support;
mod terminal;

pub(super) use sandboxes::check_create;

use super::routes::RouteId;
use super::state::Shared;
use crate::error::engine::Code;
use axum::routing::{MethodFilter, MethodRouter};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;

/// The handler of a row, bound to the method the row gives.
pub type Bind = fn(MethodFilter) -> MethodRouter<Shared>;

/// The JSON Schema of a type, added to the document's components.
pub type Schema = fn(&mut SchemaGenerator) -> Value;

/// The events of a streamed route: name, what it means, the schema of its data.
pub type Events = fn(&mut SchemaGenerator) -> Vec<(&'static str, &'static str, Value)>;

/// `T`'s schema as a `$ref` to the components.
pub fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    serde_json::to_value(generator.subschema_for::<T>()).unwrap_or(Value::Null)
}

/// A route's request body.
#[derive(Clone, Copy)]
pub enum Request {
    None,
    Json(Schema),
    /// Raw bytes (`application/octet-stream`), required.
    Bytes,
}

/// What a handler file says of one route.
pub struct Op {
    pub id: RouteId,
    pub bind: Bind,
    pub request: Request,
    /// The query's type (its fields are the parameters).
    pub query: Option<Schema>,
    /// The success answer of a JSON route.
    pub answer: Option<Schema>,
    /// The events of a streamed route.
    pub events: Option<Events>,
    /// Answers 201 (it creates), not 200.
    pub creates: bool,
    /// Error codes of this route beyond those of its kind (the door's, the feature's, the
    /// sandbox's).
    pub codes: &'static [Code],
}

impl Op {
    /// A route with no body, query or events: what most rows start from.
    pub const fn new(id: RouteId, bind: Bind) -> Op {
        Op {
            id,
            bind,
            request: Request::None,
            query: None,
            answer: None,
            events: None,
            creates: false,
            codes: &[],
        }
    }
}

/// Every handler file's declarations.
const FILES: [&[Op]; 6] = [
    engine::OPS,
    sandboxes::OPS,
    commands::OPS,
    files::OPS,
    code::OPS,
    terminal::OPS,
];

/// The declaration of a row.
pub fn op(id: RouteId) -> Option<&'static Op> {
    FILES
        .iter()
        .flat_map(|ops| ops.iter())
        .find(|op| op.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::routes::ROUTES;

    #[test]
    fn every_row_is_declared_once() {
        for route in ROUTES {
            let declared = FILES
                .iter()
                .flat_map(|ops| ops.iter())
                .filter(|op| op.id == route.id)
                .count();
            assert_eq!(declared, 1, "{}", route.id);
        }
        let all: usize = FILES.iter().map(|ops| ops.len()).sum();
        assert_eq!(all, ROUTES.len());
    }
}
