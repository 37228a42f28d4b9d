//! Bytes of answers clients have not read yet, held within one budget ([`UnreadBudget`]: per
//! session and for the server as a whole) counted by [`Tally`], for both transports: legacy
//! SSE counts each message until its stream hands it to the connection (`super::sse`), and
//! Streamable HTTP answers (`/mcp`) are counted here. Each frame of a response counts from
//! when it is handed to the connection until the connection asks for the next one, which it
//! does once it has written the frame out; a client that stops reading leaves its frame
//! counted. A frame that would pass a budget while its session leaves earlier answers unread
//! cuts its response off (the connection is closed, the frame freed, the log says why): a
//! client that does not read is dropped, not buffered without limit. A client that has read
//! everything it was sent gets an answer larger than its session's budget (the tools bound
//! what one call returns).

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

/// How many bytes of answers may wait for clients to read them: per session and for every
/// session together. A client that stops reading lets its answers pile up; past either budget
/// a legacy SSE session is closed (its next message gets 503, then 404) and a Streamable HTTP
/// answer is cut off: a client that does not read is dropped, not buffered without limit.
#[derive(Debug, Clone, Copy)]
pub struct UnreadBudget {
    /// Bytes waiting in one session.
    pub per_session: usize,
    /// Bytes waiting in all sessions together.
    pub total: usize,
}

/// The default of [`UnreadBudget::per_session`]: room for the largest answers (a type of
/// 2,000 nodes with long summaries is about 12 MB of JSON) twice over.
pub const MAX_UNREAD_BYTES_PER_SESSION: usize = 32 * 1024 * 1024;
/// The default of [`UnreadBudget::total`].
pub const MAX_UNREAD_BYTES: usize = 128 * 1024 * 1024;

/// Unread bytes counted in one session and in the server's total, against an
/// [`UnreadBudget`].
#[derive(Clone)]
pub(super) struct Tally {
    session: Arc<AtomicUsize>,
    all: Arc<AtomicUsize>,
    budget: UnreadBudget,
}

impl Tally {
    /// Counts into `session` and `all` within `budget`.
    pub(super) fn new(
        session: Arc<AtomicUsize>,
        all: Arc<AtomicUsize>,
        budget: UnreadBudget,
    ) -> Self {
        Self {
            session,
            all,
            budget,
        }
    }

    /// Counts `bytes` more. Past a budget nothing is counted and the answer is `false`,
    /// unless these bytes alone are more than a session may leave unread, the session had
    /// nothing left unread and the server's total was within its budget before: a client
    /// that has read every earlier answer gets an answer larger than its budget (the budgets
    /// are for clients that stop reading; such a client gets no further answer while it
    /// holds this one, and once the total is past its budget no session gets more), so the
    /// unread bytes stay below the total budget plus one such answer.
    pub(super) fn add(&self, bytes: usize) -> bool {
        let all = self.all.fetch_add(bytes, Ordering::AcqRel) + bytes;
        let session = self.session.fetch_add(bytes, Ordering::AcqRel) + bytes;
        let over = all > self.budget.total || session > self.budget.per_session;
        let reader =
            bytes > self.budget.per_session && session == bytes && all - bytes <= self.budget.total;
        if over && !reader {
            self.take(bytes);
            return false;
        }
        true
    }

    /// `bytes` were read (or dropped).
    pub(super) fn take(&self, bytes: usize) {
        self.all.fetch_sub(bytes, Ordering::AcqRel);
        self.session.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// Everything the session still counts goes (its stream is gone).
    pub(super) fn take_all(&self) {
        let left = self.session.swap(0, Ordering::AcqRel);
        self.all.fetch_sub(left, Ordering::AcqRel);
    }
}

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

    /// Forgets a session's counter once no response of it is left (`counter`, held by the
    /// response that ends, is the last one besides the map's).
    fn forget(&self, id: &str, counter: &Arc<AtomicUsize>) {
        let mut sessions = self.sessions.lock().expect("answer ledger lock");
        // Counters are cloned under this lock only: two holders are the map and `counter`.
        if Arc::strong_count(counter) == 2 {
            sessions.remove(id);
        }
    }
}

/// Middleware on `/mcp`: counts each response's frames against the budget. A request
/// without a session (`initialize`) counts in a session of its own.
pub async fn count_answers(
    State(ledger): State<AnswerLedger>,
    request: Request,
    next: Next,
) -> Response {
    let session = (request.headers().get("mcp-session-id")).and_then(|v| v.to_str().ok());
    let counter = session.map_or_else(Arc::default, |id| ledger.session(id));
    let tally = Tally::new(counter, ledger.all.clone(), ledger.budget);
    let session = session.map(str::to_owned);
    let response = next.run(request).await;
    response.map(|inner| {
        Body::new(Counted {
            inner,
            held: 0,
            tally,
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
    tally: Tally,
    /// The session's id, when the request named one.
    session: Option<String>,
    ledger: AnswerLedger,
}

impl Counted {
    /// Counts `bytes` as held, unless that would pass a budget while the session leaves
    /// earlier answers unread (then nothing is counted).
    fn hold(&mut self, bytes: usize) -> bool {
        let fits = self.tally.add(bytes);
        self.held = if fits { bytes } else { 0 };
        fits
    }

    /// The frame handed out last was written (or will never be).
    fn release(&mut self) {
        self.tally.take(std::mem::take(&mut self.held));
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
                session = this.session.as_deref(),
                "cutting off an answer: its client leaves more unread than its budget"
            );
            return Poll::Ready(Some(Err(axum::Error::new(
                "the client does not read its answers",
            ))));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        // Not while a frame is held: the connection then asks once more after writing it,
        // which is when it stops counting. An answer in one frame (a JSON body) would
        // otherwise be dropped, and uncounted, as soon as it was handed over.
        self.held == 0 && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.release();
        if let Some(id) = self.session.take() {
            self.ledger.forget(&id, &self.tally.session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(session: &Arc<AtomicUsize>, all: &Arc<AtomicUsize>) -> Tally {
        let budget = UnreadBudget {
            per_session: 10,
            total: 100,
        };
        Tally::new(session.clone(), all.clone(), budget)
    }

    #[test]
    fn a_client_that_read_everything_gets_an_answer_past_the_budget() {
        let all = Arc::new(AtomicUsize::new(0));
        let (reader, other): (Arc<AtomicUsize>, Arc<AtomicUsize>) = Default::default();
        let reading = tally(&reader, &all);
        // Nothing unread: an answer of 5 session budgets is taken.
        assert!(reading.add(50));
        // Left unread: not even one byte more.
        assert!(!reading.add(1));
        assert_eq!(reader.load(Ordering::Acquire), 50);
        // Read: the next large answer is taken again.
        reading.take(50);
        assert!(reading.add(60));
        reading.take(60);
        // A session with nothing unread is taken while the total was within its budget...
        let (third, other_third) = (tally(&other, &all), Arc::default());
        assert!(reading.add(95));
        assert!(
            !third.add(10),
            "within a session's budget, the total decides"
        );
        assert!(third.add(11), "the total was 95 of 100 before");
        // ... and not once it is past it: the total stays below its budget plus one answer.
        let fourth = tally(&other_third, &all);
        assert!(!fourth.add(5), "the total was 106 of 100 before");
        assert!(!fourth.add(20), "the total was 106 of 100 before");
        assert_eq!(all.load(Ordering::Acquire), 106);
    }
}
