//! `files_download`: GET /files/download?path= answers the bytes like `files_read` (no
//! ranges), with `Content-Disposition: attachment; filename="..."` (quoted and escaped; a
//! name that is not plain ASCII adds RFC 6266 `filename*=UTF-8''...`).

use super::read::{PathQuery, file_response};
use super::{Route, blocking, required, service};
use crate::error::ApiError;
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Code, Doc, JsonSchema, PATH_READ};
use crate::server::route::on;
use crate::zero_copy::Channel;
use axum::extract::State;
use axum::response::Response;
use http::HeaderValue;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, download),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/download?path=/workspace/notes.txt",
    body: ExampleBody::None,
    files: &[("notes.txt", "hello, files\n")],
    status: 200,
    headers: &[
        ("content-type", "application/octet-stream"),
        ("content-disposition", "attachment; filename=\"notes.txt\""),
    ],
    answer: "hello, files\n",
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesDownload, "Download a file")
    .describe("The bytes like `files_read` (no ranges), as an attachment.")
    .query(PathQuery::json_schema)
    .answers(&[Answer::bytes("The file.", "application/octet-stream").headers(&[(
        "Content-Disposition",
        "`attachment; filename=\"...\"` (and RFC 6266 `filename*=UTF-8''...` for a name that is not plain ASCII)",
    )])])
    .errors(&[
        PATH_READ,
        &[Code::NotFound, Code::NotADirectory, Code::IsADirectory, Code::NotAFile],
    ]);

async fn download(
    State(app): State<SharedState>,
    Query(query): Query<PathQuery>,
    Channel(channel): Channel,
) -> Result<Response, ApiError> {
    let path = required(query.path, "path")?;
    let files = service(&app);
    let file = blocking(move || files.read(&path, None)).await?;
    let disposition = attachment(&file.name);
    Ok(file_response(file, Some(disposition), channel))
}

/// `attachment; filename="<name>"`: `"` and `\` escaped, anything but printable ASCII
/// replaced by `_`; when something was replaced, `filename*=UTF-8''<percent-encoded>` too
/// (RFC 6266 and RFC 8187), which clients prefer.
pub(super) fn attachment(name: &str) -> HeaderValue {
    let plain = |c: char| c.is_ascii() && !c.is_ascii_control();
    let mut ascii = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                ascii.push('\\');
                ascii.push(c);
            }
            c if plain(c) => ascii.push(c),
            _ => ascii.push('_'),
        }
    }
    let mut value = format!("attachment; filename=\"{ascii}\"");
    if !name.chars().all(plain) {
        value.push_str("; filename*=UTF-8''");
        for b in name.bytes() {
            // RFC 8187 attr-char: ALPHA / DIGIT / "!#$&+-.^_`|~"
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                value.push(b as char);
            } else {
                value.push_str(&format!("%{b:02X}"));
            }
        }
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests {
    use super::attachment;

    #[test]
    fn names_are_quoted_escaped_and_encoded() {
        assert_eq!(attachment("a.txt"), "attachment; filename=\"a.txt\"");
        assert_eq!(
            attachment("my \"q\" \\ file.txt"),
            "attachment; filename=\"my \\\"q\\\" \\\\ file.txt\""
        );
        assert_eq!(
            attachment("résumé 1.txt"),
            "attachment; filename=\"r_sum_ 1.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt"
        );
        assert_eq!(
            attachment("line\nbreak"),
            "attachment; filename=\"line_break\"; filename*=UTF-8''line%0Abreak"
        );
    }
}
