//! `kill -9` in the middle of work: of the server during a batch load, of `engram import`
//! during a file, of the server while it indexes. After a restart every acknowledged write is
//! there, every batch is entirely present or entirely absent, and the indexer reaches full
//! coverage without embedding again what was already current.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::ollama::FakeOllama;
use crate::harness::{Backend, Embedder, Figures, Graph, Mcp, Reply, Server, Store, bounded};

/// Concurrent loaders, each with one batch in flight at a time.
const LOADERS: usize = 8;
/// Batches acknowledged before the kill.
const ACKNOWLEDGED_BEFORE_KILL: usize = 24;
/// Nodes per `create_entities` batch, observations per node.
const BATCH_NODES: usize = 40;
const NODE_OBSERVATIONS: usize = 5;
/// Entries per `add_observations` batch, contents per entry.
const ADD_ENTRIES: usize = 40;
const ADD_CONTENTS: usize = 3;

/// One batch: what it writes, `(node, contents)` per item.
#[derive(Debug, Clone)]
struct Batch {
    tool: &'static str,
    items: Vec<(String, Vec<String>)>,
}

impl Batch {
    fn arguments(&self) -> Value {
        match self.tool {
            "create_entities" => json!({"entities": (self.items.iter())
                .map(|(name, contents)| json!({"name": name, "entity_type": "loaded",
                                                "observations": contents}))
                .collect::<Vec<_>>()}),
            _ => json!({"observations": (self.items.iter())
                .map(|(name, contents)| json!({"entity_name": name, "contents": contents}))
                .collect::<Vec<_>>()}),
        }
    }

    /// How many of its items `graph` holds entirely; panics on an item half there (a node
    /// without all its initial observations, in order).
    fn present(&self, graph: &Graph) -> usize {
        let contents = graph.contents();
        let mut present = 0;
        for (name, written) in &self.items {
            let there = match self.tool {
                // Its initial observations are ordinals 1…n (add batches may follow).
                "create_entities" => graph.nodes.get(name).map(|observations| {
                    let initial: Vec<(i64, String)> = (1..).zip(written.iter().cloned()).collect();
                    let head = &observations[..initial.len().min(observations.len())];
                    assert_eq!(head, initial, "{name} half written: {observations:?}");
                }),
                _ => {
                    let found = written
                        .iter()
                        .filter(|c| contents.contains(c.as_str()))
                        .count();
                    assert!(
                        found == 0 || found == written.len(),
                        "{name}: {found} of {} contents of one entry",
                        written.len()
                    );
                    (found > 0).then_some(())
                }
            };
            present += usize::from(there.is_some());
        }
        present
    }
}

