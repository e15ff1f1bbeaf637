use std::path::Path;

#[test]
fn endpoints_md_is_generated_from_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/endpoints.md");
    let expected = svc::server::docs::endpoints_markdown();
    if std::env::var_os("SVC_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == expected,
        "docs/endpoints.md is out of date: run `just docs` (or SVC_UPDATE_DOCS=1 cargo test)"
    );
}

#[test]
fn errors_md_is_generated_from_the_tables() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md");
    let expected = svc::server::error_docs::errors_markdown();
    if std::env::var_os("SVC_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == expected,
        "docs/errors.md is out of date: run `just docs` (or SVC_UPDATE_DOCS=1 cargo test)"
    );
}
