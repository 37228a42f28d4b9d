//! The report's texts: `draft_summary`, `rationale` and `centroid_label`.
//!
//! Every text is first written extractively from the graph (observations nearest a node's
//! centroid, the terms two nodes share, the most central node's name), so a report always has
//! something. With a [`crate::TextGenerator`], the texts are then asked of the model
//! concurrently within the report's [`crate::GenerationBudget`]; each answer that arrives in
//! time and is not empty replaces its extractive text.

use crate::store::VectorSearch;
use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use tokio::time::{Instant, timeout_at};

use super::Reporter;
use super::{ConsolidationReport, TextSource};
use crate::compact::truncate;
use crate::error::Result;
use crate::limits::MAX_BATCH;
use crate::model::{NodeDetail, Ordinal, WorkspaceId};
use crate::vectors::NodeVector;

/// Observations quoted in an extractive draft.
const DRAFT_OBSERVATIONS: usize = 3;
/// Longest text kept from any source, in characters.
const MAX_DRAFT_CHARS: usize = 600;
const MAX_RATIONALE_CHARS: usize = 300;
const MAX_LABEL_CHARS: usize = 80;
/// Observations per node shown to the model, and characters of them in all.
const PROMPT_OBSERVATIONS: usize = 30;
const PROMPT_CHARS: usize = 4_000;
/// Shared terms named in an extractive rationale.
const SHARED_TERMS: usize = 5;
/// A cluster's most central members read for its label.
const LABEL_MEMBERS: usize = 10;
/// Terms named in an extractive label.
const LABEL_TERMS: usize = 3;

/// Which field of the report a text belongs to.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Draft(usize),
    Rationale(usize),
    Label(usize),
}

/// Fills every draft, rationale and label of `report`.
pub(super) async fn write(
    memory: &Reporter<'_>,
    workspace: WorkspaceId,
    perspective: Option<crate::PerspectiveId>,
    node_vectors: &[NodeVector],
    report: &mut ConsolidationReport,
) -> Result<()> {
    let vectors: HashMap<&str, &[f32]> = node_vectors
        .iter()
        .map(|v| (v.name.as_str(), v.vector.as_slice()))
        .collect();
    let details = node_details(memory, workspace, report).await?;
    let mut prompts = Vec::new();

    for (i, stale) in report.stale_summaries.iter_mut().enumerate() {
        let Some(node) = details.get(&stale.name) else {
            continue;
        };
        let nearest = match (
            memory.embedder,
            perspective,
            vectors.get(node.name.as_str()),
        ) {
            (Some(embedder), Some(perspective), Some(vector)) => memory
                .store
                .vector_search(VectorSearch {
                    workspace,
                    model: embedder.model_id(),
                    perspective,
                    vector,
                    k: DRAFT_OBSERVATIONS,
                    within: Some(&node.name),
                })
                .await?
                .into_iter()
                .map(|hit| (hit.ordinal, hit.content))
                .collect(),
            _ => Vec::new(),
        };
        stale.draft_summary = Some(extractive_draft(node, nearest));
        stale.draft_source = Some(TextSource::Extractive);
        prompts.push((Slot::Draft(i), draft_prompt(node)));
    }
    for (i, pair) in report.relation_candidates.iter_mut().enumerate() {
        let (Some(a), Some(b)) = (details.get(&pair.node_a), details.get(&pair.node_b)) else {
            continue;
        };
        pair.rationale = Some(extractive_rationale(a, b, pair.similarity_score));
        pair.rationale_source = Some(TextSource::Extractive);
        prompts.push((Slot::Rationale(i), rationale_prompt(a, b)));
    }
    let types: HashMap<&str, &str> = node_vectors
        .iter()
        .map(|v| (v.name.as_str(), v.entity_type.as_str()))
        .collect();
    for (i, cluster) in report.cluster_summary.iter_mut().enumerate() {
        let members: Vec<&NodeDetail> = cluster
            .node_names
            .iter()
            .take(LABEL_MEMBERS)
            .filter_map(|name| details.get(name))
            .collect();
        let central = &cluster.node_names[0];
        let mut label = format!(
            "{central} ({}) and {} similar",
            types.get(central.as_str()).copied().unwrap_or("node"),
            cluster.size - 1
        );
        let common = common_terms(&members);
        if !common.is_empty() {
            label = format!("{label}: {}", common.join(", "));
        }
        cluster.centroid_label = Some(label);
        cluster.label_source = Some(TextSource::Extractive);
        prompts.push((Slot::Label(i), label_prompt(&members)));
    }

    if memory.generator.is_some() {
        generate(memory, prompts, report).await;
    }
    Ok(())
}

