//! Each HTTP/1.1 request's framing as the client sent it. hyper reads a request with both
//! `Content-Length` and `Transfer-Encoding` by the latter and drops the former before the
//! application sees the headers (closing the connection afterwards, as RFC 9112 §6.3 asks);
//! so that [`refuse_both_framings`] can refuse such a request instead, [`Watched`] reads the
//! connection's bytes beside hyper, follows each request's head and body framing, and
//! notes which requests carried both headers ([`Framing`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A head (or a chunk line) larger than this is not followed: the watch stops. Larger than
/// any head hyper takes (its read buffer is at most about 400 KiB), so every request hyper
/// serves is followed.
const MAX_HEAD_BYTES: usize = 512 * 1024;

/// What the watch learnt of one connection's requests, shared with its requests' handlers.
#[derive(Debug)]
pub struct Framing {
    /// The index (from 0) of the first request that carried both framings; `usize::MAX`
    /// while none did.
    both_at: AtomicUsize,
    /// Requests handed to the application so far.
    served: AtomicUsize,
}

impl Framing {
    /// A connection's record, none seen yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            both_at: AtomicUsize::new(usize::MAX),
            served: AtomicUsize::new(0),
        })
    }

    /// Called once per request, in the connection's order: whether that request carried
    /// both `Content-Length` and `Transfer-Encoding`.
    pub fn next_request_had_both(&self) -> bool {
        let index = self.served.fetch_add(1, Ordering::AcqRel);
        self.both_at.load(Ordering::Acquire) == index
    }
}

/// Where the watch is in the byte stream.
#[derive(Debug)]
enum State {
    /// Reading a request head (the bytes so far).
    Head(Vec<u8>),
    /// Skipping this many body bytes (`Content-Length`).
    Body(u64),
    /// Reading a chunk-size line (the bytes so far).
    ChunkSize(Vec<u8>),
    /// Skipping a chunk's data and its CRLF: this many bytes.
    ChunkData(u64),
    /// Reading trailer lines after the last chunk, until an empty one (the current line).
    Trailers(Vec<u8>),
    /// Not followed any more (HTTP/2, a head past [`MAX_HEAD_BYTES`], bytes that do not
    /// parse: hyper answers those itself).
    Off,
}

/// A connection whose bytes are followed as they are read.
pub struct Watched<S> {
    inner: S,
    state: State,
    requests: usize,
    framing: Arc<Framing>,
}

impl<S> Watched<S> {
    /// Watches `inner`, noting into `framing`.
    pub fn new(inner: S, framing: Arc<Framing>) -> Self {
        Self {
            inner,
            state: State::Head(Vec::new()),
            requests: 0,
            framing,
        }
    }

    /// Follows `bytes`, read just now.
    fn follow(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let state = std::mem::replace(&mut self.state, State::Off);
            self.state = match state {
                State::Off => return,
                State::Head(mut head) => {
                    if head.is_empty() {
                        // Blank lines before a request are allowed (RFC 9112 §2.2).
                        let skip = (bytes.iter().position(|b| !b"\r\n".contains(b)))
                            .unwrap_or(bytes.len());
                        bytes = &bytes[skip..];
                    }
                    // The blank line may straddle two reads: look from 3 bytes back.
                    let (from, had) = (head.len().saturating_sub(3), head.len());
                    head.extend_from_slice(bytes);
                    match head_end(&head[from..]) {
                        Some(end) => {
                            let end = from + end;
                            bytes = &bytes[end - had..];
                            head.truncate(end);
                            self.after_head(&head)
                        }
                        None => {
                            bytes = &[];
                            if head.len() > MAX_HEAD_BYTES {
                                State::Off
                            } else {
                                State::Head(head)
                            }
                        }
                    }
                }
                State::Body(left) => match skip(left, &mut bytes) {
                    0 => State::Head(Vec::new()),
                    left => State::Body(left),
                },
                State::ChunkData(left) => match skip(left, &mut bytes) {
                    0 => State::ChunkSize(Vec::new()),
                    left => State::ChunkData(left),
                },
                State::ChunkSize(line) => follow_line(line, &mut bytes, State::ChunkSize, |line| {
                    match chunk_size(line) {
                        Some(0) => State::Trailers(Vec::new()),
                        // The data, then its CRLF.
                        Some(size) => State::ChunkData(size.saturating_add(2)),
                        None => State::Off,
                    }
                }),
                State::Trailers(line) => follow_line(line, &mut bytes, State::Trailers, |line| {
                    if line.strip_suffix(b"\r").unwrap_or(line).is_empty() {
                        State::Head(Vec::new())
                    } else {
                        State::Trailers(Vec::new())
                    }
                }),
            };
        }
    }

    /// A whole request head was read: notes both framings, and says how its body is framed.
    fn after_head(&mut self, head: &[u8]) -> State {
        if head.starts_with(b"PRI * HTTP/2.0") {
            return State::Off;
        }
        let index = self.requests;
        self.requests += 1;
        // A Content-Length line counts whatever its value: hyper ignores it beside
        // Transfer-Encoding without parsing it.
        let (mut length, mut has_length, mut chunked, mut encoded) = (None, false, false, false);
        for line in head.split(|&b| b == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
            if name.eq_ignore_ascii_case(b"content-length") {
                has_length = true;
                length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                encoded = true;
                chunked = (value.rsplit(|&b| b == b',').next())
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            }
        }
        if encoded && has_length {
            let _ = self.framing.both_at.compare_exchange(
                usize::MAX,
                index,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            // hyper closes the connection after answering it: nothing later is served.
            return State::Off;
        }
        match (chunked, encoded, length) {
            (true, _, _) => State::ChunkSize(Vec::new()),
            (false, true, _) => State::Off,
            (false, false, Some(length)) if length > 0 => State::Body(length),
            // A length hyper refuses: it closes the connection.
            _ if has_length && length.is_none() => State::Off,
            _ => State::Head(Vec::new()),
        }
    }
}

