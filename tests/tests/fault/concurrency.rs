//! Two `engram serve` processes on one store, 8 clients each, 2,000 mixed writes between
//! them (create nodes, add, replace and delete observations, create and delete relations,
//! delete nodes), all aimed at the same rows: every acknowledged write is read back, ordinals
//! per node are unique and never handed out twice, no relation dangles, and nothing appears
//! that no call wrote.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Backend, Embedder, Figures, Graph, Mcp, Reply, Rng, Server, Store, bounded};

const SERVERS: usize = 2;
const CLIENTS_PER_SERVER: usize = 8;
const WRITES: usize = 2_000;
const SHARED_NODES: usize = 24;

type Triple = (String, String, String);

/// Everything acknowledged, from every client: the expected graph.
#[derive(Default)]
struct Ledger {
    /// Node → alive (created and not deleted).
    nodes: HashMap<String, bool>,
    /// Every name ever created, for clients to aim at (some deleted since).
    names: Vec<String>,
    /// `(node, ordinal)` → its content now, or `None` once deleted.
    observations: HashMap<(String, i64), Option<String>>,
    /// How often each `(node, ordinal)` was handed out by an acknowledged write.
    handed_out: HashMap<(String, i64), u32>,
    /// Relation → present.
    relations: HashMap<Triple, bool>,
    /// `replace_observation` answers whose `old_content` was not the last acknowledged one.
    stale_reads: Vec<String>,
}

impl Ledger {
    fn observation(&mut self, node: &str, ordinal: i64, content: &str) {
        let key = (node.to_owned(), ordinal);
        *self.handed_out.entry(key.clone()).or_default() += 1;
        self.observations.insert(key, Some(content.to_owned()));
    }

    fn node(&mut self, name: &str) {
        self.nodes.insert(name.to_owned(), true);
        self.names.push(name.to_owned());
    }
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    writes: usize,
    acknowledged: usize,
    /// Tool errors a concurrent delete explains ("not found", "conflict").
    refused: usize,
    /// Other tool errors and calls without an answer.
    failures: Vec<String>,
}

/// What a client itself wrote and may still change: only the writer of an observation
/// replaces or deletes it, only the creator of a node deletes it, and each client's
/// relations carry its own type, so every acknowledgement has one author.
#[derive(Default)]
struct Own {
    nodes: Vec<String>,
    observations: Vec<(String, i64)>,
    relations: Vec<Triple>,
}

pub async fn two_servers_share_a_store_under_mixed_writes(backend: Backend) {
    bounded(Duration::from_secs(150), async {
        let store = Store::fresh(backend).await;
        let (a, b) = tokio::join!(
            Server::start(&store, &Embedder::None, "server-a"),
            Server::start(&store, &Embedder::None, "server-b")
        );
        let servers = [a, b];
        let mut figures = Figures::new(format!("{backend:?}/two servers, 16 clients"));
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let setup = servers[0].client().await;
        let shared: Vec<Value> = (0..SHARED_NODES)
            .map(|i| {
                json!({"name": format!("shared-{i:02}"), "entity_type": "shared",
                            "observations": [format!("shared {i} seed")]})
            })
            .collect();
        setup
            .ok("create_entities", json!({"entities": shared}))
            .await;
        {
            let mut ledger = ledger.lock().unwrap();
            for i in 0..SHARED_NODES {
                let name = format!("shared-{i:02}");
                ledger.node(&name);
                ledger.observation(&name, 1, &format!("shared {i} seed"));
            }
        }

        let clients = SERVERS * CLIENTS_PER_SERVER;
        let mut tasks = Vec::new();
        for c in 0..clients {
            let client = servers[c % SERVERS].client().await;
            let ledger = ledger.clone();
            tasks.push(tokio::spawn(run_client(
                c,
                client,
                ledger,
                WRITES / clients,
            )));
        }
        let mut total = Tally::default();
        for task in tasks {
            let tally = task.await.expect("a client task");
            total.writes += tally.writes;
            total.acknowledged += tally.acknowledged;
            total.refused += tally.refused;
            total.failures.extend(tally.failures);
        }
        let load_time = figures.elapsed().as_secs_f64();
        assert!(
            total.failures.is_empty(),
            "{} of {} writes failed without a reason a concurrent write explains: {:?}",
            total.failures.len(),
            total.writes,
            &total.failures[..total.failures.len().min(10)]
        );

        // Read back through a new session on the other server.
        let reader = servers[1].client().await;
        let graph = Graph::read(&reader).await;
        let relations_checked = graph.assert_consistent();
        let ledger = Arc::into_inner(ledger)
            .expect("the clients are done")
            .into_inner()
            .unwrap();
        let check = compare(&ledger, &graph);
        for server in &servers {
            graph.assert_matches_stats(&server.client().await).await;
        }
        figures
            .add("operations", total.writes)
            .add("acknowledged", total.acknowledged)
            .add("refused by a concurrent delete", total.refused)
            .add("lost", check.lost.len())
            .add("ordinals handed out twice", check.reused.len())
            .add("unwritten content", check.phantom.len())
            .add("deleted but back", check.resurrected.len())
            .add("stale replace reads", ledger.stale_reads.len())
            .add(
                "graph",
                format!(
                    "{} nodes / {} observations / {relations_checked} relations",
                    graph.nodes.len(),
                    graph.observation_count()
                ),
            )
            .add(
                "writes/s",
                format!("{:.0}", total.writes as f64 / load_time),
            );
        figures.print();
        assert_eq!(total.writes, WRITES);
        assert!(check.lost.is_empty(), "lost: {:?}", check.lost);
        assert!(check.reused.is_empty(), "reused: {:?}", check.reused);
        assert!(
            check.phantom.is_empty(),
            "never written: {:?}",
            check.phantom
        );
        assert!(
            check.resurrected.is_empty(),
            "deleted, yet present: {:?}",
            check.resurrected
        );
        assert!(
            ledger.stale_reads.is_empty(),
            "replace_observation saw another text than the last acknowledged one: {:?}",
            ledger.stale_reads
        );
        // The load really was mixed and concurrent.
        assert!(
            total.acknowledged > WRITES * 3 / 4,
            "{}",
            total.acknowledged
        );
    })
    .await;
}

