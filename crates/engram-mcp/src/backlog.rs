//! Answers a session has built that its transport has not yet taken ([`AnswerBacklog`]).
//!
//! rmcp hands each finished answer to the transport in a task of its own, so when a transport
//! writes answers out more slowly than the tools build them (large answers serialised for a
//! legacy SSE stream), built answers pile up in memory where no byte budget sees them. A
//! session with a backlog starts a call only while fewer than [`ANSWERS_WAITING`] of its
//! answers wait for the transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::RequestId;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Answers of one session that may wait for its transport at once; the next call starts when
/// one is taken.
pub const ANSWERS_WAITING: usize = 2;

/// How long an answer counts as waiting at most: rmcp drops the answer of a request cancelled
/// after it was built without handing it to the transport, and such an answer must not hold
/// the session's calls up for longer than this.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(10);

/// The answers of one session built but not yet taken by its transport, by request id. Cheap
/// to clone: the session's server and its transport share one.
#[derive(Clone, Default)]
pub struct AnswerBacklog(Arc<Inner>);

#[derive(Default)]
struct Inner {
    /// Request id → when its answer was built.
    waiting: Mutex<HashMap<RequestId, Instant>>,
    taken: Notify,
}

impl AnswerBacklog {
    /// The transport took the answer to request `id` (it is serialised and counted as the
    /// transport's own from here on).
    pub fn taken(&self, id: &RequestId) {
        let removed = self.waiting().remove(id).is_some();
        if removed {
            self.0.taken.notify_waiters();
        }
    }

    /// The answer to request `id` is built and on its way to the transport.
    pub(crate) fn built(&self, id: RequestId) {
        self.waiting().insert(id, Instant::now());
    }

    /// Waits until fewer than [`ANSWERS_WAITING`] answers wait for the transport.
    pub(crate) async fn turn(&self) {
        loop {
            let taken = self.0.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            let next_forgotten = {
                let mut waiting = self.waiting();
                let now = Instant::now();
                waiting.retain(|_, built| now.duration_since(*built) < FORGOTTEN_AFTER);
                if waiting.len() < ANSWERS_WAITING {
                    return;
                }
                waiting.values().min().map(|built| *built + FORGOTTEN_AFTER)
            };
            let until = next_forgotten.unwrap_or_else(Instant::now);
            let _ = tokio::time::timeout_at(until, taken).await;
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Instant>> {
        self.0.waiting.lock().expect("answer backlog lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[tokio::test]
    async fn a_call_waits_until_the_transport_takes_an_answer() {
        let backlog = AnswerBacklog::default();
        backlog.built(id(1));
        // One answer waits: room for another.
        tokio::time::timeout(Duration::from_millis(50), backlog.turn())
            .await
            .expect("a turn with one answer waiting");
        backlog.built(id(2));
        let waiter = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.turn().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "two answers wait: no turn yet");
        backlog.taken(&id(1));
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("a turn once an answer is taken")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_never_taken_is_forgotten_in_time() {
        let backlog = AnswerBacklog::default();
        backlog.built(id(1));
        backlog.built(id(2));
        let started = Instant::now();
        backlog.turn().await;
        assert!(started.elapsed() >= FORGOTTEN_AFTER - Duration::from_millis(1));
        assert!(started.elapsed() < FORGOTTEN_AFTER + Duration::from_secs(1));
    }
}
