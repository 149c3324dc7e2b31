//! One integration test binary (ripgrep/zizmor style): `cargo test` builds it once.

mod catalogue;
mod cli;
mod report;
mod support;
