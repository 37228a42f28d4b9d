//! Overgrown nodes split: `propose_split` groups a node's current facts by meaning (their
//! vectors; their words where vectors are missing) and names each group by its most
//! distinctive words; `split_entity` moves chosen facts to new nodes related to the original,
//! in one transaction.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::model::*;
use crate::search::similarity::{cosine, unit};
use crate::search::words;
use crate::store::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// Default and greatest `max_parts` of `propose_split`.
pub const DEFAULT_SPLIT_PARTS: u32 = 4;
const MAX_SPLIT_PARTS: u32 = 8;

/// Most parts one `split_entity` call creates.
pub const MAX_PARTS: usize = 16;

fn default_split_parts() -> u32 {
    DEFAULT_SPLIT_PARTS
}

fn default_part_relation() -> String {
    "part_of".into()
}

/// `propose_split`: how a node's facts fall into groups.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProposeSplit {
    /// The node.
    pub name: String,
    /// 2–8. Default 4.
    #[serde(default = "default_split_parts")]
    #[cfg_attr(feature = "schema", schemars(range(min = 2, max = 8)))]
    pub max_parts: u32,
}

impl ProposeSplit {
    /// `name`'s facts in at most [`DEFAULT_SPLIT_PARTS`] groups.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            max_parts: DEFAULT_SPLIT_PARTS,
        }
    }

    /// The request if the name is valid and `max_parts` is 2–8; else
    /// [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        limits::within("max_parts", self.max_parts, 2..=MAX_SPLIT_PARTS)?;
        Ok(Checked::new(self))
    }
}

/// One group of a [`SplitProposal`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SplitGroup {
    /// The group's most distinctive words, for a part's name.
    pub label: String,
    /// Its facts' ordinals, ascending.
    pub ordinals: Vec<Ordinal>,
}

/// Result of `propose_split`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SplitProposal {
    /// The node.
    pub name: String,
    /// The groups, largest first; one group when the facts do not fall apart.
    pub groups: Vec<SplitGroup>,
}

/// One new node of `split_entity`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SplitPart {
    /// A new node.
    pub name: String,
    /// Default: the original's.
    #[serde(default)]
    pub entity_type: Option<String>,
    /// The facts it takes.
    pub ordinals: Vec<Ordinal>,
    #[serde(default)]
    /// 1–65,536 bytes.
    pub summary: Option<String>,
}

/// `split_entity`: facts of an overgrown node moved to new nodes related to it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SplitEntity {
    /// The node.
    pub name: String,
    /// 1–16.
    pub parts: Vec<SplitPart>,
    /// From each part to the node. Default "part_of".
    #[serde(default = "default_part_relation")]
    pub relation_type: String,
}

impl SplitEntity {
    /// `name` split into `parts`, each `part_of` it.
    pub fn new(name: impl Into<String>, parts: Vec<SplitPart>) -> Self {
        Self {
            name: name.into(),
            parts,
            relation_type: default_part_relation(),
        }
    }

    /// The request if the names, types, summaries and ordinals are valid, there are 1–16
    /// parts with at least one ordinal each, no ordinal twice and no part named like another
    /// or the original; else [`Error::InvalidArgument`] naming the field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        limits::name("relation_type", &self.relation_type)?;
        if self.parts.is_empty() || self.parts.len() > MAX_PARTS {
            return Err(Error::invalid(
                "parts",
                format!("1–{MAX_PARTS} parts, got {}", self.parts.len()),
            ));
        }
        let mut taken: HashMap<Ordinal, usize> = HashMap::new();
        for (i, part) in self.parts.iter().enumerate() {
            let field = |name: &str| format!("parts[{i}].{name}");
            limits::name(&field("name"), &part.name)?;
            secrets.screen_identity(|| field("name"), &part.name)?;
            if part.name == self.name || self.parts[..i].iter().any(|p| p.name == part.name) {
                return Err(Error::invalid(
                    field("name"),
                    "repeats the original's or another part's name",
                ));
            }
            if let Some(entity_type) = &part.entity_type {
                limits::name(&field("entity_type"), entity_type)?;
            }
            if let Some(summary) = &part.summary {
                limits::content(&field("summary"), summary)?;
            }
            if part.ordinals.is_empty() {
                return Err(Error::invalid(
                    field("ordinals"),
                    "a part takes at least one fact",
                ));
            }
            for (j, ordinal) in part.ordinals.iter().enumerate() {
                limits::ordinal(&format!("parts[{i}].ordinals[{j}]"), *ordinal)?;
                if let Some(first) = taken.insert(*ordinal, i) {
                    return Err(Error::invalid(
                        format!("parts[{i}].ordinals[{j}]"),
                        format!("fact {ordinal} is taken by parts[{first}] already"),
                    ));
                }
            }
        }
        secrets.screen_identity(|| "relation_type".into(), &self.relation_type)?;
        for (i, part) in self.parts.iter_mut().enumerate() {
            if let Some(summary) = &mut part.summary {
                secrets.screen_owned(|| format!("parts[{i}].summary"), summary)?;
            }
        }
        Ok(Checked::new(self))
    }
}

