//! `files_read`: GET /files/content?path= answers the raw bytes, streamed from the file
//! (never held whole in memory); `Range: bytes=a-b` (also `a-` and `-n`) answers 206 with
//! `Content-Range`; a range past the end is 416 with `Content-Range: bytes */size`.

use super::{Route, blocking, required, service};
use crate::error::{ApiError, Code, Shape};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Query;
use crate::server::openapi::op::{Answer, Doc, JsonSchema, PATH_READ};
use crate::server::route::on;
use crate::services::files::{ByteRange, FileError, ReadFile};
use crate::zero_copy::{self, Channel, FileChannel};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, read),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "GET",
    target: "/files/content?path=/workspace/notes.txt",
    body: ExampleBody::Headers(&[("Range", "bytes=0-4")]),
    files: &[("notes.txt", "hello, files\n")],
    status: 206,
    headers: &[
        ("content-type", "application/octet-stream"),
        ("content-range", "bytes 0-4/13"),
    ],
    answer: "hello",
};

pub(super) const DOC: Doc = Doc::new(EndpointId::FilesRead, "Read a file")
    .describe("The raw bytes, streamed; `Range: bytes=a-b` (also `a-` and `-n`) answers 206 with `Content-Range`, a range past the end 416 with `Content-Range: bytes */size`.")
    .query(PathQuery::json_schema)
    .headers(&[("Range", "One byte range, `bytes=a-b`, `bytes=a-` or `bytes=-n`; anything else is ignored.")])
    .answers(&[
        Answer::bytes("The whole file.", "application/octet-stream")
            .headers(&[("Accept-Ranges", "`bytes`")]),
        Answer::bytes("The range asked for.", "application/octet-stream")
            .status(206)
            .headers(&[("Content-Range", "`bytes a-b/size`")]),
        Answer::empty(416, "").headers(&[("Content-Range", "`bytes */size`")]),
    ])
    .errors(&[
        PATH_READ,
        &[Code::NotFound, Code::NotADirectory, Code::IsADirectory, Code::NotAFile, Code::RangeNotSatisfiable],
    ]);

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PathQuery {
    /// Absolute, or relative to the server's working directory.
    #[schemars(required, with = "String", length(min = 1))]
    pub path: Option<String>,
}

async fn read(
    State(app): State<SharedState>,
    Query(query): Query<PathQuery>,
    headers: HeaderMap,
    Channel(channel): Channel,
) -> Result<Response, ApiError> {
    let path = required(query.path, "path")?;
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_range);
    let files = service(&app);
    match blocking(move || files.read(&path, range)).await {
        Ok(file) => Ok(file_response(file, None, channel)),
        Err(FileError::RangeNotSatisfiable { size }) => Ok(unsatisfiable(size)),
        Err(e) => Err(e.into()),
    }
}

/// The 416 answer, with `Content-Range: bytes */size` (RFC 9110 15.5.17). Rendered here
/// because an error body cannot carry a header; the file_ops rows answer the flat shape
/// (`router::shape_of`).
fn unsatisfiable(size: u64) -> Response {
    let mut response = ApiError::from(FileError::RangeNotSatisfiable { size }).render(Shape::Flat);
    if let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}")) {
        response.headers_mut().insert(header::CONTENT_RANGE, value);
    }
    response
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n`: one range. Anything else (other units, several
/// ranges, garbage) is ignored, as RFC 9110 lets a server do: the whole file is answered.
pub(super) fn parse_range(value: &str) -> Option<ByteRange> {
    let (unit, spec) = value.trim().split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") || spec.contains(',') {
        return None;
    }
    let (start, end) = spec.trim().split_once('-')?;
    let number = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (start.trim().is_empty(), end.trim().is_empty()) {
        (true, false) => Some(ByteRange::Suffix(number(end)?)),
        (false, true) => Some(ByteRange::From {
            start: number(start)?,
            end: None,
        }),
        (false, false) => Some(ByteRange::From {
            start: number(start)?,
            end: Some(number(end)?),
        }),
        (true, true) => None,
    }
}

/// The answer of a read or a download, `Content-Length` exact, 206 and `Content-Range` for a
/// range: the bytes sent by the connection from the file (`channel`), else streamed by a
/// blocking reader a few chunks ahead of the socket.
pub(super) fn file_response(
    file: ReadFile,
    disposition: Option<HeaderValue>,
    channel: Option<FileChannel>,
) -> Response {
    let status = if file.partial {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(file.len));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if file.partial
        && let Ok(value) = HeaderValue::from_str(&format!(
            "bytes {}-{}/{}",
            file.start,
            file.end(),
            file.size
        ))
    {
        headers.insert(header::CONTENT_RANGE, value);
    }
    if let Some(value) = disposition {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    (status, headers, zero_copy::file_body(channel, file)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_byte_range_is_honoured_and_anything_else_ignored() {
        let from = |start, end| Some(ByteRange::From { start, end });
        assert_eq!(parse_range("bytes=10-19"), from(10, Some(19)));
        assert_eq!(parse_range("bytes=90-"), from(90, None));
        assert_eq!(parse_range("bytes=-5"), Some(ByteRange::Suffix(5)));
        assert_eq!(parse_range(" Bytes = 1 - 2 "), from(1, Some(2)));
        assert_eq!(parse_range("bytes=5-2"), from(5, Some(2)));
        for ignored in [
            "bytes=0-1,4-5",
            "lines=1-2",
            "bytes=x-y",
            "bytes=-",
            "bytes=1",
            "bytes=+1-2",
            "",
        ] {
            assert_eq!(parse_range(ignored), None, "{ignored}");
        }
    }
}