/// The stale nodes, both ends of every candidate pair and the most central members of every
/// cluster, by name.
async fn node_details(
    memory: &Reporter<'_>,
    workspace: WorkspaceId,
    report: &ConsolidationReport,
) -> Result<HashMap<String, NodeDetail>> {
    let mut names: Vec<String> = report
        .stale_summaries
        .iter()
        .map(|s| s.name.clone())
        .chain(
            report
                .relation_candidates
                .iter()
                .flat_map(|p| [p.node_a.clone(), p.node_b.clone()]),
        )
        .chain(
            report
                .cluster_summary
                .iter()
                .flat_map(|c| c.node_names.iter().take(LABEL_MEMBERS).cloned()),
        )
        .collect();
    names.sort();
    names.dedup();
    let mut details = HashMap::new();
    for chunk in names.chunks(MAX_BATCH) {
        let opened =
            crate::nodes::open_checked(memory.store, workspace, chunk, crate::ReadTime::Now)
                .await?;
        details.extend(opened.entities.into_iter().map(|n| (n.name.clone(), n)));
    }
    Ok(details)
}

/// Asks the generator for every prompt, `budget.concurrency` at a time, until the budget's
/// deadline; writes each usable answer into its slot and notes what stayed extractive.
async fn generate(
    memory: &Reporter<'_>,
    prompts: Vec<(Slot, String)>,
    report: &mut ConsolidationReport,
) {
    let Some(generator) = memory.generator else {
        return;
    };
    let budget = memory.budget;
    let deadline = Instant::now() + budget.total;
    let total = prompts.len();
    let mut answers = futures::stream::iter(prompts)
        .map(|(slot, prompt)| {
            let generator = generator.clone();
            async move { (slot, generator.generate(&prompt).await) }
        })
        .buffer_unordered(budget.concurrency.max(1));
    let (mut written, mut failed) = (0, 0);
    while let Ok(Some((slot, answer))) = timeout_at(deadline, answers.next()).await {
        let cleaned = answer.ok().and_then(|text| clean(&text, max_chars(slot)));
        match cleaned {
            Some(text) => {
                place(report, slot, text);
                written += 1;
            }
            None => failed += 1,
        }
    }
    if written < total {
        let timed_out = total - written - failed;
        report.notices.push(format!(
            "{} wrote {written} of {total} texts; {failed} failed and {timed_out} did not finish \
             within {} s, so those stay extractive",
            generator.model_id(),
            budget.total.as_secs_f32()
        ));
    }
}

fn place(report: &mut ConsolidationReport, slot: Slot, text: String) {
    match slot {
        Slot::Draft(i) => {
            let stale = &mut report.stale_summaries[i];
            stale.draft_summary = Some(text);
            stale.draft_source = Some(TextSource::Llm);
        }
        Slot::Rationale(i) => {
            let pair = &mut report.relation_candidates[i];
            pair.rationale = Some(text);
            pair.rationale_source = Some(TextSource::Llm);
        }
        Slot::Label(i) => {
            let cluster = &mut report.cluster_summary[i];
            cluster.centroid_label = Some(text);
            cluster.label_source = Some(TextSource::Llm);
        }
    }
}

fn max_chars(slot: Slot) -> usize {
    match slot {
        Slot::Draft(_) => MAX_DRAFT_CHARS,
        Slot::Rationale(_) => MAX_RATIONALE_CHARS,
        Slot::Label(_) => MAX_LABEL_CHARS,
    }
}

