//! Answers a session has built that its transport has not yet taken ([`AnswerBacklog`]).
//!
//! rmcp hands each finished answer to the transport in a task of its own, so when a transport
//! writes answers out more slowly than the tools build them (large answers serialised for a
//! legacy SSE stream), built answers pile up in memory where no byte budget sees them. A
//! session with a backlog starts a call only while fewer than [`ANSWERS_WAITING`] of its
//! answers are being built or wait for the transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::RequestId;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Answers of one session that may be built or wait for its transport at once; the next call
/// starts when the transport takes one.
pub const ANSWERS_WAITING: usize = 2;

/// How long an answer counts as waiting at most: rmcp drops the answer of a request cancelled
/// after it was built without handing it to the transport, and such an answer must not hold
/// the session's calls up for longer than this.
const FORGOTTEN_AFTER: Duration = Duration::from_secs(10);

/// The answers of one session being built or built and not yet taken by its transport. Cheap
/// to clone: the session's server and its transport share one.
#[derive(Clone, Default)]
pub struct AnswerBacklog(Arc<Inner>);

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    taken: Notify,
}

#[derive(Default)]
struct State {
    /// Calls holding a [`Turn`]: building their answer.
    building: usize,
    /// Request id → when its answer was built.
    waiting: HashMap<RequestId, Instant>,
}

/// A call's place in the backlog while it builds its answer: [`Turn::built`] hands the answer
/// on; dropped without it (an error, a cancelled call), the place is given back.
pub(crate) struct Turn {
    backlog: AnswerBacklog,
    held: bool,
}

impl Turn {
    /// The answer to request `id` is built and on its way to the transport.
    pub(crate) fn built(mut self, id: RequestId) {
        let mut state = self.backlog.state();
        state.building -= 1;
        state.waiting.insert(id, Instant::now());
        self.held = false;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.held {
            self.backlog.state().building -= 1;
            self.backlog.0.taken.notify_waiters();
        }
    }
}

impl AnswerBacklog {
    /// The transport took `message`: if it answers a request (a result or an error), that
    /// answer is the transport's own from here on ([`AnswerBacklog::taken`]).
    pub fn taken_message(&self, message: &rmcp::model::ServerJsonRpcMessage) {
        use rmcp::model::ServerJsonRpcMessage;
        let id = match message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            self.taken(id);
        }
    }

    /// The transport took the answer to request `id` (it is serialised and counted as the
    /// transport's own from here on).
    pub fn taken(&self, id: &RequestId) {
        let removed = self.state().waiting.remove(id).is_some();
        if removed {
            self.0.taken.notify_waiters();
        }
    }

    /// Waits until fewer than [`ANSWERS_WAITING`] answers are being built or wait for the
    /// transport, and takes a place among them.
    pub(crate) async fn turn(&self) -> Turn {
        loop {
            let taken = self.0.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            let next_forgotten = {
                let mut state = self.state();
                let now = Instant::now();
                (state.waiting).retain(|_, built| now.duration_since(*built) < FORGOTTEN_AFTER);
                if state.building + state.waiting.len() < ANSWERS_WAITING {
                    state.building += 1;
                    return Turn {
                        backlog: self.clone(),
                        held: true,
                    };
                }
                state
                    .waiting
                    .values()
                    .min()
                    .map(|built| *built + FORGOTTEN_AFTER)
            };
            match next_forgotten {
                Some(until) => {
                    let _ = tokio::time::timeout_at(until, taken).await;
                }
                // Only answers being built: one of them finishing wakes this.
                None => taken.await,
            }
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().expect("answer backlog lock")
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
        backlog.turn().await.built(id(1));
        // One answer waits: room for one more call.
        let second = tokio::time::timeout(Duration::from_millis(50), backlog.turn())
            .await
            .expect("a turn with one answer waiting");
        // One waits, one is being built: the third call waits.
        let waiter = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.turn().await.built(id(3)) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "two answers under way: no turn yet");
        second.built(id(2));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "two answers wait: no turn yet");
        backlog.taken(&id(1));
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("a turn once an answer is taken")
            .unwrap();
    }

    #[tokio::test]
    async fn a_call_that_builds_nothing_gives_its_place_back() {
        let backlog = AnswerBacklog::default();
        let first = backlog.turn().await;
        let second = backlog.turn().await;
        let waiter = tokio::spawn({
            let backlog = backlog.clone();
            async move { drop(backlog.turn().await) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("a turn once a call failed")
            .unwrap();
        drop(second);
        assert_eq!(backlog.state().building, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_never_taken_is_forgotten_in_time() {
        let backlog = AnswerBacklog::default();
        backlog.turn().await.built(id(1));
        backlog.turn().await.built(id(2));
        let started = Instant::now();
        let _turn = backlog.turn().await;
        assert!(started.elapsed() >= FORGOTTEN_AFTER - Duration::from_millis(1));
        assert!(started.elapsed() < FORGOTTEN_AFTER + Duration::from_secs(1));
    }
}
