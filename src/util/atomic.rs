//! Atomic file writes: state files and baselines are replaced whole or not at all.

use std::io::Write as _;
use std::path::Path;

/// Who may read a file [`write_atomically`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Only the owner (0600): proofs and tokens.
    Private,
    /// A file to commit and share (a baseline): the replaced file's permissions, 0644 when new.
    Shared,
}

/// Writes `text` to `path` atomically: a uniquely named temporary file in the same folder,
/// synced, then renamed over `path` (two writers never share a temporary file; a reader sees
/// the old file or the new one, never half of one, and no temporary file is left behind).
pub fn write_atomically(path: &Path, text: &str, visibility: Visibility) -> std::io::Result<()> {
    write_file(path, text, visibility, true)
}

/// [`write_atomically`], but only when nothing is at `path` yet: a file that appeared meanwhile
/// (another scan's first pin) is left alone and the write fails with `AlreadyExists`.
pub fn write_new_atomically(
    path: &Path,
    text: &str,
    visibility: Visibility,
) -> std::io::Result<()> {
    write_file(path, text, visibility, false)
}

fn write_file(
    path: &Path,
    text: &str,
    visibility: Visibility,
    replace: bool,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".mcpprobe-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    if visibility == Visibility::Shared {
        let permissions = match std::fs::metadata(path) {
            Ok(m) => Some(m.permissions()),
            Err(_) => shared_permissions(tmp.as_file()),
        };
        if let Some(p) = permissions {
            tmp.as_file().set_permissions(p)?;
        }
    }
    if replace {
        tmp.persist(path).map_err(|e| e.error)?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| e.error)?;
    }
    Ok(())
}

#[cfg(unix)]
fn shared_permissions(file: &std::fs::File) -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut p = file.metadata().ok()?.permissions();
    p.set_mode(0o644);
    Some(p)
}

#[cfg(not(unix))]
fn shared_permissions(_file: &std::fs::File) -> Option<std::fs::Permissions> {
    None
}
