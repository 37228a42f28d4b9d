//! Search in small, new memories at the default `min_score`:
//! `cargo run --release -p engram --example small_memories [-- [SET.json …] [--pad N]
//! [--padding FILE] [--model NAME]]` (default the sets `xtask/data/small-memories.json` and
//! `small-memories-more.json`). `--pad N` puts N unrelated nodes beside every memory, one text
//! each from FILE (default `target/padding.txt`, written by `xtask/ablation/padding.py`), to
//! see how the answers hold as a memory grows. `--model` picks the local model (default
//! all-MiniLM-L6-v2; `multilingual-e5-small`).
//!
//! A fresh SQLite store holds one workspace with the padding, embedded once. Each memory of
//! the sets joins it, is embedded by the local model (the server's default), is asked its questions in hybrid
//! mode, limit 5, once at the default `min_score` and once with `min_score: 0`; then its
//! unrelated questions and the set's nonsense strings at the default. Prints, per memory and
//! in all: right answers in the top 5 at the default and without a threshold, unrelated and
//! nonsense questions that got any result, and the scores of the right answers (what a
//! person reads); then its nodes are deleted again. `--simulate-use` ranks by use
//! (`engram serve --access-ranking`) after an agent's earlier use of each memory: every
//! question asked once and its first five results opened, then written as the server's access
//! log writes them.

use std::sync::Arc;

use engram_domain::Embedder;
use engram_domain::{
    CreateEntities, CreateRelations, DeleteEntities, Indexer, Memory, MemoryStore, SearchMode,
    SearchNodes, SearchObservations, WorkspaceId,
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
    /// `keyword`, `phrase` or `question` (the default).
    #[serde(default = "question_kind")]
    kind: String,
}

fn question_kind() -> String {
    "question".to_owned()
}

/// A memory of facts that changed (`--changed FILE`): each question's node holds an older and
/// a newer fact about one attribute, both current.
#[derive(Deserialize)]
struct ChangedSet {
    memories: Vec<ChangedMemory>,
}

#[derive(Deserialize)]
struct ChangedMemory {
    name: String,
    nodes: serde_json::Value,
    questions: Vec<ChangedQuestion>,
}

