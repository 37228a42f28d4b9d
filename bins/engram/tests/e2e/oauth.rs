//! OAuth 2.1 access tokens from an authorization server the test plays itself (an EC P-256
//! key it makes, its JWKS served on loopback; no network): the resource's metadata (RFC 9728),
//! the challenge naming it, a valid token's scopes granting workspaces read-write or
//! read-only, and every bad token refused with nothing written: another audience, expired,
//! signed by another key, an unknown key id, a symmetric signature, no scope for the
//! workspace. engram's own tokens keep working beside them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use crate::auth::create_token;
use crate::scenario::{ok, tool_error};
use crate::server::{Backend, TestServer, streamable_client_with_token};
use engram::http::Guard;
use engram::http::oauth::OAuthConfig;

const ISSUER: &str = "https://id.example.test";
const RESOURCE: &str = "https://memory.example.test/mcp";

/// An EC P-256 signing key: its PKCS#8 document and its public JWK under `kid`.
fn key(kid: &str) -> (Vec<u8>, Value) {
    let random = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &random)
        .unwrap();
    let point = pair.public_key().as_ref();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..65])});
    (pkcs8.as_ref().to_vec(), jwk)
}

/// A token signed by `pkcs8` under `kid`, with these claims over the usual ones.
fn token(pkcs8: &[u8], kid: &str, claims: Value) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut all = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "priya@example.test",
        "iat": now, "exp": now + 600, "scope": "openid engram:demo"});
    for (name, value) in claims.as_object().unwrap() {
        all[name] = value.clone();
    }
    let header = Header {
        kid: Some(kid.into()),
        ..Header::new(Algorithm::ES256)
    };
    jsonwebtoken::encode(&header, &all, &EncodingKey::from_ec_der(pkcs8)).unwrap()
}

/// Serves `{"keys": [jwk]}` at `/jwks` on loopback; its URL and how often it was fetched.
async fn serve_jwks(jwk: Value) -> (String, Arc<AtomicUsize>) {
    let fetched = Arc::new(AtomicUsize::new(0));
    let counter = fetched.clone();
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let keys = json!({"keys": [jwk.clone()]});
            async move { axum::Json(keys) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, fetched)
}

/// A server guard that takes OAuth tokens of [`ISSUER`] for [`RESOURCE`], keys at `jwks_url`.
fn guard_for(jwks_url: String) -> Guard {
    Guard {
        oauth: Some(OAuthConfig {
            issuer: ISSUER.into(),
            jwks_url,
            resource: RESOURCE.into(),
        }),
        ..Guard::default()
    }
}

/// A raw `initialize` with `token`: status, `WWW-Authenticate`, body.
async fn initialize(base: &str, workspace: &str, token: Option<&str>) -> (u16, String, String) {
    let post = crate::auth::initialize(&reqwest::Client::new(), base, workspace, token);
    let answer = post.send().await.unwrap();
    let status = answer.status().as_u16();
    let challenge = (answer.headers().get("www-authenticate"))
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge, answer.text().await.unwrap())
}

