//! OAuth 2.1 access tokens beside engram's own (the MCP authorization specification's
//! protected resource): a bearer token that is a JWT is checked against the authorization
//! server's keys (its JWKS, fetched and cached; fetched again for a key id it does not know,
//! at most every 30 s): the signature (RS256/384/512, PS256/384/512, ES256/384, EdDSA),
//! expiry and not-before (30 s of leeway), the issuer, and the audience being this server's
//! resource URL (RFC 8707). Its scopes grant workspaces: `engram:NAME` reads and writes the
//! workspace NAME, `engram:NAME:read` only reads it (from the `scope` claim, space-separated,
//! or an `scp` array). The resource's metadata is served at
//! `/.well-known/oauth-protected-resource` (RFC 9728), and a 401 names it in
//! `WWW-Authenticate`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use engram_domain::auth::Access;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::RwLock;

/// Where tokens come from and whom they must be for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier (the tokens' `iss`).
    pub issuer: String,
    /// Its JSON Web Key Set.
    pub jwks_url: String,
    /// This server's resource identifier (the tokens' `aud`), e.g.
    /// `https://memory.example.com/mcp`.
    pub resource: String,
}

/// How long fetched keys are used before they are fetched again.
const KEYS_KEPT_FOR: Duration = Duration::from_secs(600);
/// The least time between two fetches for an unknown key id.
const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY_SECONDS: u64 = 30;

/// A checker of OAuth access tokens, its keys cached.
#[derive(Clone)]
pub struct OAuth {
    config: Arc<OAuthConfig>,
    keys: Arc<RwLock<Option<Keys>>>,
    /// Held while the key set is fetched: concurrent requests with a key id not seen yet
    /// wait for one fetch instead of each making their own.
    fetching: Arc<tokio::sync::Mutex<()>>,
    http: reqwest::Client,
}

/// The issuer's key set as last fetched, each key decoded once.
struct Keys {
    fetched_at: Instant,
    /// By key id (a key without one under `""`).
    by_id: std::collections::HashMap<String, DecodingKey>,
}

impl Keys {
    /// Decodes every key of `set` that engram can use; the others are skipped with a warning.
    fn decode(set: &JwkSet) -> Self {
        let by_id = (set.keys.iter())
            .filter_map(|jwk| match DecodingKey::from_jwk(jwk) {
                Ok(key) => Some((jwk.common.key_id.clone().unwrap_or_default(), key)),
                Err(error) => {
                    tracing::warn!(%error, kid = ?jwk.common.key_id, "an OAuth key was skipped");
                    None
                }
            })
            .collect();
        Self {
            fetched_at: Instant::now(),
            by_id,
        }
    }

    /// The key `kid` names (any key when `kid` is empty and the set holds one).
    fn get(&self, kid: &str) -> Result<DecodingKey, Refused> {
        let key = match (kid.is_empty(), self.by_id.len()) {
            (true, 1) => self.by_id.values().next(),
            _ => self.by_id.get(kid),
        };
        key.cloned()
            .ok_or_else(|| Refused::Invalid(format!("no key {kid:?} in the issuer's key set")))
    }
}

/// What a valid token grants in the workspace a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthGrant {
    /// Who it was issued to (`sub`, else `client_id`).
    pub subject: String,
    /// What it allows in that workspace.
    pub access: Access,
    /// When it expires.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not valid (signature, expiry, issuer, audience, form): 401, `invalid_token`.
    Invalid(String),
    /// Valid, but no scope grants the workspace: 403, `insufficient_scope`.
    Scope,
    /// The keys could not be fetched: 503.
    KeysUnavailable(String),
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    client_id: Option<String>,
    scope: Option<String>,
    scp: Option<Vec<String>>,
    exp: Option<i64>,
}

