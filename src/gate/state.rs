//! The state folder: pending verification tokens, ownership proofs, authorisation records.
//!
//! The host says where it is (the CLI: `$MCPPROBE_STATE_DIR`, else `$XDG_STATE_HOME/mcpprobe`,
//! else `~/.local/state/mcpprobe`; the engine never reads the environment). Files are written
//! atomically through unique temporary files; a file that cannot be read is an error naming it,
//! never a silent "verified".

use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, Utc};
use secrecy::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};

/// What went wrong with a state file. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read state file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state file {path} is corrupt: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0:?} is not a DNS host name")]
    BadHost(String),
    #[error("no randomness available for a token: {0}")]
    Randomness(String),
    #[error("no state folder: set MCPPROBE_STATE_DIR")]
    NoFolder,
}

pub use crate::util::atomic::{Visibility, write_atomically, write_new_atomically};

/// How long a DNS-TXT proof stays valid (SPEC §1.2).
pub const PROOF_DAYS: i64 = 90;

#[derive(Debug, Clone)]
pub struct StateDir {
    pub root: PathBuf,
}

/// A token made by `verify init`, waiting for its TXT record. `Debug` shows no token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    pub host: String,
    #[serde(serialize_with = "expose")]
    pub token: SecretString,
    pub created_at: DateTime<Utc>,
}

/// A stored ownership proof (SPEC §1.2). `Debug` shows no token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredProof {
    pub host: String,
    pub method: String,
    #[serde(serialize_with = "expose")]
    pub token: SecretString,
    pub verified_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

impl StoredProof {
    pub fn new(host: &str, token: &str, now: DateTime<Utc>) -> StoredProof {
        StoredProof {
            host: host.to_string(),
            method: "dns-txt".into(),
            token: token.into(),
            verified_at: now,
            expires_at: now + Duration::days(PROOF_DAYS),
        }
    }
}

/// A token written to its file (the one place it is stored).
fn expose<S: serde::Serializer>(token: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(token.expose_secret())
}

/// The TXT text that proves `token`.
pub fn record_text(token: &str) -> String {
    format!("mcpprobe-verify={token}")
}

/// Whether `shown` is `secret` (a token, a verification record), in constant time: both are
/// hashed first, so neither the bytes nor the length of the secret leak through timing.
pub fn secret_matches(shown: &[u8], secret: &[u8]) -> bool {
    use sha2::Digest as _;
    use subtle::ConstantTimeEq as _;
    let (a, b) = (sha2::Sha256::digest(shown), sha2::Sha256::digest(secret));
    a.as_slice().ct_eq(b.as_slice()).into()
}

/// The name the records live at.
pub fn record_name(host: &str) -> String {
    format!("_mcpprobe.{host}")
}

/// A host name as stored: lowercase, no trailing dot. Only DNS-name characters are accepted
/// (it becomes a file name).
pub fn normalise_host(host: &str) -> Result<String, StateError> {
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
        Err(StateError::BadHost(host.to_string()))
    }
}

impl StateDir {
    /// Where the state folder is (SPEC §1.2): `$MCPPROBE_STATE_DIR`, else
    /// `$XDG_STATE_HOME/mcpprobe`, else `~/.local/state/mcpprobe`. The host passes its
    /// environment's `var` (the engine never reads the environment).
    pub fn locate(
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<std::path::PathBuf, StateError> {
        let var = |name: &str| var(name).filter(|d| !d.is_empty());
        if let Some(dir) = var("MCPPROBE_STATE_DIR") {
            return Ok(dir.into());
        }
        if let Some(xdg) = var("XDG_STATE_HOME") {
            return Ok(std::path::PathBuf::from(xdg).join("mcpprobe"));
        }
        match var("HOME") {
            Some(home) => Ok(std::path::PathBuf::from(home).join(".local/state/mcpprobe")),
            None => Err(StateError::NoFolder),
        }
    }

    pub fn new(root: impl Into<PathBuf>) -> StateDir {
        StateDir { root: root.into() }
    }

    fn file(&self, kind: &str, host: &str) -> PathBuf {
        self.root.join(kind).join(format!("{host}.json"))
    }

    fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, StateError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| StateError::Corrupt {
                    path: path.to_path_buf(),
                    detail: e.to_string(),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), StateError> {
        let text = serde_json::to_string_pretty(value).map_err(|e| StateError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("cannot serialise: {e}"),
        })?;
        write_atomically(path, &(text + "\n"), Visibility::Private).map_err(|source| {
            StateError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    pub fn pending(&self, host: &str) -> Result<Option<Pending>, StateError> {
        Self::read(&self.file("pending", host))
    }

    pub fn save_pending(&self, p: &Pending) -> Result<PathBuf, StateError> {
        let path = self.file("pending", &p.host);
        Self::write(&path, p).map(|()| path)
    }

    pub fn proof(&self, host: &str) -> Result<Option<StoredProof>, StateError> {
        let proof: Option<StoredProof> = Self::read(&self.file("proofs", host))?;
        match proof {
            Some(p)
                if p.host != host
                    || p.method != "dns-txt"
                    || p.token.expose_secret().len() < 32 =>
            {
                Err(StateError::Corrupt {
                    path: self.file("proofs", host),
                    detail: format!("it does not hold a dns-txt proof for {host}"),
                })
            }
            p => Ok(p),
        }
    }

    pub fn save_proof(&self, p: &StoredProof) -> Result<PathBuf, StateError> {
        let path = self.file("proofs", &p.host);
        Self::write(&path, p).map(|()| path)
    }

    /// Every stored proof (for `verify status`), and the files that could not be read.
    pub fn proofs(&self) -> (Vec<StoredProof>, Vec<StateError>) {
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
    ) -> Result<PathBuf, StateError> {
        // Two runs in one millisecond (two scans of one daemon) still get two records.
        let unique = new_token()?;
        let path = self.root.join("authorisations").join(format!(
            "{}-{host}-{}.json",
            now.format("%Y%m%dT%H%M%S%.3fZ"),
            &unique[..8]
        ));
        Self::write(&path, record).map(|()| path)
    }

    /// Rewrites an authorisation record this run wrote (with the calls it made), atomically.
    pub fn update_authorisation(
        &self,
        path: &Path,
        record: &serde_json::Value,
    ) -> Result<(), StateError> {
        Self::write(path, record)
    }
}

/// A fresh verification token: 128 random bits, hex.
pub fn new_token() -> Result<String, StateError> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| StateError::Randomness(e.to_string()))?;
    Ok(hex::encode(buf))
}
