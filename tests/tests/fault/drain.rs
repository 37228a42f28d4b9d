//! A server stopped with SIGTERM behind a load balancer (`--drain`): while it drains,
//! `/healthz` and every new request answer 503 with `Connection: close`, so a balancer takes
//! it out of rotation; the call in flight when the signal came finishes and is answered; the
//! other server on the same store serves the client's next calls, its write included; the
//! stopped process exits 0 once the drain is over and nothing is in flight. Without a drain,
//! Ctrl-C answers the calls in flight, then stops, and logs no error.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Backend, Embedder, Figures, Mcp, Reply, Server, Store, bounded};

/// How long the stopping server drains: longer than the call in flight takes on a loaded
/// machine (2–4 s in the debug build; at 3 s the drain once ended it first).
const DRAIN: Duration = Duration::from_secs(8);

pub async fn a_stopped_server_drains_and_another_serves_its_clients(backend: Backend) {
    bounded(Duration::from_secs(180), async {
        let store = Store::fresh(backend).await;
        let mut stopping =
            Server::start_with(&store, &Embedder::None, "stopping", &["--drain", "8s"]).await;
        let other = Server::start(&store, &Embedder::None, "other").await;
        let client = stopping.client().await;
        client
            .ok(
                "create_entities",
                json!({"entities": [{"name": "large", "entity_type": "note"}]}),
            )
            .await;
        // A call that takes a while (seconds in the debug build): in flight at the signal.
        let texts: Vec<String> = (0..150)
            .map(|i| {
                format!(
                    "note {i}: {}",
                    "the deploy pipeline caches artifacts ".repeat(1_500)
                )
            })
            .collect();
        let arguments = json!({"observations": [{"entity_name": "large", "contents": texts}]});
        // The client writes the request only once it has serialised its 8 MB (hundreds of
        // milliseconds in a debug build on a loaded machine): the signal waits for that too,
        // or the request would rightly meet a draining server (and its body a closed pipe).
        let serialising = Instant::now();
        let bytes = serde_json::to_vec(&arguments).unwrap().len();
        let head_start = Duration::from_millis(300) + 2 * serialising.elapsed();
        assert!(bytes > 8_000_000, "{bytes} bytes");
        let in_flight = tokio::spawn(async move {
            let started = Instant::now();
            let answer = client.call("add_observations", arguments).await;
            (answer, started.elapsed())
        });
        tokio::time::sleep(head_start).await;
        let signalled = Instant::now();
        stopping.terminate();
        tokio::time::sleep(Duration::from_millis(200)).await;

        let (status, body) = stopping.healthz().await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("draining"), "{body}");
        let refused = Mcp::connect(&stopping.base, store.workspace).await;
        let refusal = refused
            .err()
            .expect("a new session on a draining server is refused");
        assert!(refusal.contains("503"), "{refusal}");

        let (answer, took) = in_flight.await.unwrap();
        let added = answer.expect_ok("add_observations");
        assert_eq!(
            added["results"][0]["added"].as_array().map(Vec::len),
            Some(150)
        );
        // The client's next calls, on the other server: its write is there.
        let next = other.client().await;
        let opened = next.ok("open_nodes", json!({"names": ["large"]})).await;
        let facts = opened["entities"][0]["observations"]
            .as_array()
            .map(Vec::len);
        assert_eq!(facts, Some(150));
        let code = stopping
            .exited_within(DRAIN + Duration::from_secs(10))
            .await;
        let exited = signalled.elapsed();
        assert_eq!(code, Some(0), "the stopped server's exit code");
        assert!(
            exited >= DRAIN,
            "exited {exited:?} after the signal, before the drain ended"
        );
        Figures::new(format!("{backend:?}/drain"))
            .add("call in flight s", format!("{:.1}", took.as_secs_f64()))
            .add(
                "exited after the signal s",
                format!("{:.1}", exited.as_secs_f64()),
            )
            .print();
    })
    .await;
}

/// Ctrl-C (SIGINT) while clients have calls in flight on several sessions: each call is
/// answered, the process exits 0, and its log holds no error (it once cut the calls off and
/// logged each as an internal error, and rmcp's sessions as failing to close).
pub async fn ctrl_c_answers_the_calls_in_flight_and_logs_no_error(backend: Backend) {
    bounded(Duration::from_secs(180), async {
        let store = Store::fresh(backend).await;
        let mut server = Server::start(&store, &Embedder::None, "stopping").await;
        let setup = server.client().await;
        let texts: Vec<String> = (0..40)
            .map(|i| format!("note {i}: {}", "the deploy pipeline caches artifacts ".repeat(500)))
            .collect();
        setup
            .ok(
                "create_entities",
                json!({"entities": [{"name": "large", "entity_type": "note", "observations": texts}]}),
            )
            .await;
        let mut in_flight = Vec::new();
        for number in 0..3 {
            let client = server.client().await;
            in_flight.push(tokio::spawn(async move {
                let texts: Vec<String> = (0..60)
                    .map(|i| format!("fact {number}-{i}: {}", "a long text to store ".repeat(900)))
                    .collect();
                let added = client
                    .call(
                        "add_observations",
                        json!({"observations": [{"entity_name": "large", "contents": texts}]}),
                    )
                    .await;
                let report = client.call("get_consolidation_report", json!({})).await;
                (added, report)
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.interrupt();
        for call in in_flight {
            let (added, report) = call.await.unwrap();
            let added = added.expect_ok("add_observations");
            assert_eq!(added["results"][0]["added"].as_array().map(Vec::len), Some(60));
            // Asked after the signal: answered, or refused before it was read (503, a new
            // connection refused, a kept one closed as the request was sent), never cut off.
            match report {
                Reply::Ok(_) => {}
                Reply::Failed(refusal) => assert!(
                    ["503", "(Connect)", "(SendRequest)"]
                        .iter()
                        .any(|refused| refusal.contains(refused)),
                    "{refusal}"
                ),
                Reply::ToolError(error) => panic!("get_consolidation_report: {error}"),
            }
        }
        let code = server.exited_within(Duration::from_secs(40)).await;
        assert_eq!(code, Some(0), "the stopped server's exit code");
        let log = server.log_text();
        let errors: Vec<&str> = (log.lines())
            .filter(|line| line.contains(" ERROR ") || line.contains(" WARN "))
            .collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        assert!(log.contains("engram stopped"), "{log}");
    })
    .await;
}
