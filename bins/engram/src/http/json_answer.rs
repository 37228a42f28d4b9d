//! Streamable HTTP answers as one JSON body. rmcp answers every request of a session as an
//! SSE stream, and the official Python SDK (`mcp` 2.x) refuses one SSE event over 1 MiB at its
//! defaults, so a large `open_nodes` or `add_observations` answer reached it as an error after
//! the call had done its work. The Streamable HTTP specification (2025-06-18, "Sending Messages
//! to the Server") lets the server answer a POST either way: where the client accepts
//! `application/json` and the stream's first message is the answer itself, the answer goes as
//! `application/json` (no event size applies); a stream that begins with a notification or a
//! request (progress, sampling) stays a stream, byte for byte.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

/// Middleware on `/mcp`: reads a POST's SSE answer up to its first message and, when that is
/// the JSON-RPC response or error and the client accepts JSON, answers with it as
/// `application/json` (status and headers kept: `Mcp-Session-Id` among them).
pub async fn prefer_json(request: Request, next: Next) -> Response {
    let wanted = request.method() == Method::POST && accepts_json(request.headers());
    let response = next.run(request).await;
    if !wanted || !is_event_stream(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut events = Events::default();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        events.read(&chunk);
        match events.first_message() {
            First::Pending => continue,
            First::Answer(json) => {
                parts.headers.remove(header::CONTENT_LENGTH);
                parts.headers.remove(header::CACHE_CONTROL);
                parts.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return Response::from_parts(parts, Body::from(json));
            }
            First::Other => break,
        }
    }
    // A stream that is not one answer (or ended or failed before it): sent on as it came.
    let read = futures::stream::once(async move { Ok::<_, axum::Error>(events.into_bytes()) });
    Response::from_parts(parts, Body::from_stream(read.chain(stream)))
}

fn accepts_json(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value.split(',').any(|media| {
                let essence = media.split(';').next().unwrap_or("").trim();
                essence.eq_ignore_ascii_case("application/json") || essence == "*/*"
            })
        })
    })
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"))
}

/// What the stream read so far begins with.
#[derive(Debug, PartialEq)]
enum First {
    /// No message yet: only comments, the priming event, or part of an event.
    Pending,
    /// The first message is a JSON-RPC response or error: its JSON text.
    Answer(String),
    /// The first message is something else (a notification, a request, not JSON).
    Other,
}

/// The bytes of an SSE stream read so far, and how far its complete events were looked at.
#[derive(Default)]
struct Events {
    bytes: Vec<u8>,
    /// Where the first event not yet looked at begins.
    looked: usize,
}

impl Events {
    fn read(&mut self, chunk: &Bytes) {
        self.bytes.extend_from_slice(chunk);
    }

    fn into_bytes(self) -> Bytes {
        Bytes::from(self.bytes)
    }

    /// Looks at each complete event not looked at yet (the SSE format: lines ending in LF,
    /// CR LF or CR; an event ends at a blank line; `data:` lines joined by LF).
    fn first_message(&mut self) -> First {
        while let Some((event, next)) = next_event(&self.bytes[self.looked..]) {
            self.looked += next;
            let Some(data) = event_data(event) else {
                continue;
            };
            return match serde_json::from_str::<Head>(&data) {
                Ok(head) if head.is_answer() => First::Answer(data),
                _ => First::Other,
            };
        }
        First::Pending
    }
}

/// The first complete event in `bytes` and where the rest begins.
fn next_event(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let mut line_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let end = match bytes[at] {
            b'\n' => at + 1,
            // CR LF, or CR alone once the next byte is known (a CR at the end may be CR LF).
            b'\r' if at + 1 < bytes.len() => at + 1 + usize::from(bytes[at + 1] == b'\n'),
            b'\r' => return None,
            _ => {
                at += 1;
                continue;
            }
        };
        if at == line_start {
            return Some((&bytes[..line_start], end));
        }
        line_start = end;
        at = end;
    }
    None
}

/// The data of one event, `None` when it carries none (a comment, the priming event).
fn event_data(event: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(event).replace("\r\n", "\n");
    let mut data: Option<String> = None;
    for line in text.split(['\n', '\r']) {
        let Some(value) = line.strip_prefix("data") else {
            continue;
        };
        let value = match value.strip_prefix(':') {
            Some(value) => value.strip_prefix(' ').unwrap_or(value),
            None if value.is_empty() => "",
            None => continue,
        };
        match &mut data {
            Some(data) => {
                data.push('\n');
                data.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
    data.filter(|data| !data.is_empty())
}

/// Which members a JSON-RPC message has, read without keeping any value (an answer may be
/// tens of megabytes).
#[derive(serde::Deserialize)]
struct Head {
    id: Option<serde::de::IgnoredAny>,
    method: Option<serde::de::IgnoredAny>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

impl Head {
    /// A response or an error: an `id` with `result` or `error`, and no `method`.
    fn is_answer(&self) -> bool {
        self.method.is_none()
            && self.id.is_some()
            && (self.result.is_some() || self.error.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(stream: &str) -> First {
        let mut events = Events::default();
        events.read(&Bytes::copy_from_slice(stream.as_bytes()));
        events.first_message()
    }

    #[test]
    fn the_answer_after_the_priming_event_and_a_comment_is_found() {
        let stream = "id: 0\nretry: 3000\ndata:\n\n:ping\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nid: 1\n\n";
        assert_eq!(
            first(stream),
            First::Answer(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned())
        );
    }

    #[test]
    fn crlf_and_cr_lines_end_events_too() {
        let answer = r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"m"}}"#;
        assert_eq!(
            first(&format!("data:\r\n\r\ndata: {answer}\r\n\r\n")),
            First::Answer(answer.to_owned())
        );
        // A CR that ends what was read may be half of CR LF: the next byte decides.
        assert_eq!(
            first(&format!("data:\r\rdata: {answer}\r\r:\r")),
            First::Answer(answer.to_owned())
        );
    }

    #[test]
    fn a_notification_first_keeps_the_stream() {
        let stream = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        assert_eq!(first(stream), First::Other);
        assert_eq!(first("data: not json\n\n"), First::Other);
    }

    #[test]
    fn an_event_cut_off_waits_for_the_rest() {
        let mut events = Events::default();
        let stream = "data:\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"x\":1}}\n\n";
        for piece in stream.as_bytes().chunks(5) {
            events.read(&Bytes::copy_from_slice(piece));
            if let First::Answer(json) = events.first_message() {
                assert_eq!(json, r#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#);
                return;
            }
        }
        panic!("the answer was never found");
    }

    #[test]
    fn a_cr_at_the_end_of_what_was_read_may_be_half_of_crlf() {
        assert_eq!(first("data: {}\r"), First::Pending);
        assert_eq!(
            next_event(b"data: x\r\n\r\nrest"),
            Some((&b"data: x\r\n"[..], 11))
        );
    }
}
