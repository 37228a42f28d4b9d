//! The client's address behind a reverse proxy. Limits per address (sessions, connections)
//! count the TCP peer; when the peer is a proxy the operator trusts (`--trusted-proxy`), the
//! client is the address the proxy forwards: RFC 7239 `Forwarded: for=…`, else
//! `X-Forwarded-For`. Headers from any other peer are ignored, so a client cannot pick its
//! own address.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

use super::sessions::ClientAddress;

/// The TCP peer of a connection, stored in every request's extensions by `serve`.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

/// Middleware: sets [`ClientAddress`] from the [`Peer`] and, when the peer is one of
/// `trusted`, the address it forwards.
pub async fn resolve(
    State(trusted): State<Arc<Vec<IpAddr>>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(Peer(peer)) = request.extensions().get::<Peer>().copied() {
        let client = client_address(peer, request.headers(), &trusted);
        request.extensions_mut().insert(ClientAddress(client));
    }
    next.run(request).await
}

/// The client behind `peer`: `peer` itself unless it is `trusted`; else the nearest address
/// the proxies forward that is not itself a trusted proxy (the rightmost such entry of
/// `Forwarded`, or of `X-Forwarded-For` when there is no `Forwarded`).
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let forwarded = headers_text(headers, "forwarded")
        .map(|text| forwarded_for(&text))
        .filter(|hops| !hops.is_empty())
        .or_else(|| {
            headers_text(headers, "x-forwarded-for").map(|text| {
                (text.split(','))
                    .filter_map(|hop| parse_address(hop.trim()))
                    .collect()
            })
        })
        .unwrap_or_default();
    (forwarded.iter().rev())
        .find(|hop| !trusted.contains(hop))
        .or(forwarded.first())
        .copied()
        .unwrap_or(peer)
}

/// Every value of header `name`, joined with commas (a header may be sent several times).
fn headers_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = (headers.get_all(name).iter())
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// The `for=` addresses of a `Forwarded` header, in order (RFC 7239 §4); obfuscated or
/// unknown identifiers are left out.
fn forwarded_for(text: &str) -> Vec<IpAddr> {
    (text.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (key, value) = pair.split_once('=')?;
                (key.trim().eq_ignore_ascii_case("for"))
                    .then(|| parse_address(value.trim().trim_matches('"')))
                    .flatten()
            })
        })
        .collect()
}

/// An address as proxies write it: `192.0.2.60`, `192.0.2.60:4711`, `[2001:db8::17]:4711`,
/// `2001:db8::17`.
fn parse_address(text: &str) -> Option<IpAddr> {
    if let Ok(address) = text.parse() {
        return Some(address);
    }
    if let Some(rest) = text.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_peer_may_name_the_client() {
        let forwarded = headers(&[("x-forwarded-for", "203.0.113.9")]);
        let proxy = ip("10.0.0.2");
        assert_eq!(client_address(proxy, &forwarded, &[]), proxy);
        assert_eq!(
            client_address(proxy, &forwarded, &[proxy]),
            ip("203.0.113.9")
        );
        // A trusted proxy that forwards nothing is the client.
        assert_eq!(client_address(proxy, &HeaderMap::new(), &[proxy]), proxy);
    }

    #[test]
    fn the_nearest_untrusted_hop_is_the_client() {
        let proxies = [ip("10.0.0.2"), ip("10.0.0.3")];
        // A client may write its own X-Forwarded-For; the proxies append to it.
        let chain = headers(&[("x-forwarded-for", "1.1.1.1, 198.51.100.7, 10.0.0.3")]);
        assert_eq!(
            client_address(proxies[0], &chain, &proxies),
            ip("198.51.100.7")
        );
        let split = headers(&[
            ("x-forwarded-for", "1.1.1.1"),
            ("x-forwarded-for", "198.51.100.8"),
        ]);
        assert_eq!(
            client_address(proxies[0], &split, &proxies),
            ip("198.51.100.8")
        );
    }

    #[test]
    fn forwarded_is_read_as_rfc_7239_writes_it() {
        let proxy = ip("10.0.0.2");
        let forwarded = headers(&[(
            "forwarded",
            "for=192.0.2.43;proto=https, for=\"[2001:db8:cafe::17]:4711\";by=10.0.0.2",
        )]);
        assert_eq!(
            client_address(proxy, &forwarded, &[proxy]),
            ip("2001:db8:cafe::17")
        );
        let hidden = headers(&[
            ("forwarded", "for=_hidden"),
            ("x-forwarded-for", "192.0.2.44:5000"),
        ]);
        assert_eq!(client_address(proxy, &hidden, &[proxy]), ip("192.0.2.44"));
    }
}
