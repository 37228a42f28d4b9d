//! Overgrown nodes split: `propose_split` groups a node's current facts by meaning (their
//! vectors; their words where vectors are missing) and names each group by its most
//! distinctive words; `split_entity` moves chosen facts to new nodes related to the original,
//! in one transaction.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::grouping::{self, Budget, content_stems};
use crate::limits;
use crate::model::*;
use crate::search::words;
use crate::store::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// Most of a node's facts (its newest) that `propose_split` and the report group: grouping
/// compares every pair of them.
pub const GROUPED_FACTS: u32 = 1_000;

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
    /// What was left out: the older facts of a node of more than [`GROUPED_FACTS`], or
    /// groupings not tried when the work ran out of time. Absent when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
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
                secrets.screen_identity(|| field("entity_type"), entity_type)?;
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

/// What `split_entity` writes, planned once for both stores from the request and the
/// original node (`name`, `entity_type`) as its store's transaction reads it: each part's new
/// node (its type: the part's, else the original's) with its facts' moves (the old ordinals
/// ascending, new ordinals 1, 2, …), and each part's relation to the original, in the
/// request's order. The store creates what the plan says and answers it.
///
/// Errors: [`Error::InvalidArgument`] naming `parts[i].ordinals[j]` when that ordinal holds
/// no current fact of the original (`is_current` says which do).
pub fn plan_split(
    request: &SplitEntity,
    (name, entity_type): (&str, &str),
    is_current: impl Fn(Ordinal) -> bool,
) -> Result<SplitResult> {
    let mut parts = Vec::with_capacity(request.parts.len());
    for (i, part) in request.parts.iter().enumerate() {
        if let Some(j) = part.ordinals.iter().position(|o| !is_current(*o)) {
            return Err(Error::invalid(
                format!("parts[{i}].ordinals[{j}]"),
                format!("{name} has no current fact {}", part.ordinals[j]),
            ));
        }
        let mut old = part.ordinals.clone();
        old.sort_unstable();
        parts.push(CreatedPart {
            name: part.name.clone(),
            entity_type: (part.entity_type.as_deref())
                .unwrap_or(entity_type)
                .to_owned(),
            observations: (old.into_iter().zip(1..))
                .map(|(old_ordinal, new)| SplitMove {
                    old_ordinal,
                    new_ordinal: Ordinal(new),
                })
                .collect(),
        });
    }
    let relations = (request.parts.iter())
        .map(|part| Relation::new(&part.name, name, &request.relation_type))
        .collect();
    Ok(SplitResult {
        name: name.to_owned(),
        parts,
        relations,
    })
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
        let node = (store.fact_vectors(FactVectors {
            workspace,
            name: &request.name,
            model,
            perspective,
            newest: Some(GROUPED_FACTS + 1),
        }))
        .await?;
        let mut facts = node.facts;
        // Grouping compares every pair of facts: a node's newest thousand say what it is
        // about now (as the report's split candidates).
        let capped = facts.len() > GROUPED_FACTS as usize;
        if capped {
            facts.sort_by_key(|f| f.ordinal);
            facts.drain(..facts.len() - GROUPED_FACTS as usize);
        }
        let deadline = std::time::Instant::now() + grouping::ANALYSIS_BUDGET;
        let grouped = grouping_off_runtime(facts, max_parts, deadline).await?;
        let mut notices = Vec::new();
        if capped {
            notices.push(format!(
                "grouped the newest {GROUPED_FACTS} facts: the older ones stay on the node \
                 unless a part of split_entity names them"
            ));
        }
        if grouped.cut_short {
            notices.push(format!(
                "grouping stopped after {} s: fewer groups were tried",
                grouping::ANALYSIS_BUDGET.as_secs()
            ));
        }
        Ok(SplitProposal {
            groups: grouped.groups,
            name: node.name,
            notice: (!notices.is_empty()).then(|| notices.join("; ")),
        })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
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
        let request = self.check(context.secrets)?;
        context.store.split_entity(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

/// A grouping of a node's facts: its groups (largest first, one when the facts do not fall
/// apart), how far apart they stand (mean silhouette, −1 to 1; 0 for one group), and whether
/// the budget ran out before every number of groups was tried.
#[derive(Debug)]
pub(crate) struct Grouped {
    pub(crate) groups: Vec<SplitGroup>,
    pub(crate) silhouette: f32,
    pub(crate) cut_short: bool,
}

/// The facts in at most `max_parts` groups ([`grouping::group`]: k-means over the facts' own
/// vectors when every fact has one, else their words weighted by rarity among the node's
/// facts), each named by its most distinctive words.
pub(crate) fn grouping(facts: &[FactVector], max_parts: usize, budget: &Budget) -> Grouped {
    // Each fact's stems once: the grouping (without vectors) and every label read them.
    let stems: Vec<Vec<String>> = facts.iter().map(|f| content_stems(&f.content)).collect();
    let vectors: Vec<Option<&[f32]>> = facts.iter().map(|f| f.vector.as_deref()).collect();
    let found = grouping::group(&stems, &vectors, max_parts, budget);
    let k = found.assigned.iter().max().map_or(0, |m| m + 1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (fact, group) in found.assigned.iter().enumerate() {
        groups[*group].push(fact);
    }
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let groups = (groups.iter())
        .map(|group| SplitGroup {
            label: label(group, &stems, facts),
            ordinals: group.iter().map(|&f| facts[f].ordinal).collect(),
        })
        .collect();
    Grouped {
        groups,
        silhouette: found.silhouette,
        cut_short: found.cut_short,
    }
}

/// [`grouping`] off the async runtime ([`grouping::off_runtime`]), within `deadline`.
pub(crate) async fn grouping_off_runtime(
    facts: Vec<FactVector>,
    max_parts: usize,
    deadline: std::time::Instant,
) -> Result<Grouped> {
    grouping::off_runtime(deadline, move |budget| grouping(&facts, max_parts, budget)).await
}

/// A group's label: its three most distinctive stems (in more of its facts than of the
/// others'), each as written most often in it. `group` holds indices into `facts` and into
/// `stems`, each fact's [`content_stems`].
fn label(group: &[usize], stems: &[Vec<String>], facts: &[FactVector]) -> String {
    let share = |members: &mut dyn Iterator<Item = usize>, size: usize| {
        let mut counts: HashMap<&str, f32> = HashMap::new();
        for fact in members {
            for stem in stems[fact].iter().collect::<BTreeSet<_>>() {
                *counts.entry(stem).or_default() += 1.0 / size.max(1) as f32;
            }
        }
        counts
    };
    let members: std::collections::HashSet<usize> = group.iter().copied().collect();
    let inside = share(&mut group.iter().copied(), group.len());
    let outside = share(
        &mut (0..facts.len()).filter(|f| !members.contains(f)),
        facts.len() - group.len(),
    );
    let mut scored: Vec<(f32, &str)> = (inside.iter())
        .map(|(&stem, share)| (share - outside.get(stem).copied().unwrap_or(0.0), stem))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let chosen: Vec<&str> = scored.iter().take(3).map(|&(_, stem)| stem).collect();
    // How each chosen stem is written in the group: one pass over its words, each distinct
    // word stemmed once.
    let mut stem_of: HashMap<String, Option<String>> = HashMap::new();
    let mut forms: HashMap<&str, HashMap<String, usize>> = HashMap::new();
    for &fact in group {
        for word in words::words(&facts[fact].content) {
            let stem = stem_of
                .entry(word.clone())
                .or_insert_with(|| words::stems(&word).into_iter().next());
            if let Some(&chosen) = (stem.as_deref()).and_then(|s| chosen.iter().find(|c| **c == s))
            {
                *forms.entry(chosen).or_default().entry(word).or_default() += 1;
            }
        }
    }
    (chosen.iter())
        .map(|&stem| {
            (forms.remove(stem).unwrap_or_default().into_iter())
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                .map_or_else(|| stem.to_owned(), |(word, _)| word)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The tools that split a node.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<ProposeSplit>();
    visitor.visit::<SplitEntity>();
}

/// Overgrown nodes split.
#[async_trait]
pub trait SplitStore: Send + Sync + 'static {
    /// `split_entity`, in one transaction: each part created (type: its own or the
    /// original's) with the original's current facts it names (new ordinals 1, 2, … in the
    /// original's order; versions, periods and vectors move with them), related to the
    /// original by `relation_type`, and a `split:<part>` update event recorded on the
    /// original. [`crate::Error::NotFound`] for an unknown node;
    /// [`crate::Error::InvalidArgument`] naming `parts[i].name` when a node or alias has that
    /// name, `parts[i].ordinals[j]` when it is no current fact of the original.
    async fn split_entity(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SplitEntity>,
    ) -> Result<SplitResult>;
    /// The node's current facts in ordinal order (the newest `newest` of them, when given),
    /// each with its stored vector of `model` in `perspective` when there is one. [`crate::Error::NotFound`] for an unknown node.
    async fn fact_vectors(&self, request: FactVectors<'_>) -> Result<NodeFacts>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_is_planned_in_the_originals_order_and_refuses_a_fact_it_lacks() {
        let part = |name: &str, entity_type: Option<&str>, ordinals: &[i64]| SplitPart {
            name: name.into(),
            entity_type: entity_type.map(Into::into),
            ordinals: ordinals.iter().copied().map(Ordinal).collect(),
            summary: None,
        };
        let request = SplitEntity::new(
            "engram",
            vec![
                part("storage", None, &[7, 2]),
                part("search", Some("topic"), &[3]),
            ],
        );
        let plan = plan_split(&request, ("engram", "project"), |o| o.0 <= 7).unwrap();
        let moves = |p: &CreatedPart| -> Vec<(i64, i64)> {
            (p.observations.iter())
                .map(|m| (m.old_ordinal.0, m.new_ordinal.0))
                .collect()
        };
        assert_eq!(moves(&plan.parts[0]), [(2, 1), (7, 2)]);
        assert_eq!(plan.parts[0].entity_type, "project");
        assert_eq!(moves(&plan.parts[1]), [(3, 1)]);
        assert_eq!(plan.parts[1].entity_type, "topic");
        assert_eq!(
            plan.relations,
            [
                Relation::new("storage", "engram", "part_of"),
                Relation::new("search", "engram", "part_of")
            ]
        );
        let lacking = plan_split(&request, ("engram", "project"), |o| o.0 != 2).unwrap_err();
        assert!(
            lacking.to_string().contains("parts[0].ordinals[1]"),
            "{lacking}"
        );
    }

    fn groups(facts: &[FactVector], max_parts: usize) -> Vec<SplitGroup> {
        grouping(facts, max_parts, &Budget::unbounded()).groups
    }

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

    #[test]
    fn a_part_whose_name_or_type_holds_a_secret_is_refused_even_when_redacting() {
        use crate::SecretPolicy;
        let key = "AKIAQ7BXN2ZRLT4PYW3K";
        let request = |name: &str, entity_type: &str| {
            let part = SplitPart {
                name: name.into(),
                entity_type: Some(entity_type.into()),
                ordinals: vec![Ordinal(1)],
                summary: None,
            };
            SplitEntity::new("engram", vec![part])
        };
        for policy in [SecretPolicy::Refuse, SecretPolicy::Redact] {
            for (name, entity_type, field) in [
                (format!("deploy {key}"), "note".to_owned(), "parts[0].name"),
                (
                    "deploy".to_owned(),
                    format!("key {key}"),
                    "parts[0].entity_type",
                ),
            ] {
                match request(&name, &entity_type).check(policy) {
                    Err(Error::InvalidArgument {
                        field: named,
                        reason,
                    }) => {
                        assert_eq!(named, field, "{policy:?}: {reason}");
                        assert!(reason.contains("aws-access-key") && !reason.contains(key));
                    }
                    other => panic!("{policy:?} {field}: not refused: {other:?}"),
                }
            }
        }
        let allowed = request("deploy", &format!("key {key}")).check(SecretPolicy::Allow);
        assert!(allowed.is_ok(), "{allowed:?}");
        let ordinary = request("deploy", "environment").check(SecretPolicy::Refuse);
        assert!(ordinary.is_ok(), "{ordinary:?}");
    }
}