/// Eight clients load batches (nodes with observations, observations onto those nodes)
/// until 24 are acknowledged; then the server is killed with SIGKILL while each client has a
/// batch in flight. After a restart: every acknowledged batch whole, every batch in flight
/// whole or absent, nothing else.
pub async fn kill_9_during_a_batch_load(backend: Backend) {
    bounded(Duration::from_secs(120), async {
        let store = Store::fresh(backend).await;
        let mut server = Server::start(&store, &Embedder::None, "before-kill").await;
        let mut figures = Figures::new(format!("{backend:?}/kill -9 during a batch load"));
        let acknowledged: Arc<Mutex<Vec<Batch>>> = Arc::default();
        let mut loaders = Vec::new();
        for loader in 0..LOADERS {
            let client = server.client().await;
            loaders.push(tokio::spawn(load(loader, client, acknowledged.clone())));
        }
        let waiting = Instant::now();
        while acknowledged.lock().unwrap().len() < ACKNOWLEDGED_BEFORE_KILL {
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "the load made no progress: {} batches in 60 s",
                acknowledged.lock().unwrap().len()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.kill9().await;
        let mut unanswered = Vec::new();
        let mut sent = 0;
        for loader in loaders {
            let (count, last) = loader.await.expect("a loader");
            sent += count;
            unanswered.extend(last);
        }
        let acknowledged = acknowledged.lock().unwrap().clone();
        assert_eq!(sent, acknowledged.len() + unanswered.len());

        let restarted = Server::start(&store, &Embedder::None, "after-kill").await;
        let reader = restarted.client().await;
        let graph = Graph::read(&reader).await;
        graph.assert_consistent();
        graph.assert_matches_stats(&reader).await;
        let mut lost = 0;
        for batch in &acknowledged {
            lost += batch.items.len() - batch.present(&graph);
        }
        let mut committed_unanswered = 0;
        for batch in &unanswered {
            let present = batch.present(&graph);
            assert!(
                present == 0 || present == batch.items.len(),
                "a batch half written: {present} of {} items of {}",
                batch.items.len(),
                batch.tool
            );
            committed_unanswered += usize::from(present > 0);
        }
        // Nothing but what the batches wrote.
        let written: BTreeSet<&str> = (acknowledged.iter().chain(&unanswered))
            .flat_map(|batch| batch.items.iter().flat_map(|(_, c)| c.iter()))
            .map(String::as_str)
            .collect();
        let unknown_count = (graph.contents().iter())
            .filter(|content| !written.contains(**content))
            .count();
        figures
            .add("operations (batches)", sent)
            .add("acknowledged", acknowledged.len())
            .add("in flight at the kill", unanswered.len())
            .add("of which committed whole", committed_unanswered)
            .add("half written", 0)
            .add("lost (items)", lost)
            .add(
                "graph",
                format!(
                    "{} nodes / {} observations",
                    graph.nodes.len(),
                    graph.observation_count()
                ),
            );
        figures.print();
        assert_eq!(lost, 0, "acknowledged items missing after the restart");
        assert_eq!(unknown_count, 0, "contents no batch wrote");
        assert!(!unanswered.is_empty(), "the kill found no batch in flight");
    })
    .await;
}

/// One loader: batches one after another until a call fails (the server is gone). Returns
/// how many it sent and the one left unanswered.
async fn load(
    loader: usize,
    client: Mcp,
    acknowledged: Arc<Mutex<Vec<Batch>>>,
) -> (usize, Option<Batch>) {
    let mut nodes: Vec<String> = Vec::new();
    let mut sent = 0;
    for k in 0.. {
        let batch = if nodes.is_empty() || k % 2 == 0 {
            Batch {
                tool: "create_entities",
                items: (0..BATCH_NODES)
                    .map(|i| {
                        let name = format!("l{loader}-b{k}-n{i}");
                        let contents = (0..NODE_OBSERVATIONS)
                            .map(|o| format!("l{loader} b{k} n{i} observation {o}"))
                            .collect();
                        (name, contents)
                    })
                    .collect(),
            }
        } else {
            Batch {
                tool: "add_observations",
                items: (0..ADD_ENTRIES)
                    .map(|i| {
                        let name = nodes[(k * 7 + i * 13) % nodes.len()].clone();
                        let contents = (0..ADD_CONTENTS)
                            .map(|o| format!("l{loader} b{k} e{i} added {o}"))
                            .collect();
                        (name, contents)
                    })
                    .collect(),
            }
        };
        // One entry per node in an add batch (an entry's contents are one unit).
        let batch = dedupe(batch);
        sent += 1;
        match client.call(batch.tool, batch.arguments()).await {
            Reply::Ok(_) => {
                if batch.tool == "create_entities" {
                    nodes.extend(batch.items.iter().map(|(name, _)| name.clone()));
                }
                acknowledged.lock().unwrap().push(batch);
            }
            Reply::Failed(_) => return (sent, Some(batch)),
            Reply::ToolError(text) => panic!("{}: {text}", batch.tool),
        }
    }
    unreachable!()
}

fn dedupe(mut batch: Batch) -> Batch {
    let mut seen = BTreeSet::new();
    batch.items.retain(|(name, _)| seen.insert(name.clone()));
    batch
}

/// Lines of the import file: entities, each followed by a relation to the one before.
const IMPORT_NODES: usize = 12_000;
const IMPORT_OBSERVATIONS: usize = 3;
/// The import is killed once this many nodes are visible (a few batches in).
const KILL_IMPORT_AFTER: u64 = 1_500;
/// Nodes per import batch (`bins/engram/src/import.rs`, `BATCH_NODES`): what was committed
/// before the kill is a whole number of these.
const IMPORT_BATCH: usize = 500;

/// `engram import` of a 12,000-node file killed with SIGKILL once three batches are
/// visible: what it wrote is a prefix of the file in whole batches (nodes with all their
/// observations and relations); run again, it completes the graph exactly, nothing twice.
pub async fn kill_9_during_import(backend: Backend) {
    bounded(Duration::from_secs(150), async {
        let store = Store::fresh(backend).await;
        let file = store.dir.join("memory.jsonl");
        let name = |i: usize| format!("imported-{i:05}");
        let mut lines = String::new();
        for i in 0..IMPORT_NODES {
            let observations: Vec<String> = (0..IMPORT_OBSERVATIONS)
                .map(|o| format!("{} fact {o}", name(i)))
                .collect();
            let entity = json!({"type": "entity", "name": name(i), "entityType": "imported",
                                "observations": observations});
            writeln!(lines, "{entity}").unwrap();
            if i > 0 {
                let relation = json!({"type": "relation", "from": name(i), "to": name(i - 1),
                                      "relationType": "follows"});
                writeln!(lines, "{relation}").unwrap();
            }
        }
        std::fs::write(&file, lines).unwrap();
        let server = Server::start(&store, &Embedder::None, "watcher").await;
        let watcher = server.client().await;
        let mut figures = Figures::new(format!("{backend:?}/kill -9 during engram import"));

        let mut import = crate::harness::binary::command()
            .arg("import")
            .arg(&file)
            .args(["--workspace", store.workspace, "--database-url", &store.url])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("starting engram import");
        let started = Instant::now();
        let seen_at_kill = loop {
            if let Some(status) = import.try_wait().unwrap() {
                panic!("engram import finished ({status}) before it could be killed");
            }
            let stats = watcher.ok("get_stats", json!({})).await;
            let nodes = stats["node_count"].as_u64().unwrap();
            if nodes >= KILL_IMPORT_AFTER {
                import.start_kill().unwrap();
                break nodes;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "engram import wrote nothing in 60 s"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let status = import.wait().await.unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "engram import was not killed: {status}"
        );

        let graph = Graph::read(&watcher).await;
        graph.assert_consistent();
        graph.assert_matches_stats(&watcher).await;
        let committed = graph.nodes.len();
        let prefix: Vec<String> = (0..committed).map(name).collect();
        let present: Vec<String> = graph.nodes.keys().cloned().collect();
        assert_eq!(
            present, prefix,
            "what the import wrote is not a prefix of the file"
        );
        assert_eq!(
            committed % IMPORT_BATCH,
            0,
            "{committed} nodes is not a whole number of import batches of {IMPORT_BATCH}: a \
             batch was half written (or import.rs's BATCH_NODES changed)"
        );
        assert!(
            committed < IMPORT_NODES,
            "the kill came after the last batch"
        );
        for (node, observations) in &graph.nodes {
            let texts: Vec<String> = observations.iter().map(|(_, c)| c.clone()).collect();
            let expected: Vec<String> = (0..IMPORT_OBSERVATIONS)
                .map(|o| format!("{node} fact {o}"))
                .collect();
            assert_eq!(texts, expected, "{node}: observations half written");
        }
        let relations: BTreeSet<(String, String)> = (graph.relations.iter())
            .map(|(from, to, _)| (from.clone(), to.clone()))
            .collect();
        let expected: BTreeSet<(String, String)> =
            (1..committed).map(|i| (name(i), name(i - 1))).collect();
        assert_eq!(relations, expected, "relations of a half-written batch");

        // Run again to the end: the rest arrives, nothing twice.
        let finished = crate::harness::binary::run(
            &[
                "import",
                file.to_str().unwrap(),
                "--workspace",
                store.workspace,
            ],
            &store.url,
        )
        .await;
        assert!(
            finished.status.success(),
            "{}",
            String::from_utf8_lossy(&finished.stderr)
        );
        let graph = Graph::read(&watcher).await;
        let relations = graph.assert_consistent();
        graph.assert_matches_stats(&watcher).await;
        let mut lost = IMPORT_NODES.saturating_sub(graph.nodes.len());
        for i in 0..IMPORT_NODES {
            let expected: Vec<(i64, String)> = (0..IMPORT_OBSERVATIONS)
                .map(|o| (o as i64 + 1, format!("{} fact {o}", name(i))))
                .collect();
            if graph.nodes.get(&name(i)) != Some(&expected) {
                lost += 1;
            }
        }
        figures
            .add("operations (lines)", IMPORT_NODES * 2 - 1)
            .add("nodes seen when killed", seen_at_kill)
            .add(
                "committed before the kill",
                format!("{committed} nodes ({} batches)", committed / IMPORT_BATCH),
            )
            .add("half written", 0)
            .add(
                "after the second run",
                format!(
                    "{} nodes / {} observations / {relations} relations",
                    graph.nodes.len(),
                    graph.observation_count()
                ),
            )
            .add("lost", lost);
        figures.print();
        assert_eq!(lost, 0);
        assert_eq!(graph.nodes.len(), IMPORT_NODES);
        assert_eq!(
            graph.observation_count(),
            IMPORT_NODES * IMPORT_OBSERVATIONS
        );
        assert_eq!(relations, IMPORT_NODES - 1);
    })
    .await;
}

/// Observations written before indexing starts in earnest.
const INDEXED_NODES: usize = 400;
const INDEXED_OBSERVATIONS: usize = 4;
/// Texts per indexer pass (`bins/engram/src/indexing.rs`, `BATCH_SIZE`): at most one pass's
/// texts are embedded again after a kill (embedded, not yet stored).
const INDEX_BATCH: usize = 64;

/// The server is killed with SIGKILL while its indexer works through 1,600 observations
/// (the fake Ollama answers each batch after 25 ms). After a restart the indexer reaches
/// full coverage, and the fake has embedded each text once, except at most the one batch
/// that was in flight.
pub async fn kill_9_during_indexing(backend: Backend) {
    bounded(Duration::from_secs(120), async {
        let ollama = FakeOllama::start(Duration::from_millis(25)).await;
        let embedder = Embedder::Ollama(ollama.url());
        let store = Store::fresh(backend).await;
        let mut server = Server::start(&store, &embedder, "before-kill").await;
        let mut figures = Figures::new(format!("{backend:?}/kill -9 during indexing"));
        let client = server.client().await;
        for chunk in 0..INDEXED_NODES / 50 {
            let entities: Vec<Value> = (0..50)
                .map(|i| {
                    let n = chunk * 50 + i;
                    let observations: Vec<String> = (0..INDEXED_OBSERVATIONS)
                        .map(|o| format!("node {n} keeps fact {o} about indexing"))
                        .collect();
                    json!({"name": format!("indexed-{n:04}"), "entity_type": "thing",
                           "observations": observations})
                })
                .collect();
            client
                .ok("create_entities", json!({"entities": entities}))
                .await;
        }
        let total = INDEXED_NODES * INDEXED_OBSERVATIONS;
        let waiting = Instant::now();
        while ollama.embedded() < (total / 4) as u64 {
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "the indexer embedded {} texts in 60 s",
                ollama.embedded()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.kill9().await;
        let before_kill = ollama.embedded();
        assert!(
            before_kill < total as u64,
            "indexing was over before the kill ({before_kill} texts)"
        );

        let restarted = Server::start(&store, &embedder, "after-kill").await;
        let client = restarted.client().await;
        let coverage_at_restart = client.ok("get_stats", json!({})).await["embedding_coverage"]
            .as_f64()
            .unwrap();
        let waiting = Instant::now();
        loop {
            let stats = client.ok("get_stats", json!({})).await;
            if stats["embedding_coverage"].as_f64() == Some(1.0) {
                break;
            }
            assert!(
                waiting.elapsed() < Duration::from_secs(60),
                "coverage stuck at {stats} 60 s after the restart"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let documents: HashMap<String, u32> = (ollama.texts().into_iter())
            .filter(|(text, _)| text != "engram")
            .collect();
        let embedded: u64 = documents.values().map(|&n| u64::from(n)).sum();
        let again = embedded - documents.len() as u64;
        figures
            .add("operations (observations to embed)", total)
            .add("embedded before the kill", before_kill)
            .add("coverage at restart", format!("{coverage_at_restart:.3}"))
            .add("acknowledged (embedded, distinct)", documents.len())
            .add("texts embedded in all", embedded)
            .add("embedded twice", again)
            .add("lost", total - documents.len().min(total));
        figures.print();
        assert_eq!(documents.len(), total, "every observation embedded");
        assert!(
            again <= INDEX_BATCH as u64,
            "{again} texts embedded again after the restart (at most one batch of {INDEX_BATCH} \
             may have been in flight, if indexing.rs's BATCH_SIZE is still that)"
        );
        assert!(coverage_at_restart < 1.0);
    })
    .await;
}
