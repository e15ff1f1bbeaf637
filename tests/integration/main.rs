//! Integration tests of `svc` itself: one test binary (crates.io's layout).

mod child_secrets;
mod cli;
mod coverage;
mod docs;
mod e2b_docs;
mod engine_cli;
mod engine_client;
mod engine_coverage;
mod engine_docs;
mod engine_plugins;
mod layers;
mod no_orphans;
mod open_files;
mod openapi;
mod pipeline_order;
mod real;
