//! What a stopping server waits for: every `/mcp` POST until its answer has been sent, and
//! (through `EngramServer::with_call_tracker`) every tool call of the legacy SSE transport
//! until its answer is built. `super::serve` refuses new requests, waits for both, and only
//! then ends streams and sessions, so Ctrl-C answers what clients already asked.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// Middleware on `/mcp`: counts each POST in `calls` until its answer's body has ended (or
/// was dropped: the client left). A GET's standing stream is not counted.
pub async fn count_posts(
    State(calls): State<TaskTracker>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let counted = calls.token();
    let (parts, body) = next.run(request).await.into_parts();
    Response::from_parts(
        parts,
        Body::new(Counted {
            body,
            _counted: counted,
        }),
    )
}

/// A body that holds its request's place in the count until it is done.
struct Counted {
    body: Body,
    _counted: TaskTrackerToken,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(context)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
