//! Access tokens: a bearer token grants one workspace, read-write or read-only, until it
//! expires or is revoked.
//!
//! A token reads `engram_<id>_<secret>`: the public `id` (16 hex digits) finds its record, and
//! only the SHA-256 of the `secret` (64 hex digits, 256 random bits) is stored, compared in
//! constant time. The store keeps the records, so every engram process on one database honours
//! the same tokens and a revocation takes effect on the next request everywhere.

use async_trait::async_trait;
use derive_setters::Setters;
use serde::Serialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::{Timestamp, WorkspaceId};
use crate::tool::MemoryStore;

/// The prefix every token starts with, so a leaked one is recognisable (secret scanners).
pub const TOKEN_PREFIX: &str = "engram_";

/// What a token lets its holder do in its workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Every tool.
    #[default]
    ReadWrite,
    /// Only the tools that change nothing (`readOnlyHint`); the others are refused.
    ReadOnly,
}

/// A token as stored and listed: everything but its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    /// The public id, 16 hex digits.
    pub id: String,
    /// The workspace it grants.
    pub workspace: String,
    /// That workspace's id.
    #[serde(skip)]
    pub workspace_id: WorkspaceId,
    /// What it allows there.
    pub access: Access,
    /// A note for people (who or what holds it), at most 256 bytes.
    pub label: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it stops working, if ever.
    pub expires_at: Option<Timestamp>,
    /// When it was revoked (it grants nothing since), if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

/// A token to store: its record and the SHA-256 of its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// The public id.
    pub id: String,
    /// The workspace it grants.
    pub workspace: WorkspaceId,
    /// What it allows there.
    pub access: Access,
    /// A note for people.
    pub label: Option<String>,
    /// When it stops working, if ever.
    pub expires_at: Option<Timestamp>,
    /// SHA-256 of the secret, 32 bytes.
    pub secret_hash: Vec<u8>,
}

/// A freshly made token: the string to hand out once, and what to store.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// `engram_<id>_<secret>`: shown once, never stored.
    pub token: String,
    /// The public id.
    pub id: String,
    /// SHA-256 of the secret.
    pub secret_hash: Vec<u8>,
}

impl IssuedToken {
    /// A token from 40 random bytes (8 for the id, 32 for the secret); the caller draws them
    /// from the operating system's generator.
    pub fn from_random(random: &[u8; 40]) -> Self {
        let id = hex(&random[..8]);
        let secret = hex(&random[8..]);
        Self {
            token: format!("{TOKEN_PREFIX}{id}_{secret}"),
            secret_hash: secret_hash(&secret),
            id,
        }
    }
}

/// Splits a presented token into `(id, secret)`; `None` when it is not shaped like one.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hex_of =
        |text: &str, len: usize| text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit());
    (hex_of(id, 16) && hex_of(secret, 64)).then_some((id, secret))
}

/// SHA-256 of a secret as stored.
pub fn secret_hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// Whether `secret` hashes to `stored`, in time that does not depend on where they differ.
pub fn secret_matches(secret: &str, stored: &[u8]) -> bool {
    secret_hash(secret).ct_eq(stored).into()
}

/// The semantics of [`Memory::create_token`](crate::Memory::create_token).
pub(crate) async fn create_token(
    store: &dyn MemoryStore,
    secrets: crate::SecretPolicy,
    request: CreateToken,
    random: &[u8; 40],
) -> crate::Result<(TokenInfo, String)> {
    let CreateToken {
        workspace,
        access,
        label,
        expires_at,
    } = request;
    crate::limits::workspace_name("workspace", &workspace)?;
    if let Some(label) = &label {
        crate::limits::name("label", label)?;
        secrets.screen_name("label", label)?;
    }
    if let Some(expires_at) = expires_at {
        crate::limits::timestamp("expires_at", expires_at)?;
    }
    let workspace = store.workspace(&workspace).await?;
    let issued = IssuedToken::from_random(random);
    let token = NewToken {
        id: issued.id,
        workspace: workspace.id,
        access,
        label,
        expires_at,
        secret_hash: issued.secret_hash,
    };
    let info = store.create_token(&token).await?;
    Ok((info, issued.token))
}

