//! Small utilities of the ground floor: terminal-safe escaping, atomic file writes, JSON
//! helpers. They import nothing of the crate.

pub mod atomic;
pub mod escape;
pub mod json;

/// A boxed future that is `Send`, so that a scan can run on any thread of a multi-threaded
/// runtime (checks and judges return these).
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
