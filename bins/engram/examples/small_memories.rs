//! Search in small, new memories at the default `min_score`:
//! `cargo run --release -p engram --example small_memories [-- [SET.json] [--pad N]]` (default
//! `xtask/data/small-memories.json`). `--pad N` adds N unrelated nodes to every memory, one
//! fact each from the LoCoMo dev conversations (`../shared/data/locomo-dev`: people's lives,
//! not software projects), to see how the answers hold as a memory grows.
//!
//! Each memory of the set goes into a workspace of its own on a fresh SQLite store, is
//! embedded by the local model (the server's default), and is asked its questions in hybrid
//! mode, limit 5, once at the default `min_score` and once with `min_score: 0`; then its
//! unrelated questions and the set's nonsense strings at the default. Prints, per memory and
//! in all: right answers in the top 5 at the default and without a threshold, unrelated and
//! nonsense questions that got any result, and the scores of the right answers (what a
//! person reads).

use std::sync::Arc;

use engram_domain::{
    CreateEntities, CreateRelations, Embedder, Indexer, Memory, MemoryStore, SearchMode,
    SearchNodes, WorkspaceId,
};
use engram_embed::LocalEmbedder;
use engram_sqlite::SqliteStore;
use serde::Deserialize;

#[derive(Deserialize)]
struct Set {
    memories: Vec<SmallMemory>,
    nonsense: Vec<String>,
}

#[derive(Deserialize)]
struct SmallMemory {
    name: String,
    nodes: serde_json::Value,
    relations: serde_json::Value,
    questions: Vec<Question>,
    unrelated: Vec<String>,
}

#[derive(Deserialize)]
struct Question {
    question: String,
    answers: Vec<String>,
}

/// What one memory's questions found.
#[derive(Default)]
struct Tally {
    questions: usize,
    found_default: usize,
    found_unthresholded: usize,
    unrelated: usize,
    unrelated_answered: usize,
    nonsense: usize,
    nonsense_answered: usize,
    right_scores: Vec<f64>,
    /// The best score each unrelated question got with `min_score: 0`.
    unrelated_best: Vec<f64>,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.questions += other.questions;
        self.found_default += other.found_default;
        self.found_unthresholded += other.found_unthresholded;
        self.unrelated += other.unrelated;
        self.unrelated_answered += other.unrelated_answered;
        self.nonsense += other.nonsense;
        self.nonsense_answered += other.nonsense_answered;
        self.right_scores.extend(&other.right_scores);
        self.unrelated_best.extend(&other.unrelated_best);
    }

    fn row(&self, name: &str, nodes: usize) -> String {
        let mut scores = self.right_scores.clone();
        scores.sort_by(f64::total_cmp);
        let median = scores.get(scores.len() / 2).copied().unwrap_or(f64::NAN);
        let least = scores.first().copied().unwrap_or(f64::NAN);
        let unrelated = self.unrelated_best.iter().copied().fold(f64::NAN, f64::max);
        format!(
            "| {name} | {nodes} | {}/{} | {}/{} | {}/{} | {}/{} | {median:.4} | {least:.4} | \
             {unrelated:.4} |",
            self.found_default,
            self.questions,
            self.found_unthresholded,
            self.questions,
            self.unrelated_answered,
            self.unrelated,
            self.nonsense_answered,
            self.nonsense
        )
    }
}

/// The names a hybrid search of `query` returns, best first, with their scores.
async fn search(
    memory: &Memory,
    workspace: WorkspaceId,
    query: &str,
    min_score: Option<f64>,
) -> anyhow::Result<Vec<(String, f64)>> {
    let request = SearchNodes::new(query)
        .mode(SearchMode::Hybrid)
        .limit(5)
        .min_score(min_score);
    let found = memory.search_nodes(workspace, &request).await?;
    Ok(found
        .results
        .into_iter()
        .map(|hit| (hit.name, hit.score))
        .collect())
}

