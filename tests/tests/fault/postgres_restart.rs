//! PostgreSQL stopped (`pg_ctl stop -m immediate`, a crash) and started again under load,
//! on a private cluster: while it is down every call fails fast with an error that says the
//! database is unavailable and `/healthz` answers 503; once it is back every call succeeds
//! again through the same engram process and sessions, and every acknowledged write is there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::cluster::Cluster;
use crate::harness::{Embedder, Figures, Graph, Mcp, Reply, Server, Store, bounded};

const CLIENTS: usize = 8;
/// The longest a call may take to fail while the database is down.
const FAIL_FAST: Duration = Duration::from_secs(5);
/// How long the database stays down.
const OUTAGE: Duration = Duration::from_secs(3);

/// One call of the load.
#[derive(Debug, Clone)]
struct Call {
    /// The node it creates (with two observations).
    node: String,
    sent: Instant,
    took: Duration,
    /// `None` when acknowledged, else the error.
    error: Option<String>,
}

pub async fn postgres_restarted_under_load() {
    bounded(Duration::from_secs(120), async {
        let cluster = Cluster::start().await;
        let store = Store::with_url(cluster.url(), Store::other_dir()).await;
        let mut server = Server::start(&store, &Embedder::None, "server").await;
        let pid = server.pid;
        let mut figures = Figures::new("Postgres/PostgreSQL restarted under load");

        let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut loaders = Vec::new();
        for c in 0..CLIENTS {
            let client = server.client().await;
            let (calls, stop) = (calls.clone(), stop.clone());
            loaders.push(tokio::spawn(load(c, client, calls, stop)));
        }
        let acknowledged = || {
            let calls = calls.lock().unwrap();
            calls.iter().filter(|c| c.error.is_none()).count()
        };
        while acknowledged() < 100 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        cluster.stop_immediately().await;
        let down_at = Instant::now();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, down_health) = server.healthz().await;
        assert_eq!(
            status, 503,
            "/healthz with the database down: {down_health}"
        );
        assert!(down_health.contains("unavailable"), "{down_health}");
        tokio::time::sleep(OUTAGE.saturating_sub(down_at.elapsed())).await;
        // The server accepts connections before `pg_ctl start` returns.
        let resuming_at = Instant::now();
        cluster.resume().await;
        let up_at = Instant::now();
        let (status, body) = server.healthz().await;
        assert_eq!(status, 200, "/healthz once the database is back: {body}");
        // Keep loading a while after the restart.
        tokio::time::sleep(Duration::from_secs(2)).await;
        stop.store(true, Ordering::SeqCst);
        for loader in loaders {
            loader.await.expect("a loader");
        }
        assert!(server.is_running(), "engram exited");
        assert_eq!(server.pid, pid);

        let calls = calls.lock().unwrap().clone();
        // Calls sent while the database was down, well clear of the moments it went and came.
        let during: Vec<&Call> = (calls.iter())
            .filter(|c| {
                c.sent > down_at + Duration::from_millis(200) && c.sent + c.took < resuming_at
            })
            .collect();
        assert!(
            during.len() >= CLIENTS,
            "only {} calls in the outage",
            during.len()
        );
        let succeeded_down: Vec<String> = (during.iter())
            .filter(|c| c.error.is_none())
            .map(|c| {
                format!(
                    "{} sent {:?} after the stop, took {:?}",
                    c.node,
                    c.sent - down_at,
                    c.took
                )
            })
            .collect();
        assert!(
            succeeded_down.is_empty(),
            "calls succeeded with the database down ({:?} after the stop it was started \
             again): {succeeded_down:?}",
            resuming_at - down_at
        );
        let slowest_failure = (during.iter()).map(|c| c.took).max().unwrap();
        assert!(
            slowest_failure < FAIL_FAST,
            "a call took {slowest_failure:?} to fail"
        );
        for call in &during {
            let error = call.error.as_deref().unwrap();
            assert!(error.contains("unavailable"), "an unclear error: {error}");
            // The database's host, port and name are the operator's: in the log, not here.
            assert!(
                !error.contains("127.0.0.1") && !error.contains("database "),
                "the error names the database: {error}"
            );
        }
        // After the restart: the first call sent afterwards succeeds, and every one after it.
        let after: Vec<&Call> = calls.iter().filter(|c| c.sent > up_at).collect();
        let failed_after: Vec<&&Call> = after.iter().filter(|c| c.error.is_some()).collect();
        assert!(
            after.len() >= CLIENTS,
            "only {} calls after the restart",
            after.len()
        );
        assert!(
            failed_after.is_empty(),
            "calls failed once the database was back: {failed_after:?}"
        );

        // Every acknowledged write is there, every failed one whole or absent.
        let reader = server.client().await;
        let graph = Graph::read(&reader).await;
        graph.assert_consistent();
        graph.assert_matches_stats(&reader).await;
        let expected =
            |node: &str| vec![(1, format!("{node} first")), (2, format!("{node} second"))];
        let mut lost = 0;
        let mut failed_but_committed = 0;
        for call in &calls {
            let found = graph.nodes.get(&call.node);
            match (&call.error, found) {
                (None, Some(observations)) => {
                    assert_eq!(*observations, expected(&call.node), "{}", call.node);
                }
                (None, None) => lost += 1,
                (Some(_), Some(observations)) => {
                    assert_eq!(*observations, expected(&call.node), "half written");
                    failed_but_committed += 1;
                }
                (Some(_), None) => {}
            }
        }
        let acknowledged = calls.iter().filter(|c| c.error.is_none()).count();
        figures
            .add("operations", calls.len())
            .add("acknowledged", acknowledged)
            .add("failed while down", during.len())
            .add(
                "slowest failure",
                format!("{:.0} ms", slowest_failure.as_secs_f64() * 1000.0),
            )
            .add("failed after restart", failed_after.len())
            .add("failed yet committed", failed_but_committed)
            .add("lost", lost);
        figures.print();
        println!(
            "fault: Postgres/PostgreSQL restarted under load: the error while down: {}; /healthz \
             while down: {down_health}",
            during[0].error.as_deref().unwrap_or_default()
        );
        assert_eq!(lost, 0, "acknowledged writes missing");
        drop(server);
        drop(cluster);
    })
    .await;
}

/// One client: a node with two observations per call, one after another, until `stop`.
async fn load(c: usize, client: Mcp, calls: Arc<Mutex<Vec<Call>>>, stop: Arc<AtomicBool>) {
    let mut k = 0;
    while !stop.load(Ordering::SeqCst) {
        let node = format!("c{c}-{k:05}");
        let entity = json!({"name": node, "entity_type": "loaded",
                            "observations": [format!("{node} first"), format!("{node} second")]});
        let sent = Instant::now();
        let reply = client
            .call("create_entities", json!({"entities": [entity]}))
            .await;
        let took = sent.elapsed();
        let error = match reply {
            Reply::Ok(_) => None,
            Reply::Failed(error) => Some(error),
            Reply::ToolError(error) => panic!("{node}: a tool error: {error}"),
        };
        let failed = error.is_some();
        calls.lock().unwrap().push(Call {
            node,
            sent,
            took,
            error,
        });
        k += 1;
        if failed {
            // A client retrying an outage waits a little between attempts.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