/// One client's writes, one after another.
async fn run_client(c: usize, client: Mcp, ledger: Arc<Mutex<Ledger>>, writes: usize) -> Tally {
    let mut rng = Rng::new(c as u64 + 1);
    let mut own = Own::default();
    let mut tally = Tally::default();
    for k in 0..writes {
        let roll = rng.below(100);
        let (tool, arguments) = match roll {
            _ if roll < 14 || (roll >= 90 && own.nodes.is_empty()) => {
                create_entities(c, k, &mut rng)
            }
            _ if roll < 56 && (roll < 44 || own.observations.is_empty()) => {
                add_observations(c, k, &mut rng, &ledger)
            }
            _ if roll < 56 => {
                let (node, ordinal) = rng.pick(&own.observations).clone();
                let content = format!("c{c} k{k} replaced text about {}", word(&mut rng));
                let arguments = json!({"entity_name": node, "ordinal": ordinal,
                                       "new_content": content});
                ("replace_observation", arguments)
            }
            _ if roll < 66 && !own.observations.is_empty() => {
                let (node, ordinal) = rng.pick(&own.observations).clone();
                let arguments =
                    json!({"deletions": [{"entity_name": node, "ordinals": [ordinal]}]});
                ("delete_observations", arguments)
            }
            _ if roll < 82 || own.relations.is_empty() && roll < 90 => {
                create_relations(c, &mut rng, &ledger)
            }
            _ if roll < 90 => {
                let (from, to, kind) = rng.pick(&own.relations).clone();
                let arguments = json!({"relations": [
                    {"from_entity": from, "to_entity": to, "relation_type": kind}]});
                ("delete_relations", arguments)
            }
            _ => {
                let node = own.nodes.swap_remove(rng.below(own.nodes.len()));
                ("delete_entities", json!({"entity_names": [node]}))
            }
        };
        tally.writes += 1;
        match client.call(tool, arguments.clone()).await {
            Reply::Ok(result) => {
                tally.acknowledged += 1;
                let mut ledger = ledger.lock().unwrap();
                record(&mut ledger, &mut own, tool, &arguments, &result);
            }
            Reply::ToolError(text) if text.contains("not found") || text.contains("conflict") => {
                tally.refused += 1;
                // The observation's node was deleted: it is gone, not ours to change.
                if tool == "replace_observation" {
                    let key = (
                        arguments["entity_name"].as_str().unwrap().to_owned(),
                        arguments["ordinal"].as_i64().unwrap(),
                    );
                    own.observations.retain(|o| *o != key);
                }
            }
            other => tally.failures.push(format!("{tool}: {other:?}")),
        }
    }
    tally
}

