//! The state folder: pending verification tokens, ownership proofs, authorisation records.
//!
//! `$MCPPROBE_STATE_DIR`, else `$XDG_STATE_HOME/mcpprobe`, else `~/.local/state/mcpprobe`.
//! Files are written atomically; a file that cannot be read is an error naming it, never a
//! silent "verified".

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::net::write_atomically;

/// How long a DNS-TXT proof stays valid (SPEC §1.2).
pub const PROOF_DAYS: i64 = 90;

#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
}

/// A token made by `verify init`, waiting for its TXT record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    pub host: String,
    pub token: String,
    pub created_at: DateTime<Utc>,
}

/// A stored ownership proof (SPEC §1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredProof {
    pub host: String,
    pub method: String,
    pub token: String,
    pub verified_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl StoredProof {
    pub fn new(host: &str, token: &str, now: DateTime<Utc>) -> StoredProof {
        StoredProof {
            host: host.to_string(),
            method: "dns-txt".into(),
            token: token.to_string(),
            verified_at: now,
            expires_at: now + Duration::days(PROOF_DAYS),
        }
    }
}

/// The TXT text that proves `token`.
pub fn record_text(token: &str) -> String {
    format!("mcpprobe-verify={token}")
}

/// The name the records live at.
pub fn record_name(host: &str) -> String {
    format!("_mcpprobe.{host}")
}

/// A host name as stored: lowercase, no trailing dot. Only DNS-name characters are accepted
/// (it becomes a file name).
pub fn normalise_host(host: &str) -> Result<String, String> {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let ok = !h.is_empty()
        && h.len() <= 253
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !h.starts_with('.')
        && !h.contains("..");
    if ok {
        Ok(h)
    } else {
        Err(format!("{host:?} is not a DNS host name"))
    }
}

impl StateDir {
    /// The configured state folder.
    pub fn from_env() -> Result<StateDir, String> {
        if let Some(dir) = std::env::var_os("MCPPROBE_STATE_DIR").filter(|d| !d.is_empty()) {
            return Ok(StateDir {
                root: PathBuf::from(dir),
            });
        }
        if let Some(xdg) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
            return Ok(StateDir {
                root: PathBuf::from(xdg).join("mcpprobe"),
            });
        }
        match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
            Some(home) => Ok(StateDir {
                root: PathBuf::from(home).join(".local/state/mcpprobe"),
            }),
            None => Err("no state folder: set MCPPROBE_STATE_DIR".into()),
        }
    }

    fn file(&self, kind: &str, host: &str) -> PathBuf {
        self.root.join(kind).join(format!("{host}.json"))
    }

    fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("state file {} is corrupt: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read state file {}: {e}", path.display())),
        }
    }

    fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), String> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| format!("cannot serialise {}: {e}", path.display()))?;
        write_atomically(path, &(text + "\n"))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    pub fn pending(&self, host: &str) -> Result<Option<Pending>, String> {
        Self::read(&self.file("pending", host))
    }

    pub fn save_pending(&self, p: &Pending) -> Result<PathBuf, String> {
        let path = self.file("pending", &p.host);
        Self::write(&path, p).map(|()| path)
    }

    pub fn proof(&self, host: &str) -> Result<Option<StoredProof>, String> {
        let proof: Option<StoredProof> = Self::read(&self.file("proofs", host))?;
        match proof {
            Some(p) if p.host != host || p.method != "dns-txt" || p.token.len() < 32 => {
                Err(format!(
                    "state file {} is corrupt: it does not hold a dns-txt proof for {host}",
                    self.file("proofs", host).display()
                ))
            }
            p => Ok(p),
        }
    }

    pub fn save_proof(&self, p: &StoredProof) -> Result<PathBuf, String> {
        let path = self.file("proofs", &p.host);
        Self::write(&path, p).map(|()| path)
    }

    /// Every stored proof (for `verify status`), and the files that could not be read.
    pub fn proofs(&self) -> (Vec<StoredProof>, Vec<String>) {
        let mut proofs = Vec::new();
        let mut errors = Vec::new();
        let dir = self.root.join("proofs");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return (proofs, errors);
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
        {
            match Self::read::<StoredProof>(&path) {
                Ok(Some(p)) => proofs.push(p),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        (proofs, errors)
    }

    /// Writes an authorisation record for an active run; returns its path.
    pub fn save_authorisation(
        &self,
        record: &serde_json::Value,
        host: &str,
        now: DateTime<Utc>,
    ) -> Result<PathBuf, String> {
        let path = self
            .root
            .join("authorisations")
            .join(format!("{}-{host}.json", now.format("%Y%m%dT%H%M%S%.3fZ")));
        Self::write(&path, record).map(|()| path)
    }
}

/// A fresh verification token: 128 random bits, hex.
pub fn new_token() -> Result<String, String> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| format!("no randomness available for a token: {e}"))?;
    Ok(hex::encode(buf))
}