/// A model's answer as one line: whitespace collapsed, surrounding quotes dropped, cut at
/// `max` characters; `None` when nothing is left.
fn clean(text: &str, max: usize) -> Option<String> {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line
        .trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .trim();
    (!line.is_empty()).then(|| truncate(line, max))
}

/// The observations nearest the node's centroid, in ordinal order; without vectors the first
/// and the newest observations.
fn extractive_draft(node: &NodeDetail, nearest: Vec<(Ordinal, String)>) -> String {
    let chosen: BTreeMap<Ordinal, String> = if nearest.is_empty() {
        let observations = &node.observations;
        observations
            .iter()
            .take(DRAFT_OBSERVATIONS - 1)
            .chain(observations.iter().skip(DRAFT_OBSERVATIONS - 1).last())
            .map(|o| (o.ordinal, o.content.clone()))
            .collect()
    } else {
        nearest.into_iter().collect()
    };
    let sentences: Vec<String> = chosen
        .into_values()
        .map(|content| content.trim().trim_end_matches('.').to_string())
        .collect();
    truncate(&format!("{}.", sentences.join("; ")), MAX_DRAFT_CHARS)
}

/// The score and the content words both nodes' names and observations use, commonest first.
fn extractive_rationale(a: &NodeDetail, b: &NodeDetail, score: f64) -> String {
    let (terms_a, terms_b) = (terms(a), terms(b));
    let mut shared: Vec<(&String, usize)> = terms_a
        .iter()
        .filter_map(|(term, n)| terms_b.get(term).map(|m| (term, n + m)))
        .collect();
    shared.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
    let shared: Vec<&str> = shared
        .iter()
        .take(SHARED_TERMS)
        .map(|(t, _)| t.as_str())
        .collect();
    if shared.is_empty() {
        format!("cosine similarity {score:.2}; no shared terms, so similar in meaning, not wording")
    } else {
        format!(
            "cosine similarity {score:.2}; both mention {}",
            shared.join(", ")
        )
    }
}

/// The terms most of `members` use (at least two of them), the commonest first.
fn common_terms(members: &[&NodeDetail]) -> Vec<String> {
    let mut members_using: HashMap<String, usize> = HashMap::new();
    for member in members {
        for term in terms(member).into_keys() {
            *members_using.entry(term).or_insert(0) += 1;
        }
    }
    let mut common: Vec<(String, usize)> =
        members_using.into_iter().filter(|(_, n)| *n >= 2).collect();
    common.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    common
        .into_iter()
        .take(LABEL_TERMS)
        .map(|(t, _)| t)
        .collect()
}