/// Where one fact went (`split_entity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SplitMove {
    /// The fact's ordinal in the original.
    pub old_ordinal: Ordinal,
    /// Its ordinal in the part.
    pub new_ordinal: Ordinal,
}

/// One part `split_entity` created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreatedPart {
    /// The new node.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its facts, in the original's order.
    pub observations: Vec<SplitMove>,
}

/// Result of `split_entity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SplitResult {
    /// The original node.
    pub name: String,
    /// The parts, in request order.
    pub parts: Vec<CreatedPart>,
    /// The relations from each part to the original.
    pub relations: Vec<Relation>,
}

/// `propose_split`: the node's current facts with their vectors (the embedder's model, in the
/// perspective that stands for a node; none when every one is disabled), grouped.
impl Tool for ProposeSplit {
    const NAME: &'static str = "propose_split";
    const DESCRIPTION: &'static str = "Group a node's facts by topic, for split_entity.";
    const EFFECT: Effect = Effect::Reads;
    type Output = SplitProposal;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, search) = (context.store, context.search);
        let model = search.embedder().map(|e| e.model_id());
        let request = self.check()?;
        let max_parts = request.max_parts as usize;
        let perspective = match search.node_perspective(workspace).await {
            Ok(perspective) => Some(perspective.id),
            Err(Error::Conflict(_)) => None,
            Err(error) => return Err(error),
        };
        let node = crate::merge::through_aliases(
            store,
            workspace,
            (request, 1),
            |r, alias, node| crate::merge::rename(&mut r.name, alias, node),
            |r| async move {
                let facts = (store.fact_vectors(FactVectors {
                    workspace,
                    name: &r.name,
                    model,
                    perspective,
                    newest: None,
                }))
                .await;
                (r, facts)
            },
        )
        .await?;
        Ok(SplitProposal {
            groups: groups(&node.facts, max_parts),
            name: node.name,
        })
    }
}

impl Tool for SplitEntity {
    const NAME: &'static str = "split_entity";
    const DESCRIPTION: &'static str = "Move a node's facts to new nodes related to it.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: false,
    };
    type Output = SplitResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check(context.secrets)?);
        crate::merge::through_aliases(
            store,
            workspace,
            (request, 1),
            |r, alias, node| crate::merge::rename(&mut r.name, alias, node),
            |r| async move {
                let result = store.split_entity(workspace, &r).await;
                (r, result)
            },
        )
        .await
    }
}

/// Below this mean silhouette the facts are one group: they do not fall apart.
const MIN_SILHOUETTE: f32 = 0.05;

/// Rounds of k-means.
const ROUNDS: usize = 25;

/// The facts in at most `max_parts` groups: k-means (cosine) for each k from 2, the k whose
/// groups stand apart best (mean silhouette) kept; one group when none stands apart or there
/// are fewer than four facts. Vectors are the facts' own when every fact has one, else their
/// words weighted by rarity among the node's facts (tf-idf).
pub fn groups(facts: &[FactVector], max_parts: usize) -> Vec<SplitGroup> {
    grouping(facts, max_parts).0
}

/// [`groups`] with the mean silhouette of the grouping kept (0 when the facts stay one
/// group): how far apart the groups stand, −1 to 1.
pub(crate) fn grouping(facts: &[FactVector], max_parts: usize) -> (Vec<SplitGroup>, f32) {
    let vectors = fact_vectors(facts);
    let mut best: Option<(f32, Vec<usize>)> = None;
    for k in 2..=max_parts.min(facts.len() / 2) {
        let assigned = k_means(&vectors, k);
        let score = silhouette(&vectors, &assigned, k);
        if score >= MIN_SILHOUETTE && best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, assigned));
        }
    }
    let (silhouette, assigned) = best.unwrap_or_else(|| (0.0, vec![0; facts.len()]));
    let k = assigned.iter().max().map_or(0, |m| m + 1);
    let mut groups: Vec<Vec<&FactVector>> = vec![Vec::new(); k];
    for (fact, group) in facts.iter().zip(&assigned) {
        groups[*group].push(fact);
    }
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let groups = (groups.iter())
        .map(|group| SplitGroup {
            label: label(group, facts),
            ordinals: group.iter().map(|f| f.ordinal).collect(),
        })
        .collect();
    (groups, silhouette)
}

