//! The consolidation benchmark's workload, shared by every store's benchmark example
//! (`cargo xtask bench consolidation`): a synthetic workspace of `nodes` nodes, indexed, then
//! three reports, with the time of each step printed.
//!
//! The graph: 200 topics; every node has 3 observations of 8 words, 6 from its topic's
//! vocabulary and 2 from anywhere; 2% of nodes repeat another node's observations (near-
//! duplicates); half the nodes relate to another of their topic; 70% have a summary that is
//! current. Vectors come from [`TermEmbedder`], padded to 384 dimensions (the local model's
//! size, so the matrix work is the real one), in the `general` perspective only (the report
//! reads only that one; the others are disabled to keep the load short).

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::{TermEmbedder, facts};
use crate::search::similarity;
use crate::*;

/// Dimension of the vectors stored (TermEmbedder's, zero-padded).
const DIMS: usize = 384;
const TOPICS: usize = 200;
const TOPIC_WORDS: usize = 40;

/// `TermEmbedder` padded with zeros to [`DIMS`].
struct Padded;

#[async_trait]
impl Embedder for Padded {
    fn model_id(&self) -> &str {
        "bench/terms-384"
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| padded(t)).collect())
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(padded(text))
    }
}

fn padded(text: &str) -> Vec<f32> {
    let mut vector = TermEmbedder::vector(text);
    vector.resize(DIMS, 0.0);
    vector
}

/// xorshift64*: deterministic data without a dependency.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

fn observation(rng: &mut Rng, topic: usize) -> String {
    let mut words: Vec<String> = (0..6)
        .map(|_| format!("t{topic}w{}", rng.below(TOPIC_WORDS)))
        .collect();
    words.extend((0..2).map(|_| format!("t{}w{}", rng.below(TOPICS), rng.below(TOPIC_WORDS))));
    words.join(" ")
}