/// Words of the summary and observations of 3 letters or more, lower-cased, without digits
/// (dates, ids) or stop words, with their counts. Names are left out: they are often ids.
fn terms(node: &NodeDetail) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    let texts = node
        .summary
        .iter()
        .map(String::as_str)
        .chain(node.observations.iter().map(|o| o.content.as_str()));
    for word in texts.flat_map(|t| t.split(|c: char| !c.is_alphanumeric())) {
        let word = word.to_lowercase();
        if word.chars().count() >= 3
            && !word.chars().any(|c| c.is_numeric())
            && !STOP_WORDS.contains(&word.as_str())
        {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    counts
}

const STOP_WORDS: [&str; 40] = [
    "and", "are", "but", "can", "did", "for", "from", "had", "has", "have", "her", "him", "his",
    "its", "not", "now", "one", "our", "she", "that", "the", "their", "them", "then", "there",
    "they", "this", "was", "were", "what", "when", "which", "who", "will", "with", "would", "you",
    "your", "been", "also",
];

/// The node's observations for a prompt, newest last, within the prompt's size.
fn facts(node: &NodeDetail) -> String {
    let mut lines = Vec::new();
    let mut chars = 0;
    let start = node.observations.len().saturating_sub(PROMPT_OBSERVATIONS);
    for observation in &node.observations[start..] {
        chars += observation.content.len();
        if chars > PROMPT_CHARS {
            break;
        }
        lines.push(format!("- {}", observation.content.trim()));
    }
    lines.join("\n")
}

fn draft_prompt(node: &NodeDetail) -> String {
    format!(
        "Write a summary of one or two sentences of the {} \"{}\", using only the facts \
         below. Answer with the summary alone.\n\nFacts:\n{}\n\nSummary:",
        node.entity_type,
        node.name,
        facts(node)
    )
}

fn rationale_prompt(a: &NodeDetail, b: &NodeDetail) -> String {
    format!(
        "Two entities in a knowledge graph have similar content but no relation. In one \
         sentence, say what connects them, or whether they are duplicates. Answer with the \
         sentence alone.\n\n{} \"{}\":\n{}\n\n{} \"{}\":\n{}\n\nConnection:",
        a.entity_type,
        a.name,
        facts(a),
        b.entity_type,
        b.name,
        facts(b)
    )
}

fn label_prompt(members: &[&NodeDetail]) -> String {
    let lines: Vec<String> = members
        .iter()
        .map(|m| {
            let fact = m.observations.first().map_or("", |o| o.content.as_str());
            format!(
                "- {} ({}): {}",
                m.name,
                m.entity_type,
                truncate(fact.trim(), 200)
            )
        })
        .collect();
    format!(
        "These entities of a knowledge graph form one group:\n{}\n\nName what they have in \
         common in at most five words. Answer with the name alone.\n\nName:",
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Observation;

    fn node(name: &str, observations: &[&str]) -> NodeDetail {
        NodeDetail {
            name: name.into(),
            entity_type: "person".into(),
            summary: None,
            tags: Vec::new(),
            observations: observations
                .iter()
                .enumerate()
                .map(|(i, content)| Observation::new(Ordinal(i as i64 + 1), *content))
                .collect(),
            aliases: Vec::new(),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
            reflections: Vec::new(),
            more_reflections: None,
        }
    }

    #[test]
    fn an_extractive_draft_quotes_the_nearest_or_the_first_and_newest_observations() {
        let alice = node(
            "Alice",
            &[
                "Lives in Lisbon.",
                "Likes tea",
                "Works at Acme",
                "Has a cat",
            ],
        );
        assert_eq!(
            extractive_draft(&alice, Vec::new()),
            "Lives in Lisbon; Likes tea; Has a cat."
        );
        let nearest = vec![
            (Ordinal(3), "Works at Acme".into()),
            (Ordinal(1), "Lives in Lisbon.".into()),
        ];
        assert_eq!(
            extractive_draft(&alice, nearest),
            "Lives in Lisbon; Works at Acme."
        );
    }

    #[test]
    fn an_extractive_rationale_names_the_score_and_the_shared_terms() {
        let a = node(
            "Alice",
            &["Moved to Lisbon", "Lisbon apartment near the river"],
        );
        let b = node("Alicia", &["Lives in Lisbon", "Her apartment is small"]);
        assert_eq!(
            extractive_rationale(&a, &b, 0.912),
            "cosine similarity 0.91; both mention lisbon, apartment"
        );
        let c = node("Bob", &["Plays chess"]);
        assert!(extractive_rationale(&a, &c, 0.8).contains("no shared terms"));
    }

    #[test]
    fn a_label_names_the_terms_most_members_use() {
        let a = node("A", &["paints landscapes in oil", "sells paintings"]);
        let b = node("B", &["paints portraits in oil"]);
        let c = node("C", &["paints murals", "teaches oil painting"]);
        assert_eq!(common_terms(&[&a, &b, &c]), ["oil", "paints"]);
        assert!(common_terms(&[&a]).is_empty());
    }

    #[test]
    fn answers_are_cleaned_to_one_bounded_line() {
        assert_eq!(
            clean("  \"Two  friends\nin Lisbon\" ", 80).as_deref(),
            Some("Two friends in Lisbon")
        );
        assert_eq!(clean(" \n ", 80), None);
        assert_eq!(clean("abcdef", 3).as_deref(), Some("abc…"));
    }
}