/// Unit vectors of the facts: their own, or tf-idf over their stems when any lacks one.
fn fact_vectors(facts: &[FactVector]) -> Vec<Vec<f32>> {
    if facts.iter().all(|f| f.vector.is_some()) {
        return (facts.iter())
            .map(|f| unit(f.vector.as_deref().unwrap_or_default()))
            .collect();
    }
    let stems: Vec<Vec<String>> = facts.iter().map(|f| content_stems(&f.content)).collect();
    let mut columns: HashMap<&str, usize> = HashMap::new();
    let mut containing: Vec<f32> = Vec::new();
    for fact in &stems {
        for stem in fact.iter().collect::<BTreeSet<_>>() {
            let next = columns.len();
            let column = *columns.entry(stem).or_insert(next);
            if column == containing.len() {
                containing.push(0.0);
            }
            containing[column] += 1.0;
        }
    }
    let n = facts.len() as f32;
    (stems.iter())
        .map(|fact| {
            let mut vector = vec![0.0; columns.len()];
            for stem in fact {
                let column = columns[stem.as_str()];
                vector[column] += (n / containing[column]).ln() + 1.0;
            }
            unit(&vector)
        })
        .collect()
}

/// A fact's stems, stop words left out.
fn content_stems(text: &str) -> Vec<String> {
    let kept: Vec<String> = words::words(text)
        .filter(|w| !words::is_stop_word(w))
        .collect();
    words::stems(&kept.join(" "))
}

/// Spherical k-means: centres started far apart (the fact least like the whole, then each
/// next the one least like the centres so far), each fact's group by its nearest centre.
fn k_means(vectors: &[Vec<f32>], k: usize) -> Vec<usize> {
    let dims = vectors.first().map_or(0, Vec::len);
    let mean = unit(
        &(0..dims)
            .map(|d| vectors.iter().map(|v| v[d]).sum::<f32>())
            .collect::<Vec<_>>(),
    );
    let nearest = |centres: &[Vec<f32>], v: &[f32]| {
        (centres.iter().map(|c| cosine(c, v))).fold(f32::MIN, f32::max)
    };
    let mut centres: Vec<Vec<f32>> = Vec::with_capacity(k);
    while centres.len() < k {
        let far = (0..vectors.len())
            .min_by(|&a, &b| {
                let score = |i: usize| match centres.is_empty() {
                    true => cosine(&mean, &vectors[i]),
                    false => nearest(&centres, &vectors[i]),
                };
                score(a).total_cmp(&score(b))
            })
            .unwrap_or(0);
        centres.push(vectors[far].clone());
    }
    let mut assigned = vec![0; vectors.len()];
    for _ in 0..ROUNDS {
        for (v, group) in vectors.iter().zip(assigned.iter_mut()) {
            *group = (0..k)
                .max_by(|&a, &b| cosine(&centres[a], v).total_cmp(&cosine(&centres[b], v)))
                .unwrap_or(0);
        }
        for (g, centre) in centres.iter_mut().enumerate() {
            let members: Vec<&Vec<f32>> = (vectors.iter().zip(&assigned))
                .filter(|(_, a)| **a == g)
                .map(|(v, _)| v)
                .collect();
            if !members.is_empty() {
                *centre = unit(
                    &(0..dims)
                        .map(|d| members.iter().map(|v| v[d]).sum::<f32>())
                        .collect::<Vec<_>>(),
                );
            }
        }
    }
    assigned
}