fn create_entities(c: usize, k: usize, rng: &mut Rng) -> (&'static str, Value) {
    let mut entities: Vec<Value> = (0..1 + rng.below(3))
        .map(|j| {
            let observations: Vec<String> = (0..rng.below(3))
                .map(|o| format!("c{c} k{k} n{j} fact {o} about {}", word(rng)))
                .collect();
            json!({"name": format!("c{c}-k{k}-{j}"), "entity_type": "thing",
                   "observations": observations})
        })
        .collect();
    if rng.below(5) == 0 {
        // An existing name: left exactly as it is, its observations not added.
        entities.push(
            json!({"name": format!("shared-{:02}", rng.below(SHARED_NODES)),
                             "entity_type": "shared",
                             "observations": [format!("c{c} k{k} must not be added")]}),
        );
    }
    ("create_entities", json!({"entities": entities}))
}

fn add_observations(
    c: usize,
    k: usize,
    rng: &mut Rng,
    ledger: &Mutex<Ledger>,
) -> (&'static str, Value) {
    let targets: Vec<String> = {
        let ledger = ledger.lock().unwrap();
        let mut targets = BTreeSet::new();
        for _ in 0..1 + rng.below(3) {
            targets.insert(rng.pick(&ledger.names).clone());
        }
        targets.into_iter().collect()
    };
    let observations: Vec<Value> = (targets.iter().enumerate())
        .map(|(j, node)| {
            let contents: Vec<String> = (0..1 + rng.below(2))
                .map(|o| format!("c{c} k{k} t{j} added {o} on {}", word(rng)))
                .collect();
            json!({"entity_name": node, "contents": contents})
        })
        .collect();
    ("add_observations", json!({"observations": observations}))
}

fn create_relations(c: usize, rng: &mut Rng, ledger: &Mutex<Ledger>) -> (&'static str, Value) {
    let ledger = ledger.lock().unwrap();
    let pairs: BTreeSet<(&String, &String)> = (0..1 + rng.below(3))
        .map(|_| (rng.pick(&ledger.names), rng.pick(&ledger.names)))
        .collect();
    let relations: Vec<Value> = (pairs.into_iter())
        .map(|(from, to)| {
            json!({"from_entity": from, "to_entity": to, "relation_type": format!("rel_c{c}")})
        })
        .collect();
    ("create_relations", json!({"relations": relations}))
}

fn word(rng: &mut Rng) -> &'static str {
    const WORDS: [&str; 12] = [
        "lisbon", "rust", "postgres", "sqlite", "graph", "memory", "agent", "vector", "ordinal",
        "relation", "batch", "kernel",
    ];
    WORDS[rng.below(WORDS.len())]
}

