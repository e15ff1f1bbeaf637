//! Integration tests for the `rt-one` and `rt-two` binaries.

mod mcp_server;
mod one;
mod support;
mod two;
