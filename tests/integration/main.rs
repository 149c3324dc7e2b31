//! One integration test binary (ripgrep/zizmor style): `cargo test` builds it once.

mod action;
mod active;
mod badge;
mod baseline;
mod browser;
mod catalogue;
mod cli;
mod config;
mod corpus;
mod daemon;
mod engine;
mod gate;
mod hostile;
mod judge;
mod linear;
mod network;
mod offline;
mod passive;
mod peers;
mod properties;
mod real;
mod report;
mod rules;
mod secrets;
mod stdio;
mod support;