/// Skips up to `left` bytes of `bytes` (a body's or a chunk's); how many are still to come.
fn skip(left: u64, bytes: &mut &[u8]) -> u64 {
    let used = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
    *bytes = &bytes[used..];
    left - used as u64
}

/// Reads on a line (a chunk size or a trailer) that `line` began: `waiting` with the line so
/// far when `bytes` end before it does, else `done` with the whole line (`bytes` then hold
/// what follows it). A line past [`MAX_HEAD_BYTES`] stops the watch.
fn follow_line(
    mut line: Vec<u8>,
    bytes: &mut &[u8],
    waiting: fn(Vec<u8>) -> State,
    done: impl FnOnce(&[u8]) -> State,
) -> State {
    match bytes.iter().position(|&b| b == b'\n') {
        None => {
            line.extend_from_slice(bytes);
            *bytes = &[];
            if line.len() > MAX_HEAD_BYTES {
                State::Off
            } else {
                waiting(line)
            }
        }
        Some(at) => {
            line.extend_from_slice(&bytes[..at]);
            *bytes = &bytes[at + 1..];
            done(&line)
        }
    }
}

/// Where the head in `bytes` ends: just past its first blank line (`\n\n` or `\n\r\n`).
fn head_end(bytes: &[u8]) -> Option<usize> {
    (bytes.iter().enumerate())
        .filter(|(_, b)| **b == b'\n')
        .find_map(|(at, _)| match &bytes[at + 1..] {
            [b'\n', ..] => Some(at + 2),
            [b'\r', b'\n', ..] => Some(at + 3),
            _ => None,
        })
}

/// A chunk-size line's size (hex digits before any `;` extension).
fn chunk_size(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let digits = line.split(|&b| b == b';').next()?.trim_ascii();
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(context, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.follow(&buf.filled()[before..]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(context, bytes)
    }

    fn poll_flush(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(context)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(context)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Middleware (outermost, on every route): refuses with 400 a request that carried both
/// `Content-Length` and `Transfer-Encoding` (RFC 9112 §6.1): a proxy in front may read its
/// body one way and this server the other (request smuggling), so neither is trusted.
pub async fn refuse_both_framings(
    axum::Extension(framing): axum::Extension<Arc<Framing>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if framing.next_request_had_both() {
        let message = "both Content-Length and Transfer-Encoding: send one framing";
        return (axum::http::StatusCode::BAD_REQUEST, message).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Follows `bytes` read in pieces of `piece` bytes; the index of the first request with
    /// both framings.
    fn both_at(bytes: &[u8], piece: usize) -> usize {
        let framing = Framing::new();
        let mut watched = Watched::new((), framing.clone());
        for part in bytes.chunks(piece) {
            watched.follow(part);
        }
        framing.both_at.load(Ordering::Acquire)
    }

    #[test]
    fn the_request_with_both_framings_is_found_however_the_bytes_arrive() {
        let stream = b"\r\nPOST /a HTTP/1.1\r\nContent-Length: 12\r\n\r\nTransfer-Enc\
            POST /b HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n\
            3;x=y\r\nabc\r\n0\r\nTrailer: Content-Length: 1\r\n\r\n\
            GET /c HTTP/1.1\n\n\
            POST /d HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n";
        for piece in 1..=stream.len() {
            assert_eq!(both_at(stream, piece), 3, "read {piece} bytes at a time");
        }
        let single = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n";
        assert_eq!(both_at(single, 7), usize::MAX);
        // A length that is no number, beside Transfer-Encoding (hyper never parses it).
        let unparsed =
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n";
        assert_eq!(both_at(unparsed, 5), 0);
        // A head of 70 KB (hyper takes up to about 400 KiB) before the one with both.
        let mut long = format!("GET / HTTP/1.1\r\nX-Pad: {}\r\n\r\n", "p".repeat(70_000));
        long.push_str(
            "POST /b HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!(both_at(long.as_bytes(), 4096), 1);
    }
}