/// The mean silhouette of a grouping (cosine distance): how much nearer each fact is to its
/// own group than to the next; 0 for a fact alone in its group.
fn silhouette(vectors: &[Vec<f32>], assigned: &[usize], k: usize) -> f32 {
    let distance = |a: usize, b: usize| 1.0 - cosine(&vectors[a], &vectors[b]);
    let mut total = 0.0;
    for i in 0..vectors.len() {
        let mut sums = vec![(0.0_f32, 0_usize); k];
        for j in (0..vectors.len()).filter(|&j| j != i) {
            let entry = &mut sums[assigned[j]];
            entry.0 += distance(i, j);
            entry.1 += 1;
        }
        let own = sums[assigned[i]];
        if own.1 == 0 {
            continue;
        }
        let a = own.0 / own.1 as f32;
        let b = (sums.iter().enumerate())
            .filter(|(g, (_, count))| *g != assigned[i] && *count > 0)
            .map(|(_, (sum, count))| sum / *count as f32)
            .fold(f32::MAX, f32::min);
        if b < f32::MAX {
            total += (b - a) / a.max(b).max(f32::EPSILON);
        }
    }
    total / vectors.len().max(1) as f32
}

/// A group's label: its three most distinctive words (more frequent in it than in the others),
/// each as written most often.
fn label(group: &[&FactVector], all: &[FactVector]) -> String {
    let share = |facts: &mut dyn Iterator<Item = &FactVector>, size: usize| {
        let mut counts: HashMap<String, f32> = HashMap::new();
        for fact in facts {
            for stem in content_stems(&fact.content)
                .into_iter()
                .collect::<BTreeSet<_>>()
            {
                *counts.entry(stem).or_default() += 1.0 / size.max(1) as f32;
            }
        }
        counts
    };
    let inside = share(&mut group.iter().copied(), group.len());
    let others = all.len() - group.len();
    let outside = share(
        &mut all
            .iter()
            .filter(|f| !group.iter().any(|g| g.ordinal == f.ordinal)),
        others,
    );
    let mut scored: Vec<(f32, &String)> = (inside.iter())
        .map(|(stem, share)| (share - outside.get(stem).copied().unwrap_or(0.0), stem))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let written = |stem: &str| {
        let mut forms: HashMap<String, usize> = HashMap::new();
        for fact in group {
            for word in words::words(&fact.content) {
                if words::stems(&word).first().is_some_and(|s| s == stem) {
                    *forms.entry(word).or_default() += 1;
                }
            }
        }
        (forms.into_iter())
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map_or_else(|| stem.to_owned(), |(word, _)| word)
    };
    (scored.iter().take(3))
        .map(|(_, stem)| written(stem))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tools that split a node.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<ProposeSplit>();
    visitor.visit::<SplitEntity>();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(ordinal: i64, content: &str, vector: Option<Vec<f32>>) -> FactVector {
        FactVector {
            ordinal: Ordinal(ordinal),
            content: content.into(),
            vector,
        }
    }

    #[test]
    fn facts_with_vectors_fall_into_the_groups_their_vectors_make() {
        // Three directions, two facts each, slightly apart.
        let near = |axis: usize, wobble: f32| {
            let mut v = vec![wobble; 3];
            v[axis] = 1.0;
            Some(v)
        };
        let facts = [
            fact(1, "alpha one", near(0, 0.05)),
            fact(2, "beta one", near(1, 0.05)),
            fact(3, "gamma one", near(2, 0.05)),
            fact(4, "alpha two", near(0, 0.1)),
            fact(5, "beta two", near(1, 0.1)),
            fact(6, "gamma two", near(2, 0.1)),
        ];
        let mut found: Vec<Vec<i64>> = (groups(&facts, 4).iter())
            .map(|g| g.ordinals.iter().map(|o| o.0).collect())
            .collect();
        found.sort();
        assert_eq!(found, [vec![1, 4], vec![2, 5], vec![3, 6]]);
    }

    #[test]
    fn facts_that_do_not_fall_apart_stay_one_group() {
        let same = Some(vec![1.0, 0.0]);
        let facts: Vec<FactVector> = (1..=6)
            .map(|i| fact(i, "the same thing", same.clone()))
            .collect();
        let found = groups(&facts, 4);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].ordinals.len(), 6);
        assert!(groups(&facts[..3], 4).len() == 1);
    }

    #[test]
    fn a_label_names_what_sets_its_group_apart() {
        let facts = [
            fact(1, "the storage keeps tables", None),
            fact(2, "storage tables migrate", None),
            fact(3, "search ranks results", None),
            fact(4, "search results carry scores", None),
        ];
        let found = groups(&facts, 2);
        let labels: Vec<&str> = found.iter().map(|g| g.label.as_str()).collect();
        assert!(labels.iter().any(|l| l.contains("storage")), "{labels:?}");
        assert!(labels.iter().any(|l| l.contains("search")), "{labels:?}");
    }
}