impl OAuth {
    /// A checker for `config`; nothing is fetched yet.
    pub fn new(config: OAuthConfig) -> Self {
        // reqwest is built without a TLS provider: ring, as everywhere in engram.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        Self {
            config: Arc::new(config),
            keys: Arc::default(),
            fetching: Arc::default(),
            http,
        }
    }

    /// The protected resource's metadata (RFC 9728 §2).
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.config.resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "engram",
        })
    }

    /// The metadata's URL, for `WWW-Authenticate`: the resource URL's origin with
    /// `/.well-known/oauth-protected-resource` and the resource's path after it (RFC 9728
    /// §3.1).
    pub fn metadata_url(&self) -> String {
        let resource = &self.config.resource;
        let (origin, path) = match resource.find("://").map(|at| at + 3) {
            Some(start) => match resource[start..].find('/') {
                Some(slash) => resource.split_at(start + slash),
                None => (resource.as_str(), ""),
            },
            None => (resource.as_str(), ""),
        };
        let path = path.trim_end_matches('/');
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }

    /// Checks `token` and what it grants in `workspace`.
    pub async fn check(&self, token: &str, workspace: &str) -> Result<OAuthGrant, Refused> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|error| Refused::Invalid(format!("not a JWT: {error}")))?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(Refused::Invalid(
                "symmetric signatures are not accepted".into(),
            ));
        }
        let kid = header.kid.unwrap_or_default();
        let key = self.key(&kid).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|error| Refused::Invalid(error.to_string()))?
            .claims;
        let scopes: Vec<String> = match (claims.scope, claims.scp) {
            (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(scp)) => scp,
            (None, None) => Vec::new(),
        };
        let access = access_in(&scopes, workspace).ok_or(Refused::Scope)?;
        let subject = (claims.sub.or(claims.client_id))
            .ok_or_else(|| Refused::Invalid("neither sub nor client_id".into()))?;
        Ok(OAuthGrant {
            subject,
            access,
            expires_at: claims
                .exp
                .and_then(|exp| chrono::DateTime::from_timestamp(exp, 0)),
        })
    }

    /// The decoding key `kid` names: from the cached key set while it is fresh, else from the
    /// set fetched again (for an unknown `kid` at most every [`REFETCH_AFTER`], by one request
    /// while the others wait for it).
    async fn key(&self, kid: &str) -> Result<DecodingKey, Refused> {
        if let Some(key) = self.cached(kid).await {
            return key;
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched the set while this one waited.
        if let Some(key) = self.cached(kid).await {
            return key;
        }
        let keys = Keys::decode(&self.fetch().await?);
        let key = keys.get(kid);
        *self.keys.write().await = Some(keys);
        key
    }

    /// The answer the cached set gives for `kid`, when it may be trusted without a fetch:
    /// the key, or (fetched under [`REFETCH_AFTER`] ago) that there is none.
    async fn cached(&self, kid: &str) -> Option<Result<DecodingKey, Refused>> {
        let cached = self.keys.read().await;
        let keys = cached.as_ref()?;
        let age = keys.fetched_at.elapsed();
        if age >= KEYS_KEPT_FOR {
            return None;
        }
        let key = keys.get(kid);
        (key.is_ok() || age < REFETCH_AFTER).then_some(key)
    }

    async fn fetch(&self) -> Result<JwkSet, Refused> {
        let unavailable = |error: reqwest::Error| {
            tracing::warn!(url = %self.config.jwks_url, %error, "fetching the OAuth keys failed");
            Refused::KeysUnavailable("the authorization server's keys could not be fetched".into())
        };
        let response = (self.http.get(&self.config.jwks_url).send().await)
            .and_then(reqwest::Response::error_for_status)
            .map_err(unavailable)?;
        // Read up to a bound: a key set is a few kilobytes, and an answer without end must not
        // be held in memory until the request's timeout (issue 60: 300 MB read whole).
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
            if bytes.len() + chunk.len() > MAX_JWKS_BYTES {
                tracing::warn!(
                    url = %self.config.jwks_url,
                    "the OAuth key set is larger than {MAX_JWKS_BYTES} bytes: not read further"
                );
                return Err(Refused::KeysUnavailable(
                    "the authorization server's key set is too large".into(),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&bytes).map_err(|error| {
            tracing::warn!(url = %self.config.jwks_url, %error, "the OAuth key set is not a JWKS");
            Refused::KeysUnavailable("the authorization server's key set could not be read".into())
        })
    }
}

/// The most of a JWKS answer read: 1 MiB, hundreds of keys.
const MAX_JWKS_BYTES: usize = 1024 * 1024;

/// What `scopes` grant in `workspace`: `engram:NAME` read-write, `engram:NAME:read` read-only.
fn access_in(scopes: &[String], workspace: &str) -> Option<Access> {
    let mut access = None;
    for scope in scopes {
        let Some(rest) = scope.strip_prefix("engram:") else {
            continue;
        };
        if rest == workspace {
            return Some(Access::ReadWrite);
        }
        if rest.strip_suffix(":read") == Some(workspace) {
            access = Some(Access::ReadOnly);
        }
    }
    access
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_grant_their_workspaces_only() {
        let scopes: Vec<String> = ["openid", "engram:team", "engram:notes:read"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(access_in(&scopes, "team"), Some(Access::ReadWrite));
        assert_eq!(access_in(&scopes, "notes"), Some(Access::ReadOnly));
        assert_eq!(access_in(&scopes, "other"), None);
        assert_eq!(access_in(&scopes, "team:read"), None);
    }

    #[test]
    fn the_metadata_url_follows_rfc_9728() {
        let oauth = |resource: &str| {
            OAuth::new(OAuthConfig {
                issuer: "https://id.example.com".into(),
                jwks_url: "https://id.example.com/jwks".into(),
                resource: resource.into(),
            })
        };
        assert_eq!(
            oauth("https://memory.example.com/mcp").metadata_url(),
            "https://memory.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            oauth("https://memory.example.com").metadata_url(),
            "https://memory.example.com/.well-known/oauth-protected-resource"
        );
    }
}
