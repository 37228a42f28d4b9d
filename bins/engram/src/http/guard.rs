//! Host and Origin checks for every MCP route, against DNS rebinding and cross-site requests.
//!
//! A request is served when its `Host` names an allowed host (with any port, or the exact
//! `host:port` given) and, if it carries an `Origin`, that origin is allowed. Loopback hosts
//! and origins are always allowed; `--allowed-host` and `--allowed-origin` add more.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Hosts served without configuration.
const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.1", "[::1]", "::1"];

/// Who may use the MCP routes and how much they may send: the allowed `Host` and `Origin`
/// values, whether a token is required (`super::auth`), and the largest request body.
#[derive(Debug, Clone)]
pub struct Guard {
    /// Extra hosts, `name` (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Extra origins, `scheme://host[:port]`; `*` as the port allows any.
    pub allowed_origins: Vec<String>,
    /// Whether every request needs `Authorization: Bearer <token>`.
    pub require_auth: bool,
    /// The largest request body accepted, in bytes (larger ones get 413).
    pub max_body_bytes: usize,
    /// How long a client may take to send a request's body (of `/mcp` and `/sse/messages`),
    /// tokens or not; a slower one gets 408 and its connection is freed.
    pub body_read_timeout: std::time::Duration,
    /// How many sessions may be open, from whom, and for how long unused.
    pub sessions: super::SessionLimits,
    /// The tools sessions are offered (`--tools`).
    pub tools: engram_mcp::ToolSet,
    /// How many bytes of answers may wait for clients to read them (legacy SSE and Streamable
    /// HTTP alike).
    pub unread: super::UnreadBudget,
    /// Connections open at once from one client address (over it, a connection is closed at
    /// once); a trusted proxy's own connections are not counted.
    pub max_connections_per_address: usize,
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` name the client
    /// ([`super::forwarded`]).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// How long a stopping server drains before it stops accepting: `/healthz` answers 503
    /// and every new request 503 (with `Connection: close`) while calls in flight finish, so
    /// a load balancer takes it out of rotation and sends its clients elsewhere. Zero: it
    /// stops accepting at once.
    pub drain: std::time::Duration,
    /// OAuth access tokens accepted beside engram's own ([`super::oauth`]); tokens are then
    /// required.
    pub oauth: Option<super::oauth::OAuthConfig>,
}

/// The default of [`Guard::max_body_bytes`]: a full batch of 1,000 observations of 64 KiB,
/// with room for JSON.
pub const MAX_BODY_BYTES: usize = 80 * 1024 * 1024;

impl Default for Guard {
    /// Loopback only, no tokens, [`MAX_BODY_BYTES`], the default session and connection
    /// limits, every tool, no trusted proxy.
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            require_auth: false,
            max_body_bytes: MAX_BODY_BYTES,
            body_read_timeout: super::BODY_READ_TIMEOUT,
            sessions: super::SessionLimits::default(),
            tools: engram_mcp::ToolSet::all(),
            unread: super::UnreadBudget {
                per_session: super::MAX_UNREAD_BYTES_PER_SESSION,
                total: super::MAX_UNREAD_BYTES,
            },
            max_connections_per_address: super::MAX_CONNECTIONS_PER_ADDRESS,
            trusted_proxies: Vec::new(),
            drain: std::time::Duration::ZERO,
            oauth: None,
        }
    }
}

impl Guard {
    fn host_allowed(&self, host: &str) -> bool {
        let name = strip_port(host);
        LOOPBACK_HOSTS.contains(&name)
            || self.allowed_hosts.iter().any(|allowed| {
                allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(name)
            })
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        if matches!(scheme, "http" | "https") && LOOPBACK_HOSTS.contains(&strip_port(authority)) {
            return true;
        }
        self.allowed_origins.iter().any(|allowed| {
            allowed.eq_ignore_ascii_case(origin)
                || allowed.strip_suffix(":*").is_some_and(|prefix| {
                    origin
                        .get(..prefix.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
                        && origin[prefix.len()..]
                            .strip_prefix(':')
                            .is_some_and(|port| {
                                !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                            })
                        || origin.eq_ignore_ascii_case(prefix)
                })
        })
    }
}

/// `host` without its `:port` (IPv6 literals keep their brackets). Anything after an IPv6
/// literal but a port (`[::1]evil.example`) leaves the value whole, so it matches nothing.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        let Some(end) = host.find(']') else {
            return host;
        };
        let rest = &host[end + 1..];
        let port_only = rest.is_empty()
            || rest
                .strip_prefix(':')
                .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
        return if port_only { &host[..=end] } else { host };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// Middleware: refuses requests whose `Host` or `Origin` is not allowed (403).
pub async fn check(
    State(guard): State<std::sync::Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    // One Host (RFC 9112 §3.2) and at most one Origin: with two, a check of the first could
    // be satisfied while a proxy or the application reads the second.
    for name in [header::HOST, header::ORIGIN] {
        if request.headers().get_all(&name).iter().count() > 1 {
            let message = format!("more than one {name} header");
            return (StatusCode::BAD_REQUEST, message).into_response();
        }
    }
    // Both framings at once: refused by `super::framing`, which sees the bytes hyper reads
    // (hyper drops `Content-Length` beside `Transfer-Encoding` before this runs).
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .unwrap_or_default();
    if !guard.host_allowed(host) {
        let message = format!(
            "host {host:?} is not allowed; start engram with --allowed-host {} to serve it",
            strip_port(host)
        );
        return (StatusCode::FORBIDDEN, message).into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !guard.origin_allowed(origin) {
            let message = format!(
                "origin {origin:?} is not allowed; start engram with --allowed-origin {origin} to serve it"
            );
            return (StatusCode::FORBIDDEN, message).into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_always_allowed() {
        let guard = Guard::default();
        for host in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:8765",
            "[::1]:8765",
        ] {
            assert!(guard.host_allowed(host), "{host}");
        }
        assert!(!guard.host_allowed("evil.example:8765"));
        for trick in ["[::1]evil.example", "[::1]:8765evil", "[::1]:", "[::1"] {
            assert!(!guard.host_allowed(trick), "{trick}");
        }
        assert!(!guard.origin_allowed("http://[::1]evil.example"));
        assert!(!guard.host_allowed(""));
        assert!(guard.origin_allowed("http://localhost:6274"));
        assert!(guard.origin_allowed("http://127.0.0.1"));
        assert!(!guard.origin_allowed("https://evil.example"));
        assert!(!guard.origin_allowed("null"));
    }

    #[test]
    fn configured_hosts_and_origins_are_allowed() {
        let guard = Guard {
            allowed_hosts: vec!["memory.example".into(), "10.0.0.5:9000".into()],
            allowed_origins: vec!["https://app.example".into(), "http://tool.example:*".into()],
            ..Guard::default()
        };
        assert!(guard.host_allowed("memory.example:443"));
        assert!(guard.host_allowed("10.0.0.5:9000"));
        assert!(!guard.host_allowed("10.0.0.5:9001"));
        assert!(guard.origin_allowed("https://app.example"));
        assert!(guard.origin_allowed("http://tool.example:3000"));
        assert!(guard.origin_allowed("http://tool.example"));
        assert!(!guard.origin_allowed("http://tool.example.evil:3000"));
        assert!(!guard.origin_allowed("https://app.example.evil"));
    }
}