/// Notes an acknowledged write in the ledger (and in the client's own lists).
fn record(ledger: &mut Ledger, own: &mut Own, tool: &str, arguments: &Value, result: &Value) {
    let text = |value: &Value| value.as_str().expect("a string").to_owned();
    match tool {
        "create_entities" => {
            for (entity, row) in (arguments["entities"].as_array().unwrap().iter())
                .zip(result["entities"].as_array().expect("entities"))
            {
                assert_eq!(entity["name"], row["name"], "{result}");
                if row["already_existed"] == true {
                    continue;
                }
                let name = text(&entity["name"]);
                ledger.node(&name);
                own.nodes.push(name.clone());
                // A text given twice is stored once, at its first place.
                let mut kept: Vec<&str> = Vec::new();
                for content in entity["observations"].as_array().unwrap() {
                    let content = content.as_str().unwrap();
                    if !kept.contains(&content) {
                        kept.push(content);
                        ledger.observation(&name, kept.len() as i64, content);
                    }
                }
            }
        }
        "add_observations" => {
            for row in result["results"].as_array().expect("results") {
                let node = text(&row["entity_name"]);
                for added in row["added"].as_array().expect("added") {
                    let ordinal = added["ordinal"].as_i64().expect("ordinal");
                    ledger.observation(&node, ordinal, added["content"].as_str().unwrap());
                    own.observations.push((node.clone(), ordinal));
                }
            }
        }
        "replace_observation" => {
            let key = (
                text(&result["entity_name"]),
                result["ordinal"].as_i64().unwrap(),
            );
            let before = ledger.observations.get(&key).cloned().flatten();
            if before.as_deref() != result["old_content"].as_str() {
                ledger
                    .stale_reads
                    .push(format!("{key:?}: had {before:?}, answer {result}"));
            }
            ledger
                .observations
                .insert(key, Some(text(&result["new_content"])));
        }
        "delete_observations" => {
            for row in result["results"].as_array().expect("results") {
                let node = text(&row["entity_name"]);
                for ordinal in row["deleted_ordinals"].as_array().expect("deleted") {
                    let key = (node.clone(), ordinal.as_i64().unwrap());
                    ledger.observations.insert(key.clone(), None);
                    own.observations.retain(|o| *o != key);
                }
                // Absent when every ordinal was found.
                let none = Vec::new();
                for ordinal in row["not_found_ordinals"].as_array().unwrap_or(&none) {
                    let key = (node.clone(), ordinal.as_i64().unwrap());
                    own.observations.retain(|o| *o != key);
                }
            }
        }
        "create_relations" => {
            for list in ["created", "already_existed"] {
                // `already_existed` is absent when empty.
                let none = Vec::new();
                for relation in result[list].as_array().unwrap_or(&none) {
                    let triple = (
                        text(&relation["from_entity"]),
                        text(&relation["to_entity"]),
                        text(&relation["relation_type"]),
                    );
                    ledger.relations.insert(triple.clone(), true);
                    if !own.relations.contains(&triple) {
                        own.relations.push(triple);
                    }
                }
            }
        }
        "delete_relations" => {
            for relation in arguments["relations"].as_array().unwrap() {
                let triple = (
                    text(&relation["from_entity"]),
                    text(&relation["to_entity"]),
                    text(&relation["relation_type"]),
                );
                ledger.relations.insert(triple.clone(), false);
                own.relations.retain(|r| *r != triple);
            }
        }
        "delete_entities" => {
            for name in result["deleted"].as_array().expect("deleted") {
                ledger.nodes.insert(text(name), false);
            }
        }
        other => unreachable!("{other}"),
    }
}

/// The differences between what was acknowledged and what is there.
#[derive(Default)]
struct Check {
    /// Acknowledged, still expected, absent.
    lost: Vec<String>,
    /// `(node, ordinal)` handed out more than once.
    reused: Vec<String>,
    /// Present, never acknowledged.
    phantom: Vec<String>,
    /// Acknowledged as deleted, present.
    resurrected: Vec<String>,
}

fn compare(ledger: &Ledger, graph: &Graph) -> Check {
    let mut check = Check::default();
    for (name, &alive) in &ledger.nodes {
        match (alive, graph.nodes.contains_key(name)) {
            (true, false) => check.lost.push(format!("node {name}")),
            (false, true) => check.resurrected.push(format!("node {name}")),
            _ => {}
        }
    }
    for name in graph.nodes.keys() {
        if !ledger.nodes.contains_key(name) {
            check.phantom.push(format!("node {name}"));
        }
    }
    for ((node, ordinal), expected) in &ledger.observations {
        let Some(observations) = graph.nodes.get(node) else {
            continue;
        };
        let found = observations.iter().find(|(o, _)| o == ordinal);
        match (expected, found) {
            (Some(content), Some((_, actual))) if content != actual => check
                .lost
                .push(format!("{node}#{ordinal}: {content:?}, found {actual:?}")),
            (Some(content), None) => check.lost.push(format!("{node}#{ordinal}: {content:?}")),
            (None, Some(found)) => check.resurrected.push(format!("{node}#{found:?}")),
            _ => {}
        }
    }
    for (node, observations) in &graph.nodes {
        for (ordinal, content) in observations {
            if !ledger.observations.contains_key(&(node.clone(), *ordinal)) {
                check.phantom.push(format!("{node}#{ordinal}: {content:?}"));
            }
        }
    }
    for ((node, ordinal), &times) in &ledger.handed_out {
        if times > 1 {
            check.reused.push(format!("{node}#{ordinal} ×{times}"));
        }
    }
    let present: BTreeSet<&Triple> = graph.relations.iter().collect();
    for (triple, &expected) in &ledger.relations {
        let alive = |name: &String| ledger.nodes.get(name) == Some(&true);
        if !alive(&triple.0) || !alive(&triple.1) {
            continue;
        }
        match (expected, present.contains(triple)) {
            (true, false) => check.lost.push(format!("relation {triple:?}")),
            (false, true) => check.resurrected.push(format!("relation {triple:?}")),
            _ => {}
        }
    }
    for triple in present {
        if !ledger.relations.contains_key(triple) {
            check.phantom.push(format!("relation {triple:?}"));
        }
    }
    check
}