#[derive(Deserialize)]
struct ChangedQuestion {
    question: String,
    node: String,
    newer: String,
    older: String,
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
    /// Per question kind: results shown at the default `min_score`, and how many of them
    /// were right.
    shown: std::collections::BTreeMap<String, (usize, usize)>,
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
        for (kind, (shown, right)) in &other.shown {
            let mine = self.shown.entry(kind.clone()).or_default();
            mine.0 += shown;
            mine.1 += right;
        }
    }

    /// Per question kind, the share of results shown at the default that were right.
    fn precision(&self) -> String {
        (self.shown.iter())
            .map(|(kind, (shown, right))| {
                format!(
                    "{kind} {right}/{shown} ({:.0} %)",
                    100.0 * *right as f64 / (*shown).max(1) as f64
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn row(&self, name: &str, nodes: usize) -> String {
        let mut scores = self.right_scores.clone();
        scores.sort_by(f64::total_cmp);
        let median = scores.get(scores.len() / 2).copied().unwrap_or(f64::NAN);
        let least = scores.first().copied().unwrap_or(f64::NAN);
        let unrelated = self.unrelated_best.iter().copied().fold(f64::NAN, f64::max);
        format!(
            "| {name} | {nodes} | {}/{} | {}/{} | {}/{} | {}/{} | {median:.3} | {least:.3} | \
             {unrelated:.3} |",
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
    let found = memory.call(workspace, request).await?;
    Ok(found
        .results
        .into_iter()
        .map(|hit| (hit.name, hit.score))
        .collect())
}

/// `count` unrelated nodes, one text each: the lines of `file` (one text a line, as
/// `xtask/ablation/padding.py` writes them: Debian's package and manual-page descriptions and
/// LoCoMo's dialogue, none about the sets' projects), cycled and numbered past the first round.
fn padding(count: usize, file: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("{file}: {e} (write it with xtask/ablation/padding.py)"))?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    anyhow::ensure!(!lines.is_empty(), "{file} holds no text to pad with");
    Ok((0..count)
        .map(|i| {
            let (round, line) = (i / lines.len(), lines[i % lines.len()]);
            let text = match round {
                0 => line.to_owned(),
                _ => format!("{line} ({round})"),
            };
            serde_json::json!({"name": format!("pad-{i:06}"), "entity_type": "note",
                "observations": [text]})
        })
        .collect())
}

/// Adds `entities` (JSON nodes) to `workspace` 500 at a time.
async fn add_nodes(
    memory: &Memory,
    workspace: WorkspaceId,
    entities: &[serde_json::Value],
) -> anyhow::Result<()> {
    for batch in entities.chunks(500) {
        let batch: CreateEntities =
            serde_json::from_value(serde_json::json!({ "entities": batch }))?;
        memory.call(workspace, batch).await?;
    }
    Ok(())
}

/// The local model with its calibration changed by `ENGRAM_EXACT=intercept,weight`,
/// `ENGRAM_SEMANTIC=scale,shift` (the meaning's logit z read as scale × z + shift) and
/// `ENGRAM_MIN_SCORE=x`, to try other values without a rebuild.
struct Tuned(Arc<LocalEmbedder>);

#[async_trait::async_trait]
impl Embedder for Tuned {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }
    async fn embed_documents(&self, texts: &[String]) -> engram_domain::Result<Vec<Vec<f32>>> {
        self.0.embed_documents(texts).await
    }
    async fn embed_query(&self, text: &str) -> engram_domain::Result<Vec<f32>> {
        self.0.embed_query(text).await
    }
    async fn embed_queries(&self, texts: &[String]) -> engram_domain::Result<Vec<Vec<f32>>> {
        self.0.embed_queries(texts).await
    }
    async fn embed_documents_with_tokens(
        &self,
        texts: &[String],
    ) -> engram_domain::Result<Vec<engram_domain::Embedding>> {
        self.0.embed_documents_with_tokens(texts).await
    }
    async fn embed_queries_with_tokens(
        &self,
        texts: &[String],
    ) -> engram_domain::Result<Vec<engram_domain::Embedding>> {
        self.0.embed_queries_with_tokens(texts).await
    }
    async fn ready(&self) {
        self.0.ready().await
    }
    fn calibration(&self) -> Option<engram_domain::search::calibration::ModelCalibration> {
        let mut tuned = self.0.calibration()?;
        let numbers = |name: &str| -> Option<Vec<f64>> {
            let text = std::env::var(name).ok()?;
            text.split(',').map(|x| x.trim().parse().ok()).collect()
        };
        if let Some(exact) = numbers("ENGRAM_EXACT") {
            tuned.scores.exact =
                (exact.len() == 2).then(|| engram_domain::search::calibration::Exact {
                    intercept: exact[0],
                    weight: exact[1],
                });
        }
        if let Some(lacking) = numbers("ENGRAM_LACKING").and_then(|n| n.first().copied()) {
            tuned.scores.lacking = lacking;
        }
        if let Some(spread) = numbers("ENGRAM_SPREAD") {
            tuned.scores.spread =
                (spread.len() == 2).then(|| engram_domain::search::calibration::Spread {
                    free: spread[0],
                    weight: spread[1],
                });
        }
        // z' = scale × z + shift: a flatter or stricter reading of the meaning's model.
        if let Some(semantic) = numbers("ENGRAM_SEMANTIC").filter(|n| n.len() == 2) {
            let (scale, shift) = (semantic[0], semantic[1]);
            let s = &mut tuned.scores;
            s.intercept = scale * s.intercept + shift;
            for weight in [
                &mut s.similarity,
                &mut s.late,
                &mut s.coverage,
                &mut s.dated,
                &mut s.pairs,
                &mut s.named,
                &mut s.alien,
                &mut s.fragmented,
            ] {
                *weight *= scale;
            }
        }
        if let Some(least) = numbers("ENGRAM_MIN_SCORE").and_then(|n| n.first().copied()) {
            tuned.min_score = least;
        }
        Some(tuned)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (mut paths, mut pad) = (Vec::new(), 0usize);
    let mut changed = Vec::new();
    let mut file = "target/padding.txt".to_owned();
    let mut model = engram_embed::LocalModel::default();
    let mut used = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--pad" => pad = args.next().and_then(|n| n.parse().ok()).unwrap_or(0),
            "--padding" => file = args.next().unwrap_or(file),
            "--changed" => changed.extend(args.next()),
            "--simulate-use" => used = Some(engram_domain::AccessLog::default()),
            "--model" => {
                let name = args.next().unwrap_or_default();
                model = name.parse().map_err(|err: String| anyhow::anyhow!(err))?;
            }
            _ => paths.push(arg),
        }
    }
    if paths.is_empty() && changed.is_empty() {
        paths = ["small-memories.json", "small-memories-more.json"]
            .map(|name| format!("xtask/data/{name}"))
            .into_iter()
            .filter(|path| std::path::Path::new(path).exists())
            .collect();
    }
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn MemoryStore> =
        Arc::new(SqliteStore::open(dir.path().join("small.db")).await?);
    let embedder = Arc::new(Tuned(Arc::new(LocalEmbedder::new(model))));
    let mut memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    if let Some(log) = &used {
        memory = (memory.with_access_log(log.clone()))
            .with_access_ranking(engram_domain::AccessRanking::default());
    }
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    // One workspace holds the padding, embedded once; each memory joins it, is asked its
    // questions and leaves.
    let workspace = memory.create_workspace("small-memories").await?.id;
    let started = std::time::Instant::now();
    add_nodes(&memory, workspace, &padding(pad, &file)?).await?;
    indexer.run_until_idle().await?;
    if pad > 0 {
        println!(
            "padded with {pad} nodes in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    println!(
        "| memory | nodes | right in top 5, default | right in top 5, min_score 0 | \
         unrelated answered | nonsense answered | right answers' median score | least | \
         unrelated questions' best score, min_score 0 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut all = Tally::default();
    let mut all_nodes = 0;
    for path in &paths {
        let set: Set = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        for small in &set.memories {
            let tally = ask(
                &memory,
                &indexer,
                workspace,
                small,
                &set.nonsense,
                used.as_ref(),
            )
            .await?;
            let nodes = small.nodes.as_array().map_or(0, Vec::len);
            println!("{}", tally.row(&small.name, nodes));
            all.add(&tally);
            all_nodes += nodes;
        }
    }
    println!(
        "{}",
        all.row(&format!("all (padded with {pad})"), all_nodes)
    );
    println!(
        "right among the results shown at the default: {}",
        all.precision()
    );
    for path in &changed {
        let set: ChangedSet = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let mut tally = ChangedTally::default();
        for changed in &set.memories {
            let one = ask_changed(&memory, &indexer, workspace, changed).await?;
            println!(
                "  {}: newer above older {} of {}",
                changed.name, one.newer_first, one.both
            );
            tally.add(one);
        }
        println!(
            "changed facts ({path}): {} questions; both facts in the top 5: {}; newer above \
             older: {} ({:.0} %); newer first of its node at the default: {}",
            tally.questions,
            tally.both,
            tally.newer_first,
            100.0 * tally.newer_first as f64 / tally.both.max(1) as f64,
            tally.newer_shown_first
        );
    }
    Ok(())
}

/// What the questions about changed facts found.
#[derive(Default)]
struct ChangedTally {
    questions: usize,
    /// Both facts in `search_observations`' top 5 (min_score 0).
    both: usize,
    /// Of those, the newer above the older.
    newer_first: usize,
    /// Questions whose `search_nodes` hit (at the default) on the node shows the newer fact.
    newer_shown_first: usize,
}

impl ChangedTally {
    fn add(&mut self, other: ChangedTally) {
        self.questions += other.questions;
        self.both += other.both;
        self.newer_first += other.newer_first;
        self.newer_shown_first += other.newer_shown_first;
    }
}

/// Adds `changed` to `workspace`, asks its questions with `search_observations` (limit 5,
/// min_score 0) and `search_nodes` (default), and deletes its nodes again.
async fn ask_changed(
    memory: &Memory,
    indexer: &Indexer,
    workspace: WorkspaceId,
    changed: &ChangedMemory,
) -> anyhow::Result<ChangedTally> {
    let nodes = changed.nodes.as_array().map_or(&[][..], Vec::as_slice);
    add_nodes(memory, workspace, nodes).await?;
    indexer.run_until_idle().await?;
    let mut tally = ChangedTally::default();
    for question in &changed.questions {
        tally.questions += 1;
        let request: SearchObservations = serde_json::from_value(serde_json::json!({
            "query": question.question, "limit": 5, "min_score": 0.0 }))?;
        let found = memory.call(workspace, request).await?.observations;
        let at = |content: &str| {
            (found.iter()).position(|o| o.name == question.node && o.content == content)
        };
        if let (Some(newer), Some(older)) = (at(&question.newer), at(&question.older)) {
            tally.both += 1;
            if newer < older {
                tally.newer_first += 1;
            } else {
                println!(
                    "  older first: {:?} ({} #{} {} above #{} {})",
                    question.question,
                    question.node,
                    older,
                    found[older].score,
                    newer,
                    found[newer].score
                );
            }
        }
        let request = SearchNodes::new(question.question.as_str())
            .mode(SearchMode::Hybrid)
            .limit(5);
        let hits = memory.call(workspace, request).await?.results;
        if (hits.iter()).any(|h| h.name == question.node && h.matched_observation == question.newer)
        {
            tally.newer_shown_first += 1;
        }
    }
    delete_nodes(memory, workspace, nodes).await?;
    Ok(tally)
}

/// Adds `small` to `workspace`, asks its questions, unrelated questions and `nonsense`, and
/// deletes its nodes again.
async fn ask(
    memory: &Memory,
    indexer: &Indexer,
    workspace: WorkspaceId,
    small: &SmallMemory,
    nonsense: &[String],
    used: Option<&engram_domain::AccessLog>,
) -> anyhow::Result<Tally> {
    let nodes = small.nodes.as_array().map_or(&[][..], Vec::as_slice);
    add_nodes(memory, workspace, nodes).await?;
    if small.relations.as_array().is_some_and(|r| !r.is_empty()) {
        let relations: CreateRelations =
            serde_json::from_value(serde_json::json!({ "relations": small.relations }))?;
        memory.call(workspace, relations).await?;
    }
    indexer.run_until_idle().await?;
    if let Some(log) = used {
        for question in &small.questions {
            let found = search(memory, workspace, &question.question, None).await?;
            let names: Vec<String> = found.into_iter().map(|(name, _)| name).collect();
            if !names.is_empty() {
                memory
                    .call(workspace, engram_domain::OpenNodes::new(&names))
                    .await?;
            }
        }
        memory.record_access(&log.take()).await?;
    }
    let mut tally = Tally::default();
    for question in &small.questions {
        tally.questions += 1;
        let right = |found: &[(String, f64)]| {
            (found.iter())
                .find(|(name, _)| question.answers.contains(name))
                .map(|(_, s)| *s)
        };
        let by_default = search(memory, workspace, &question.question, None).await?;
        let shown = tally.shown.entry(question.kind.clone()).or_default();
        shown.0 += by_default.len();
        shown.1 += (by_default.iter())
            .filter(|(name, _)| question.answers.contains(name))
            .count();
        let unthresholded = search(memory, workspace, &question.question, Some(0.0)).await?;
        if let Some(score) = right(&by_default) {
            tally.found_default += 1;
            tally.right_scores.push(score);
        }
        if let Some(score) = right(&unthresholded) {
            tally.found_unthresholded += 1;
            if right(&by_default).is_none() {
                tally.right_scores.push(score);
                println!(
                    "  dropped by min_score: {:?} ({score:.3})",
                    question.question
                );
            }
        } else {
            let first = unthresholded.first().map(|(n, s)| format!("{n} ({s:.3})"));
            println!(
                "  not in the top 5: {:?}, first {first:?}",
                question.question
            );
        }
    }
    for question in &small.unrelated {
        tally.unrelated += 1;
        let found = search(memory, workspace, question, None).await?;
        if let Some((name, score)) = found.first() {
            tally.unrelated_answered += 1;
            println!("  unrelated answered: {question:?} -> {name} ({score:.3})");
        }
        let best = search(memory, workspace, question, Some(0.0)).await?;
        if let Some((_, score)) = best.first() {
            tally.unrelated_best.push(*score);
        }
    }
    for query in nonsense {
        tally.nonsense += 1;
        if let Some((name, score)) = search(memory, workspace, query, None).await?.first() {
            tally.nonsense_answered += 1;
            println!("  nonsense answered: {query:?} -> {name} ({score:.3})");
        }
    }
    delete_nodes(memory, workspace, nodes).await?;
    Ok(tally)
}

/// Deletes `nodes` (JSON nodes, as [`add_nodes`] added them) from `workspace`, 1,000 at a time.
async fn delete_nodes(
    memory: &Memory,
    workspace: WorkspaceId,
    nodes: &[serde_json::Value],
) -> anyhow::Result<()> {
    let names: Vec<&str> = nodes.iter().filter_map(|n| n["name"].as_str()).collect();
    for batch in names.chunks(1_000) {
        let deleted: DeleteEntities =
            serde_json::from_value(serde_json::json!({ "entity_names": batch }))?;
        memory.call(workspace, deleted).await?;
    }
    Ok(())
}