/// `engram token create`: a token for one workspace ([`Memory::create_token`]).
///
/// [`Memory::create_token`]: crate::Memory::create_token
#[derive(Debug, Clone, PartialEq, Eq, Setters)]
pub struct CreateToken {
    /// The workspace it grants.
    pub workspace: String,
    /// Read-write or read-only.
    pub access: Access,
    /// A name for people (at most 256 bytes, screened for secrets).
    pub label: Option<String>,
    /// When it stops working (years 1–9999); never when `None`.
    pub expires_at: Option<Timestamp>,
}

impl CreateToken {
    /// A token granting `workspace` with `access`, without label or expiry.
    pub fn new(workspace: impl Into<String>, access: Access) -> Self {
        Self {
            workspace: workspace.into(),
            access,
            label: None,
            expires_at: None,
        }
    }
}

/// The semantics of [`Memory::tokens`](crate::Memory::tokens).
pub(crate) async fn tokens(
    store: &dyn MemoryStore,
    workspace: Option<&str>,
) -> crate::Result<Vec<TokenInfo>> {
    let workspace = match workspace {
        Some(name) => Some(crate::workspaces::workspace(store, name).await?.id),
        None => None,
    };
    store.tokens(workspace).await
}

/// The semantics of [`Memory::revoke_token`](crate::Memory::revoke_token).
pub(crate) async fn revoke_token(store: &dyn MemoryStore, id_or_token: &str) -> crate::Result<()> {
    let id = match parse(id_or_token) {
        Some((id, _)) => id,
        None if id_or_token.len() == 16 && id_or_token.bytes().all(|b| b.is_ascii_hexdigit()) => {
            id_or_token
        }
        None => {
            return Err(crate::Error::invalid(
                "token",
                "expected a token id (16 hex digits, as `engram token list` shows) or a token",
            ));
        }
    };
    store.revoke_token(id).await
}

/// The semantics of [`Memory::authenticate`](crate::Memory::authenticate).
pub(crate) async fn authenticate(
    store: &dyn MemoryStore,
    presented: &str,
    now: Timestamp,
) -> crate::Result<Option<TokenInfo>> {
    let Some((id, secret)) = parse(presented) else {
        return Ok(None);
    };
    let Some((info, stored)) = store.token(id).await? else {
        return Ok(None);
    };
    let live = info.revoked_at.is_none() && info.expires_at.is_none_or(|expires| now < expires);
    Ok((secret_matches(secret, &stored) && live).then_some(info))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Access tokens for the HTTP transports ([`crate::auth`]).
#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    /// Stores a new access token ([`crate::auth`]); its id must be new.
    async fn create_token(&self, token: &NewToken) -> crate::Result<TokenInfo>;
    /// Every access token (of `workspace` when given), by workspace name then age.
    async fn tokens(&self, workspace: Option<WorkspaceId>) -> crate::Result<Vec<TokenInfo>>;
    /// The access token with public id `id` and the SHA-256 of its secret, if it exists.
    async fn token(&self, id: &str) -> crate::Result<Option<(TokenInfo, Vec<u8>)>>;
    /// Revokes an access token (it is kept, with `revoked_at`, and grants nothing since);
    /// [`crate::Error::NotFound`] (kind `token`) when there is none or it is revoked already.
    async fn revoke_token(&self, id: &str) -> crate::Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_token_parses_and_matches_only_its_own_hash() {
        let mut random = [0u8; 40];
        random
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i as u8).wrapping_mul(7));
        let issued = IssuedToken::from_random(&random);
        assert!(issued.token.starts_with("engram_00070e151c232a31_"));
        let (id, secret) = parse(&issued.token).unwrap();
        assert_eq!(id, issued.id);
        assert!(secret_matches(secret, &issued.secret_hash));
        let mut other = secret.to_owned();
        other.replace_range(..1, if other.starts_with('0') { "1" } else { "0" });
        assert!(!secret_matches(&other, &issued.secret_hash));
    }

    #[test]
    fn malformed_tokens_do_not_parse() {
        let secret = "a".repeat(64);
        for token in [
            String::new(),
            format!("engram_{}_{secret}", "g".repeat(16)),
            format!("engram_{}_{}", "0".repeat(16), "a".repeat(63)),
            format!("engram_{}{secret}", "0".repeat(16)),
            format!("token_{}_{secret}", "0".repeat(16)),
        ] {
            assert_eq!(parse(&token), None, "{token}");
        }
        assert!(parse(&format!("engram_{}_{secret}", "0".repeat(16))).is_some());
    }
}
