//! Bytes of Streamable HTTP answers (`/mcp`) a client has not taken yet, held within the same
//! budget as legacy SSE's ([`super::UnreadBudget`]: per session and for the server as a
//! whole). Each frame of a response counts from when it is handed to the connection until the
//! connection asks for the next one, which it does once it has written the frame out; a client
//! that stops reading leaves its frame counted. A frame that would pass a budget cuts its
//! response off (the connection is closed, the frame freed, the log says why): a client that
//! does not read is dropped, not buffered without limit.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http_body::Frame;

use super::UnreadBudget;

/// The unread bytes of every `/mcp` response, by session and in all.
#[derive(Clone)]
pub struct AnswerLedger {
    budget: UnreadBudget,
    /// Shared with the legacy SSE sessions: one budget for the whole server.
    all: Arc<AtomicUsize>,
    sessions: Arc<Mutex<HashMap<String, Arc<AtomicUsize>>>>,
}

impl AnswerLedger {
    /// A ledger counting into `all` (the server's total) within `budget`.
    pub fn new(budget: UnreadBudget, all: Arc<AtomicUsize>) -> Self {
        Self {
            budget,
            all,
            sessions: Arc::default(),
        }
    }

    /// The counter of session `id`, made on first use.
    fn session(&self, id: &str) -> Arc<AtomicUsize> {
        let mut sessions = self.sessions.lock().expect("answer ledger lock");
        sessions.entry(id.to_owned()).or_default().clone()
    }

    /// Forgets a session's counter once no response of it is left.
    fn forget(&self, id: &str, counter: Arc<AtomicUsize>) {
        let mut sessions = self.sessions.lock().expect("answer ledger lock");
        // Counters are cloned under this lock only: two holders are the map and `counter`.
        if Arc::strong_count(&counter) == 2 {
            sessions.remove(id);
        }
    }
}

/// Middleware on `/mcp`: counts each response's frames against the budget.
pub async fn count_answers(
    State(ledger): State<AnswerLedger>,
    request: Request,
    next: Next,
) -> Response {
    let session = (request.headers().get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(|id| (id.to_owned(), ledger.session(id)));
    let response = next.run(request).await;
    response.map(|inner| {
        Body::new(Counted {
            inner,
            held: 0,
            session,
            ledger,
        })
    })
}

/// A response body whose frame in the connection's hands is counted.
struct Counted {
    inner: Body,
    /// Bytes of the frame last handed out, not yet known to be written.
    held: usize,
    session: Option<(String, Arc<AtomicUsize>)>,
    ledger: AnswerLedger,
}

impl Counted {
    /// Counts `bytes` more, unless that would pass a budget (then nothing is counted).
    fn hold(&mut self, bytes: usize) -> bool {
        let all = self.ledger.all.fetch_add(bytes, Ordering::AcqRel) + bytes;
        let session = (self.session.as_ref())
            .map_or(0, |(_, s)| s.fetch_add(bytes, Ordering::AcqRel) + bytes);
        self.held = bytes;
        if all > self.ledger.budget.total || session > self.ledger.budget.per_session {
            self.release();
            return false;
        }
        true
    }

    /// The frame handed out last was written (or will never be).
    fn release(&mut self) {
        let bytes = std::mem::take(&mut self.held);
        self.ledger.all.fetch_sub(bytes, Ordering::AcqRel);
        if let Some((_, session)) = &self.session {
            session.fetch_sub(bytes, Ordering::AcqRel);
        }
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        // Asked again: the connection has written what it was given.
        this.release();
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(context));
        let Some(Ok(frame)) = frame else {
            return Poll::Ready(frame);
        };
        let bytes = frame.data_ref().map_or(0, Bytes::len);
        if !this.hold(bytes) {
            tracing::warn!(
                bytes,
                session = this.session.as_ref().map(|(id, _)| id.as_str()),
                "cutting off an answer: its client leaves more unread than its budget"
            );
            return Poll::Ready(Some(Err(axum::Error::new(
                "the client does not read its answers",
            ))));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.release();
        if let Some((id, counter)) = self.session.take() {
            self.ledger.forget(&id, counter);
        }
    }
}