/// Loads the workload into a new workspace `bench` of `store`, indexes it and prints the
/// times of the load, the indexing, three reports and the report's parts.
///
/// Errors: the store's.
pub async fn consolidation_benchmark(store: Arc<dyn MemoryStore>, nodes: usize) -> Result<()> {
    let memory = Memory::new(store.clone()).with_embedder(Arc::new(Padded));
    let workspace = memory.create_workspace("bench").await?.id;
    for perspective in memory.perspectives(workspace).await? {
        if perspective.name != "general" {
            let disabled = perspectives::Perspective {
                enabled: false,
                ..perspective
            };
            store
                .set_perspective(SetPerspective {
                    workspace,
                    perspective: &disabled,
                })
                .await?;
        }
    }

    let started = Instant::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let topic_of = |i: usize| i % TOPICS;
    let mut contents: Vec<Vec<String>> = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let observations = if i >= TOPICS && i % 50 == 7 {
            contents[i - TOPICS].clone() // a near-duplicate of an earlier node of its topic
        } else {
            (0..3).map(|_| observation(&mut rng, topic_of(i))).collect()
        };
        contents.push(observations);
    }
    for (batch, chunk) in contents.chunks(300).enumerate() {
        let entities = chunk
            .iter()
            .enumerate()
            .map(|(j, observations)| NewNode {
                name: format!("node-{}", batch * 300 + j),
                entity_type: format!("type-{}", (batch * 300 + j) % 7),
                observations: facts(observations),
                ..NewNode::default()
            })
            .collect();
        memory
            .call(workspace, CreateEntities::new(entities))
            .await?;
    }
    let relations: Vec<RelationSpec> = (TOPICS..nodes)
        .filter(|i| i % 2 == 0 && i % 50 != 7)
        .map(|i| {
            RelationSpec::new(
                format!("node-{i}"),
                format!("node-{}", i - TOPICS),
                "related_to",
            )
        })
        .collect();
    for chunk in relations.chunks(1_000) {
        memory.call(workspace, CreateRelations::new(chunk)).await?;
    }
    for i in (0..nodes).filter(|i| i % 10 < 7) {
        memory
            .call(
                workspace,
                SetSummary::new(format!("node-{i}"), "current summary"),
            )
            .await?;
    }
    let loaded = started.elapsed();
    println!(
        "loaded {nodes} nodes, {} observations, {} relations in {:.1}s",
        nodes * 3,
        relations.len(),
        loaded.as_secs_f64()
    );

    let started = Instant::now();
    let indexed = Indexer::new(store.clone(), Arc::new(Padded), 512)
        .run_until_idle()
        .await?;
    println!(
        "indexed {indexed} vectors in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    for run in 1..=3 {
        let started = Instant::now();
        let report = memory
            .call(workspace, GetConsolidationReport::default())
            .await?;
        let elapsed = started.elapsed();
        println!(
            "report {run}: {:.2}s — {} stale, {} candidates, {} orphans, {} clusters (largest {}), \
             {} creates; notices: {:?}",
            elapsed.as_secs_f64(),
            report.stale_summaries.len(),
            report.relation_candidates.len(),
            report.orphaned_nodes.len(),
            report.cluster_summary.len(),
            report.cluster_summary.first().map_or(0, |c| c.size),
            report.event_summary.creates,
            report.notices
        );
    }
    let perspective = memory
        .perspectives(workspace)
        .await?
        .into_iter()
        .find(|p| p.name == "general")
        .expect("general perspective");
    let started = Instant::now();
    let pairs = memory
        .call(
            workspace,
            FindSimilarNodes {
                limit: 20,
                min_score: 0.75,
            },
        )
        .await?
        .pairs;
    let similar = started.elapsed();
    let started = Instant::now();
    let vectors = store
        .node_vectors(GetNodeVectors {
            workspace,
            model: "bench/terms-384",
            perspective: perspective.id,
        })
        .await?;
    let loaded_vectors = started.elapsed();
    let started = Instant::now();
    let plain: Vec<&[f32]> = vectors.iter().map(|v| v.vector.as_slice()).collect();
    let neighbours = similarity::nearest_neighbours(&plain, 10, 0.6);
    println!(
        "parts: find_similar_nodes {:.2}s ({} pairs), node_vectors {:.2}s ({} vectors), \
         nearest_neighbours {:.2}s ({} with neighbours)",
        similar.as_secs_f64(),
        pairs.len(),
        loaded_vectors.as_secs_f64(),
        vectors.len(),
        started.elapsed().as_secs_f64(),
        neighbours.iter().filter(|n| !n.is_empty()).count()
    );
    if plain.len() > similarity::EXACT_UP_TO {
        approximation_recall(&plain, &neighbours);
    }
    Ok(())
}

/// Prints how many of the exact neighbours (and of the exact similar pairs at 0.75, what
/// `find_similar_nodes` asks by default) the inverted file found.
fn approximation_recall(vectors: &[&[f32]], approximate: &[Vec<similarity::Neighbour>]) {
    let started = Instant::now();
    let exact = similarity::exact_neighbours(vectors, 10, 0.6);
    let elapsed = started.elapsed();
    let (mut found, mut wanted) = (0, 0);
    for (exact, approximate) in exact.iter().zip(approximate) {
        wanted += exact.len();
        found += exact.iter().filter(|n| approximate.contains(n)).count();
    }
    let exact_pairs = similarity::pairs(&exact, 0.75);
    let approximate_pairs: std::collections::HashSet<(usize, usize)> =
        (similarity::pairs(approximate, 0.75).into_iter())
            .map(|(a, b, _)| (a, b))
            .collect();
    let pairs_found = (exact_pairs.iter())
        .filter(|(a, b, _)| approximate_pairs.contains(&(*a, *b)))
        .count();
    println!(
        "exact nearest_neighbours {:.2}s; recall of the inverted file: neighbours {:.3} \
         ({found} of {wanted}), pairs at 0.75 {:.3} ({pairs_found} of {}), best 1,000 pairs {:.3}",
        elapsed.as_secs_f64(),
        found as f64 / wanted.max(1) as f64,
        pairs_found as f64 / exact_pairs.len().max(1) as f64,
        exact_pairs.len(),
        (exact_pairs.iter().take(1_000))
            .filter(|(a, b, _)| approximate_pairs.contains(&(*a, *b)))
            .count() as f64
            / exact_pairs.len().clamp(1, 1_000) as f64,
    );
}
