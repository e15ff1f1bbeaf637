//! What an operation declares about itself for the OpenAPI document, beside its handler
//! (crates.io style: the handler owns its metadata, as it owns its example). A leaf: the
//! groups import it, and `openapi/mod.rs` gathers the groups' declarations, so neither
//! imports the other through it.
//!
//! The row (method, path, group, scopes, transport) comes from the endpoint table; a
//! [`Doc`] adds only what the table cannot know: the request's query, body and headers,
//! the success answers, and the route's own error codes (the pipeline's are added for
//! every route by the generator).

pub use crate::error::Code;
use crate::server::endpoints::EndpointId;
pub use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A schema, built in the document's generator so named types land in its components.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// One operation's documentation.
#[derive(Clone, Copy)]
pub struct Doc {
    pub id: EndpointId,
    pub summary: &'static str,
    pub description: &'static str,
    /// An object schema whose properties are the path parameters; a parameter it does not
    /// name is a string.
    pub path: Option<SchemaFn>,
    /// An object schema whose properties are the query parameters.
    pub query: Option<SchemaFn>,
    /// Request headers the route reads: (name, description).
    pub headers: &'static [(&'static str, &'static str)],
    pub body: Body,
    pub answers: &'static [Answer],
    /// The route's own error codes, in sets (the shared sets below, and its own).
    pub errors: &'static [&'static [Code]],
}

impl Doc {
    pub const fn new(id: EndpointId, summary: &'static str) -> Doc {
        Doc {
            id,
            summary,
            description: "",
            path: None,
            query: None,
            headers: &[],
            body: Body::None,
            answers: &[],
            errors: &[],
        }
    }

    pub const fn describe(self, description: &'static str) -> Doc {
        Doc {
            description,
            ..self
        }
    }

    pub const fn path(self, schema: SchemaFn) -> Doc {
        Doc {
            path: Some(schema),
            ..self
        }
    }

    pub const fn query(self, schema: SchemaFn) -> Doc {
        Doc {
            query: Some(schema),
            ..self
        }
    }

    pub const fn headers(self, headers: &'static [(&'static str, &'static str)]) -> Doc {
        Doc { headers, ..self }
    }

    /// A JSON body (an empty body reads as `{}`, so it is never required on the wire).
    pub const fn json(self, schema: SchemaFn) -> Doc {
        Doc {
            body: Body::Json(schema),
            ..self
        }
    }

    pub const fn body(self, body: Body) -> Doc {
        Doc { body, ..self }
    }

    pub const fn answers(self, answers: &'static [Answer]) -> Doc {
        Doc { answers, ..self }
    }

    pub const fn errors(self, errors: &'static [&'static [Code]]) -> Doc {
        Doc { errors, ..self }
    }
}

/// The request body.
#[derive(Clone, Copy)]
pub enum Body {
    None,
    Json(SchemaFn),
    /// The raw bytes, any media type.
    Bytes(&'static str),
    /// `multipart/form-data`, its parts described by an object schema.
    Multipart(SchemaFn),
}

/// A success answer (errors are rendered from the error table).
#[derive(Clone, Copy)]
pub struct Answer {
    pub status: u16,
    pub description: &'static str,
    pub content: Content,
    /// Answer headers: (name, description).
    pub headers: &'static [(&'static str, &'static str)],
}

impl Answer {
    /// 200 with a JSON body.
    pub const fn json(description: &'static str, schema: SchemaFn) -> Answer {
        Answer {
            status: 200,
            description,
            content: Content::Json(schema),
            headers: &[],
        }
    }

    pub const fn status(self, status: u16) -> Answer {
        Answer { status, ..self }
    }

    pub const fn headers(self, headers: &'static [(&'static str, &'static str)]) -> Answer {
        Answer { headers, ..self }
    }

    /// `text/event-stream` with these events.
    pub const fn events(description: &'static str, events: &'static [Event]) -> Answer {
        Answer {
            status: 200,
            description,
            content: Content::Events(events),
            headers: &[],
        }
    }

    /// Raw bytes of a media type.
    pub const fn bytes(description: &'static str, media: &'static str) -> Answer {
        Answer {
            status: 200,
            description,
            content: Content::Bytes(media),
            headers: &[],
        }
    }

    /// `101 Switching Protocols`: a WebSocket, its frames described in words.
    pub const fn websocket(frames: &'static str) -> Answer {
        Answer {
            status: 101,
            description: frames,
            content: Content::Empty,
            headers: &[
                ("Upgrade", "`websocket`"),
                ("Connection", "`upgrade`"),
                ("Sec-WebSocket-Accept", "The handshake's answer (RFC 6455)"),
            ],
        }
    }

    /// No body.
    pub const fn empty(status: u16, description: &'static str) -> Answer {
        Answer {
            status,
            description,
            content: Content::Empty,
            headers: &[],
        }
    }
}

#[derive(Clone, Copy)]
pub enum Content {
    Empty,
    Json(SchemaFn),
    Bytes(&'static str),
    Events(&'static [Event]),
}

/// One named event of a server-sent event stream and its `data` (JSON).
#[derive(Clone, Copy)]
pub struct Event {
    pub name: &'static str,
    pub description: &'static str,
    pub data: SchemaFn,
}

impl Event {
    pub const fn new(name: &'static str, description: &'static str, data: SchemaFn) -> Event {
        Event {
            name,
            description,
            data,
        }
    }
}

/// A named schema in the document's components, written as JSON beside the code that
/// renders that JSON: `component!(pub(crate) FileEntry, { ... })` makes a type whose
/// `subschema_for` is a `$ref` to `#/components/schemas/FileEntry`.
macro_rules! component {
    ($vis:vis $name:ident, $schema:tt) => {
        $vis struct $name;

        impl $crate::server::openapi::op::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(
                _: &mut $crate::server::openapi::op::SchemaGenerator,
            ) -> $crate::server::openapi::op::Schema {
                $crate::server::openapi::op::json_schema!($schema)
            }
        }
    };
}
pub(crate) use component;

/// The path guard of a route that reads (`paths:` allow, deny, links, a bad path).
pub const PATH_READ: &[Code] = &[
    Code::PathNotAllowed,
    Code::PathDenied,
    Code::SymlinkDenied,
    Code::InvalidPath,
];

/// The path guard of a route that writes: a read's codes and `read_only`.
pub const PATH_WRITE: &[Code] = &[
    Code::PathNotAllowed,
    Code::PathDenied,
    Code::SymlinkDenied,
    Code::InvalidPath,
    Code::ReadOnly,
];

/// What `server/launch.rs` answers for a route that starts a child: the working directory
/// under the path guard, the environment under the variable rules, the program under the
/// command and process guards, and a server that is stopping.
pub const LAUNCH: &[Code] = &[
    Code::PathNotAllowed,
    Code::PathDenied,
    Code::SymlinkDenied,
    Code::InvalidPath,
    Code::NotFound,
    Code::NotADirectory,
    Code::EnvVarDenied,
    Code::EnvVarNotAllowed,
    Code::EnvInvalid,
    Code::CommandInvalid,
    Code::CommandNotAllowed,
    Code::ScopeRequired,
    Code::ProcessInvalid,
    Code::ProcessDenied,
    Code::ShuttingDown,
];