pub async fn oauth_access_tokens_grant_workspaces_by_scope(backend: Backend) {
    let (signing, jwk) = key("k1");
    let (jwks_url, fetched) = serve_jwks(jwk).await;
    let guard = guard_for(jwks_url);
    let server = TestServer::start_with_guard(backend, &["demo", "other"], guard).await;

    // The metadata, at the well-known path and at it with the resource's path (RFC 9728 §3).
    for path in ["", "/mcp"] {
        let url = format!("{}/.well-known/oauth-protected-resource{path}", server.base);
        let metadata: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(metadata["resource"], RESOURCE, "{metadata}");
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    }
    // Without a token: 401 naming the metadata.
    let (status, challenge, _) = initialize(&server.base, "demo", None).await;
    assert_eq!(status, 401);
    let metadata_url = "resource_metadata=\"https://memory.example.test/.well-known/oauth-protected-resource/mcp\"";
    assert!(challenge.contains(metadata_url), "{challenge}");

    // A valid token reads and writes the workspace its scope names. Eight first requests at
    // once wait for one fetch of the key set.
    let valid = token(&signing, "k1", json!({}));
    let first = (0..8).map(|_| initialize(&server.base, "demo", Some(&valid)));
    for (status, _, body) in futures::future::join_all(first).await {
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(
        fetched.load(Ordering::SeqCst),
        1,
        "the key set fetched more than once"
    );
    let client = streamable_client_with_token(&server.base, "demo", Some(&valid)).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Alice", "entity_type": "person"}]}),
    )
    .await;

    // Bad tokens: 401 invalid_token, nothing written.
    let (other_key, _) = key("k1");
    let now = chrono::Utc::now().timestamp();
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"iss": ISSUER, "aud": RESOURCE, "sub": "x", "exp": now + 600,
            "scope": "engram:demo"}),
        &EncodingKey::from_secret(b"guessable"),
    )
    .unwrap();
    let bad = [
        (
            "another audience",
            token(&signing, "k1", json!({"aud": "https://other.test/mcp"})),
        ),
        (
            "another issuer",
            token(&signing, "k1", json!({"iss": "https://evil.test"})),
        ),
        ("expired", token(&signing, "k1", json!({"exp": now - 120}))),
        (
            "not yet valid",
            token(&signing, "k1", json!({"nbf": now + 600})),
        ),
        ("signed by another key", token(&other_key, "k1", json!({}))),
        ("an unknown key id", token(&signing, "k2", json!({}))),
        ("a symmetric signature", hs256),
        ("not a JWT", "not.a.jwt".to_owned()),
    ];
    for (what, bad) in &bad {
        let (status, challenge, body) = initialize(&server.base, "demo", Some(bad)).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains(metadata_url),
            "{what}: {challenge}"
        );
    }
    // The key set was fetched again for the unknown key id at most once.
    assert!(fetched.load(Ordering::SeqCst) <= 2, "{fetched:?}");

    // A valid token without a scope for the workspace: 403 insufficient_scope.
    let elsewhere = token(&signing, "k1", json!({"scope": "engram:other"}));
    let (status, challenge, body) = initialize(&server.base, "demo", Some(&elsewhere)).await;
    assert_eq!(status, 403, "{body}");
    assert!(challenge.contains("insufficient_scope"), "{challenge}");
    assert!(body.contains("engram:demo"), "{body}");
    // ... which works where its scope points.
    let there = streamable_client_with_token(&server.base, "other", Some(&elsewhere)).await;
    ok(&there, "get_stats", json!({})).await;

    // A read-only scope reads, and is refused when it writes.
    let reading = token(
        &signing,
        "k1",
        json!({"scope": null, "scp": ["engram:demo:read"]}),
    );
    let reader = streamable_client_with_token(&server.base, "demo", Some(&reading)).await;
    let opened = ok(&reader, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(opened["entities"][0]["name"], "Alice");
    let refused = tool_error(
        &reader,
        "set_summary",
        json!({"name": "Alice", "summary": "x"}),
    )
    .await;
    assert!(refused.contains("read-only"), "{refused}");

    // engram's own tokens work beside OAuth's.
    let own = create_token(&server.database_url, &["--workspace", "demo"]);
    let own = streamable_client_with_token(&server.base, "demo", Some(&own)).await;
    let opened = ok(&own, "open_nodes", json!({"names": ["Alice"]})).await;
    assert_eq!(
        opened["entities"][0]["summary"],
        Value::Null,
        "the refused write wrote nothing"
    );
    let stats = ok(&own, "get_stats", json!({})).await;
    assert_eq!(
        stats["node_count"], 1,
        "only the valid token's write: {stats}"
    );
    // Its write is recorded as the token's subject's.
    let history = ok(&own, "get_history", json!({"name": "Alice"})).await;
    assert_eq!(
        history["events"][0]["author"], "priya@example.test",
        "{history}"
    );
    for client in [client, there, reader, own] {
        client.cancel().await.unwrap();
    }
}

/// A key set answer without end (an authorization server gone wrong, or a hostile URL) is read
/// only up to its bound: the token is refused at once, not after the fetch's timeout with the
/// whole answer held in memory (issue 60: 300 MB read whole).
pub async fn a_key_set_without_end_is_read_only_up_to_its_bound(backend: Backend) {
    let (signing, _) = key("k1");
    let chunk = axum::body::Bytes::from(vec![b' '; 64 * 1024]);
    let app = axum::Router::new().route(
        "/jwks",
        axum::routing::get(move || {
            let chunk = chunk.clone();
            async move {
                let endless =
                    futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                axum::body::Body::from_stream(endless)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let jwks_url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let guard = guard_for(jwks_url);
    let server = TestServer::start_with_guard(backend, &["demo"], guard).await;
    let started = std::time::Instant::now();
    let valid = token(&signing, "k1", json!({}));
    let (status, _, body) = initialize(&server.base, "demo", Some(&valid)).await;
    assert_ne!(status, 200, "{body}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "refused after {:?}",
        started.elapsed()
    );
}
