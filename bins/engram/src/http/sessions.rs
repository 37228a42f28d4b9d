//! Limits on open MCP sessions, Streamable HTTP and legacy SSE counted together: how many at
//! once, how many from one client address, and how long a Streamable HTTP session may sit idle
//! (an SSE session lives exactly as long as its stream's connection).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::refusal::refuse;

/// How many sessions may be open, from whom, and for how long unused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions open at once, over both transports; a new one over it gets 503.
    pub max_sessions: usize,
    /// Sessions open at once from one client address; a new one over it gets 429.
    pub max_sessions_per_address: usize,
    /// A Streamable HTTP session unused this long is closed; its next request gets 404, and
    /// the client opens a new session (as MCP's Streamable HTTP transport prescribes).
    pub idle: Duration,
}

/// The default of [`SessionLimits::max_sessions`].
pub const MAX_SESSIONS: usize = 1024;
/// The default of [`SessionLimits::max_sessions_per_address`].
pub const MAX_SESSIONS_PER_ADDRESS: usize = 128;
/// The default of [`SessionLimits::idle`]: half an hour, so an agent that thinks for a while
/// between tool calls keeps its session.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

impl Default for SessionLimits {
    /// [`MAX_SESSIONS`], [`MAX_SESSIONS_PER_ADDRESS`], [`SESSION_IDLE`].
    fn default() -> Self {
        Self {
            max_sessions: MAX_SESSIONS,
            max_sessions_per_address: MAX_SESSIONS_PER_ADDRESS,
            idle: SESSION_IDLE,
        }
    }
}

/// The address a request came from, put in its extensions by [`super::serve`]. Absent when
/// the router is served some other way; such requests share one count.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddress(pub IpAddr);

/// What is held per client address and in all (connections, sessions); each [`Share`] is
/// given back when dropped.
#[derive(Clone, Default)]
pub struct AddressCounts(Arc<Mutex<Counts>>);

#[derive(Default)]
struct Counts {
    total: usize,
    per_address: HashMap<Option<IpAddr>, usize>,
}

/// Why [`AddressCounts::take`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Everyone together holds the most allowed.
    Total,
    /// This address holds its share.
    Address,
}

impl AddressCounts {
    /// One more for `address`, unless all together hold `max_total` already or the address
    /// holds `max_per_address`.
    pub fn take(
        &self,
        address: Option<IpAddr>,
        max_per_address: usize,
        max_total: usize,
    ) -> Result<Share, Full> {
        let mut counts = self.0.lock().expect("address counts lock");
        if counts.total >= max_total {
            return Err(Full::Total);
        }
        let held = counts.per_address.entry(address).or_insert(0);
        if *held >= max_per_address {
            return Err(Full::Address);
        }
        *held += 1;
        counts.total += 1;
        Ok(Share {
            counts: self.clone(),
            address,
        })
    }
}

/// One connection's or session's place in [`AddressCounts`]; given back when dropped.
pub struct Share {
    counts: AddressCounts,
    address: Option<IpAddr>,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut counts = self.counts.0.lock().expect("address counts lock");
        counts.total -= 1;
        if let Some(held) = counts.per_address.get_mut(&self.address) {
            *held -= 1;
            if *held == 0 {
                counts.per_address.remove(&self.address);
            }
        }
    }
}

/// The open sessions of both transports, against [`SessionLimits`].
#[derive(Clone)]
pub struct SessionCounter {
    limits: SessionLimits,
    counts: AddressCounts,
}

impl SessionCounter {
    pub fn new(limits: SessionLimits) -> Self {
        Self {
            limits,
            counts: AddressCounts::default(),
        }
    }

    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// A place for one more session from `address`, held until it is dropped; or the
    /// refusal to send (503 when the server is full, 429 when this address has its share).
    pub fn admit(&self, address: Option<IpAddr>) -> Result<Share, Refusal> {
        let limits = self.limits;
        let full = match self.counts.take(
            address,
            limits.max_sessions_per_address,
            limits.max_sessions,
        ) {
            Ok(share) => return Ok(share),
            Err(full) => full,
        };
        let (status, message) = match full {
            Full::Total => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many open sessions: the server holds at most {} at once; close \
                     sessions you no longer use, or retry later",
                    limits.max_sessions
                ),
            ),
            Full::Address => (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many open sessions from this address: at most {} at once; close \
                     sessions you no longer use (HTTP DELETE /mcp), or retry later",
                    limits.max_sessions_per_address
                ),
            ),
        };
        tracing::warn!(address = ?address, %status, "refusing a new session");
        Err(Refusal { status, message })
    }
}

/// Publishes how many sessions of `transport` are open (`engram_sessions_active`).
pub fn publish_open(transport: &'static str, open: usize) {
    metrics::gauge!("engram_sessions_active", "transport" => transport).set(open as f64);
}

/// A new session refused: answered with its status, a JSON-RPC error naming the limit, and
/// `Retry-After`.
#[derive(Debug)]
pub struct Refusal {
    status: StatusCode,
    message: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = refuse(self.status, self.message);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_count_per_address_and_in_all_and_come_back_when_dropped() {
        let counter = SessionCounter::new(SessionLimits {
            max_sessions: 3,
            max_sessions_per_address: 2,
            idle: SESSION_IDLE,
        });
        let a = Some(IpAddr::from([127, 0, 0, 1]));
        let b = Some(IpAddr::from([127, 0, 0, 2]));
        let first = counter.admit(a).unwrap();
        let _second = counter.admit(a).unwrap();
        let refused = counter.admit(a).err().unwrap().into_response();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "5");
        let _third = counter.admit(b).unwrap();
        let full = counter.admit(b).err().unwrap().into_response();
        assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
        drop(first);
        assert!(counter.admit(a).is_ok(), "a dropped slot is given back");
    }
}