/// `count` unrelated nodes, one LoCoMo dev fact each (cycled, numbered past the first round).
fn padding(count: usize) -> anyhow::Result<Vec<serde_json::Value>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut facts = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir("../shared/data/locomo-dev")?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let conversation: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file)?)?;
        for (key, sessions) in conversation.as_object().into_iter().flatten() {
            if !key.ends_with("_observation") {
                continue;
            }
            for speaker in sessions.as_object().into_iter().flatten().map(|(_, f)| f) {
                for fact in speaker.as_array().into_iter().flatten() {
                    if let Some(text) = fact[0].as_str() {
                        facts.push(text.to_owned());
                    }
                }
            }
        }
    }
    anyhow::ensure!(!facts.is_empty(), "no LoCoMo facts to pad with");
    Ok((0..count)
        .map(|i| {
            let round = i / facts.len();
            let fact = &facts[i % facts.len()];
            let text = if round == 0 {
                fact.clone()
            } else {
                format!("{fact} ({round})")
            };
            serde_json::json!({"name": format!("pad-{i:05}"), "entity_type": "note",
                "observations": [text]})
        })
        .collect())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut path, mut pad) = ("xtask/data/small-memories.json".to_owned(), 0usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--pad" => pad = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            _ => path = arg,
        }
    }
    let padding = padding(pad)?;
    let set: Set = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("small.db")).await?);
    let embedder = Arc::new(LocalEmbedder::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    // The best cosine of each question to a fact of a right node, to another node's fact,
    // and of each unrelated question to any fact.
    let mut cosines: Vec<(&str, f64)> = Vec::new();
    println!(
        "| memory | nodes | right in top 5, default | right in top 5, min_score 0 | \
         unrelated answered | nonsense answered | right answers' median score | least | \
         unrelated questions' best score, min_score 0 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut all = Tally::default();
    let mut all_nodes = 0;
    for small in &set.memories {
        let workspace = memory.create_workspace(&small.name).await?.id;
        let nodes = small.nodes.as_array().map_or(0, Vec::len);
        let entities: CreateEntities =
            serde_json::from_value(serde_json::json!({ "entities": small.nodes }))?;
        memory.create_entities(workspace, entities).await?;
        for batch in padding.chunks(500) {
            let entities: CreateEntities =
                serde_json::from_value(serde_json::json!({ "entities": batch }))?;
            memory.create_entities(workspace, entities).await?;
        }
        if small.relations.as_array().is_some_and(|r| !r.is_empty()) {
            let relations: CreateRelations =
                serde_json::from_value(serde_json::json!({ "relations": small.relations }))?;
            memory.create_relations(workspace, relations).await?;
        }
        indexer.run_until_idle().await?;
        // Each observation's vector as a document (no perspective template), by node.
        let mut facts: Vec<(String, Vec<f32>)> = Vec::new();
        for node in small.nodes.as_array().into_iter().flatten() {
            let name = node["name"].as_str().unwrap_or_default().to_owned();
            let texts: Vec<String> = (node["observations"].as_array().into_iter().flatten())
                .filter_map(|o| o.as_str().map(str::to_owned))
                .collect();
            for vector in embedder.embed_documents(&texts).await? {
                facts.push((name.clone(), vector));
            }
        }
        let cosine =
            |a: &[f32], b: &[f32]| -> f64 { a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum() };
        let best_cosine = |query: &[f32], keep: &dyn Fn(&str) -> bool| -> f64 {
            (facts.iter())
                .filter(|(name, _)| keep(name))
                .map(|(_, vector)| cosine(query, vector))
                .fold(f64::NAN, f64::max)
        };
        for question in &small.questions {
            let query = embedder.embed_query(&question.question).await?;
            let right = best_cosine(&query, &|name| question.answers.iter().any(|a| a == name));
            let other = best_cosine(&query, &|name| !question.answers.iter().any(|a| a == name));
            cosines.push(("right", right));
            cosines.push(("other", other));
        }
        for question in &small.unrelated {
            let query = embedder.embed_query(question).await?;
            cosines.push(("unrelated", best_cosine(&query, &|_| true)));
        }
        let mut tally = Tally::default();
        for question in &small.questions {
            tally.questions += 1;
            let right = |found: &[(String, f64)]| {
                (found.iter())
                    .find(|(name, _)| question.answers.contains(name))
                    .map(|(_, s)| *s)
            };
            let by_default = search(&memory, workspace, &question.question, None).await?;
            let unthresholded = search(&memory, workspace, &question.question, Some(0.0)).await?;
            if let Some(score) = right(&by_default) {
                tally.found_default += 1;
                tally.right_scores.push(score);
            }
            if let Some(score) = right(&unthresholded) {
                tally.found_unthresholded += 1;
                if right(&by_default).is_none() {
                    tally.right_scores.push(score);
                    println!(
                        "  dropped by min_score: {:?} ({score:.4})",
                        question.question
                    );
                }
            } else {
                println!("  not in the top 5 at all: {:?}", question.question);
            }
        }
        for question in &small.unrelated {
            tally.unrelated += 1;
            let found = search(&memory, workspace, question, None).await?;
            if let Some((name, score)) = found.first() {
                tally.unrelated_answered += 1;
                println!("  unrelated answered: {question:?} -> {name} ({score:.4})");
            }
            let best = search(&memory, workspace, question, Some(0.0)).await?;
            if let Some((_, score)) = best.first() {
                tally.unrelated_best.push(*score);
            }
        }
        for nonsense in &set.nonsense {
            tally.nonsense += 1;
            if !search(&memory, workspace, nonsense, None).await?.is_empty() {
                tally.nonsense_answered += 1;
            }
        }
        println!("{}", tally.row(&small.name, nodes));
        all.add(&tally);
        all_nodes += nodes;
    }
    println!(
        "{}",
        all.row(&format!("all (each padded with {pad})"), all_nodes)
    );
    for kind in ["right", "other", "unrelated"] {
        let mut values: Vec<f64> = (cosines.iter())
            .filter(|(k, _)| *k == kind)
            .map(|(_, c)| *c)
            .collect();
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        println!(
            "best cosine to {kind}: min {:.3}, 10th percentile {:.3}, median {:.3}, max {:.3}",
            at(0.0),
            at(0.1),
            at(0.5),
            at(1.0)
        );
    }
    Ok(())
}
