//! Moving whole graphs in and out: the records of engram's lossless export, the pages
//! `read_graph` and `engram export` walk, and the batches `engram import` writes.
//!
//! One [`NodeRecord`] carries everything a node holds (ordinals, timestamps, the ordinal
//! counter), so an export imported into an empty workspace recreates it exactly. The same
//! type comes in from files that know less (the reference memory server's JSONL has no
//! ordinals or timestamps): every field that can be missing is optional and the store fills
//! it as a write would.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::limits;
use crate::model::Timestamp;

/// A node with everything it holds: a line of engram's JSONL export and a unit of import.
///
/// On import, missing timestamps become the time of the import, missing ordinals the node's
/// next ones, and `next_ordinal` at least one past the highest ordinal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeRecord {
    /// Unique within the workspace; 1–256 bytes.
    pub name: String,
    /// The node's type; 1–256 bytes.
    pub entity_type: String,
    /// Its summary, if one was set; 1–65,536 bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// When the summary was last set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_updated_at: Option<Timestamp>,
    /// Its tags in order; at most 64 of 1–128 bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The ordinal the node's next observation gets (deleted ordinals are never reused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_ordinal: Option<i64>,
    /// When the node was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// When it or any of its children was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    /// Its observations in ordinal order.
    #[serde(default)]
    pub observations: Vec<ObservationRecord>,
}

/// An observation with its ordinal and timestamps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ObservationRecord {
    /// Position within the node, from 1; on import, a taken or missing ordinal becomes the
    /// node's next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<crate::Ordinal>,
    /// The fact, 1–65,536 bytes.
    pub content: String,
    /// When it was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// When it was last replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// A directed typed relation between two nodes, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelationRecord {
    /// Source node name.
    pub from: String,
    /// Target node name.
    pub to: String,
    /// The relation's type; 1–256 bytes.
    pub relation_type: String,
    /// When it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

/// Which page of a workspace's graph to read ([`crate::TransferStore::graph_page`]): nodes in
/// name order (byte-wise) after `after`, at most `limit`, optionally of one type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphPageQuery {
    /// Start after this name (the previous page's last); from the first node when `None`.
    pub after: Option<String>,
    /// At most this many nodes.
    pub limit: u32,
    /// Only nodes of this type.
    pub entity_type: Option<String>,
    /// Whether to read the nodes' observations (their count comes back either way).
    pub observations: bool,
    /// Whether to count the matching nodes and relations over all pages (`read_graph` says
    /// them on every page; an export walking every page needs them on none).
    pub totals: bool,
}

/// A page of a workspace's graph: nodes in name order with their outgoing relations, so the
/// pages together hold every node and every relation exactly once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphPage {
    /// The page's nodes, each with its observation count.
    pub nodes: Vec<(NodeRecord, u64)>,
    /// The relations whose source is on this page, sorted.
    pub relations: Vec<RelationRecord>,
    /// Nodes in the workspace that match the query's type (all pages), when asked for.
    pub total_nodes: Option<u64>,
    /// Relations whose source matches the query's type (all pages), when asked for.
    pub total_relations: Option<u64>,
}

/// What one import batch did ([`crate::TransferStore::import`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportOutcome {
    /// Nodes created.
    pub nodes_created: u64,
    /// Nodes that existed already (their type, summary and tags were left alone).
    pub nodes_existing: u64,
    /// Observations added.
    pub observations_added: u64,
    /// Observations skipped because their node already held the same text.
    pub observations_existing: u64,
    /// Relations created.
    pub relations_created: u64,
    /// Relations that existed already.
    pub relations_existing: u64,
    /// Relations not created because an endpoint does not exist, in input order.
    pub relations_missing: Vec<RelationRecord>,
}

impl ImportOutcome {
    /// Adds another batch's counts (and missing relations) to these.
    pub fn absorb(&mut self, other: ImportOutcome) {
        self.nodes_created += other.nodes_created;
        self.nodes_existing += other.nodes_existing;
        self.observations_added += other.observations_added;
        self.observations_existing += other.observations_existing;
        self.relations_created += other.relations_created;
        self.relations_existing += other.relations_existing;
        self.relations_missing.extend(other.relations_missing);
    }
}

/// How much of each node `read_graph` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum GraphDetail {
    /// Name and type only.
    Names,
    /// Name, type, summary, tags and the number of observations.
    #[default]
    Summary,
    /// Everything, observations included.
    Full,
}

/// A node as `read_graph` returns it; fields beyond name and type depend on the detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PagedNode {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// Its summary, if one was set (`summary` and `full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Its tags (`summary` and `full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// How many observations it holds (`summary` and `full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observation_count: Option<u64>,
    /// Its observations in ordinal order (`full`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observations: Option<Vec<crate::model::Observation>>,
}

/// What `read_graph` returns: one page of nodes in name order with their outgoing relations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphPageResult {
    /// The page's nodes, by name.
    pub entities: Vec<PagedNode>,
    /// Every relation whose source node is on this page, so the pages together hold each
    /// relation once.
    pub relations: Vec<crate::model::Relation>,
    /// Nodes in the workspace (of `entity_type`, when given), over all pages.
    pub total_entities: u64,
    /// Relations from those nodes, over all pages.
    pub total_relations: u64,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Which observations were left out because a page holds at most 8 MiB of text, and the
    /// call that reads them; absent when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl GraphPageResult {
    /// Shapes a store page read with one node more than `limit` (which, when present, says
    /// that another page follows and is left out) at `detail`.
    pub fn from_page(mut page: GraphPage, detail: GraphDetail, limit: u32) -> Self {
        let mut next_cursor = None;
        if page.nodes.len() > limit as usize {
            page.nodes.truncate(limit as usize);
            let last = page.nodes.last().map(|(node, _)| node.name.clone());
            if let Some(last) = &last {
                page.relations.retain(|r| r.from <= *last);
            }
            next_cursor = last;
        }
        let entities = (page.nodes.into_iter())
            .map(|(node, count)| {
                let more = detail != GraphDetail::Names;
                PagedNode {
                    observations: (detail == GraphDetail::Full).then(|| {
                        (node.observations.into_iter())
                            .map(|o| {
                                crate::model::Observation::new(
                                    o.ordinal.unwrap_or_default(),
                                    o.content,
                                )
                            })
                            .collect()
                    }),
                    summary: node.summary.filter(|_| more),
                    tags: more.then_some(node.tags),
                    observation_count: more.then_some(count),
                    name: node.name,
                    entity_type: node.entity_type,
                }
            })
            .collect();
        Self {
            entities,
            relations: (page.relations.into_iter())
                .map(|r| crate::model::Relation::new(r.from, r.to, r.relation_type))
                .collect(),
            total_entities: page.total_nodes.unwrap_or_default(),
            total_relations: page.total_relations.unwrap_or_default(),
            next_cursor,
            notice: None,
        }
    }

    /// Ends a page in full detail before the node whose observations would take its text
    /// past `budget` bytes (the next page starts there); a first node larger than that alone
    /// keeps its observations up to the budget, and `notice` says how to read the rest.
    /// The suggested call reads as the page did (`include_ended`).
    pub fn within_text_bytes(&mut self, budget: usize, include_ended: bool) {
        let mut used = 0usize;
        let mut end = None;
        for (at, node) in self.entities.iter_mut().enumerate() {
            let Some(observations) = node.observations.as_mut() else {
                return;
            };
            let bytes: usize = observations.iter().map(|o| o.content.len()).sum();
            if at > 0 && used + bytes > budget {
                end = Some(at);
                break;
            }
            used += bytes;
            if bytes > budget {
                let keep = crate::nodes::cut_at(observations, &mut 0, budget)
                    .unwrap_or(observations.len());
                let rest = observations.split_off(keep);
                let after = observations.last().map_or(0, |o| o.ordinal.0);
                self.notice = Some(format!(
                    "{} observations of {:?} left out past the {} MiB of text one page holds; \
                     read them with {}",
                    rest.len(),
                    node.name,
                    budget / (1024 * 1024),
                    crate::nodes::read_on_call(&node.name, after, include_ended, None)
                ));
                end = Some(at + 1);
                break;
            }
        }
        let Some(end) = end.filter(|end| *end < self.entities.len()) else {
            return;
        };
        self.entities.truncate(end);
        if let Some(last) = self.entities.last().map(|node| node.name.clone()) {
            self.relations.retain(|r| r.from <= last);
            self.next_cursor = Some(last);
        }
    }
}

/// Checks a node record against [`crate::limits`] and returns it with its tags de-duplicated;
/// errors name the field (`name`, `observations[3].content`, …) and the limit.
///
/// # Errors
/// [`crate::Error::InvalidArgument`].
pub fn validate_node(mut node: NodeRecord) -> Result<NodeRecord> {
    limits::name("name", &node.name)?;
    limits::name("entity_type", &node.entity_type)?;
    if let Some(summary) = &node.summary {
        limits::content("summary", summary)?;
    }
    node.tags = limits::tags("tags", &node.tags)?;
    for (field, at) in [
        ("summary_updated_at", node.summary_updated_at),
        ("created_at", node.created_at),
        ("updated_at", node.updated_at),
    ] {
        at.map_or(Ok(()), |at| limits::timestamp(field, at))?;
    }
    if let Some(next) = node.next_ordinal {
        limits::ordinal_counter("next_ordinal", next)?;
    }
    for (i, observation) in node.observations.iter().enumerate() {
        limits::content(&format!("observations[{i}].content"), &observation.content)?;
        if let Some(ordinal) = observation.ordinal {
            limits::assigned_ordinal(&format!("observations[{i}].ordinal"), ordinal.0)?;
        }
        for (field, at) in [
            ("created_at", observation.created_at),
            ("updated_at", observation.updated_at),
        ] {
            let field = format!("observations[{i}].{field}");
            at.map_or(Ok(()), |at| limits::timestamp(&field, at))?;
        }
    }
    Ok(node)
}

/// Checks a relation record's names, type and time against [`crate::limits`].
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming `from`, `to`, `relation_type` or `created_at`.
pub fn validate_relation(relation: &RelationRecord) -> Result<()> {
    limits::name("from", &relation.from)?;
    limits::name("to", &relation.to)?;
    limits::name("relation_type", &relation.relation_type)?;
    (relation.created_at).map_or(Ok(()), |at| limits::timestamp("created_at", at))
}

/// Where a node's observations go on import: `(index into node.observations, ordinal)` for
/// each observation to insert, and the node's next ordinal afterwards. Texts in `present`
/// (the node's current observations) or repeated within the record are skipped; an ordinal
/// that is given and free is kept, any other gets the next free one.
pub fn place_observations(
    node: &NodeRecord,
    present: &[(i64, String)],
    next_ordinal: i64,
) -> (Vec<(usize, i64)>, i64) {
    use std::collections::HashSet;
    let mut texts: HashSet<&str> = present.iter().map(|(_, c)| c.as_str()).collect();
    let mut taken: HashSet<i64> = present.iter().map(|(o, _)| *o).collect();
    let mut kept = Vec::new();
    for (i, observation) in node.observations.iter().enumerate() {
        if texts.insert(observation.content.as_str()) {
            kept.push(i);
        }
    }
    let mut next = next_ordinal.max(node.next_ordinal.unwrap_or(1));
    // Given ordinals first, so one observation's ordinal cannot push another's.
    let mut placed: Vec<(usize, i64)> = Vec::with_capacity(kept.len());
    let mut unplaced = Vec::new();
    for &i in &kept {
        match node.observations[i].ordinal {
            Some(ordinal) if taken.insert(ordinal.0) => placed.push((i, ordinal.0)),
            _ => unplaced.push(i),
        }
    }
    next = next.max(placed.iter().map(|(_, o)| o + 1).max().unwrap_or(1));
    for i in unplaced {
        while taken.contains(&next) {
            next += 1;
        }
        taken.insert(next);
        placed.push((i, next));
        next += 1;
    }
    placed.sort_unstable_by_key(|&(_, ordinal)| ordinal);
    (placed, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paged(name: &str, texts: &[&str]) -> PagedNode {
        PagedNode {
            name: name.into(),
            entity_type: "note".into(),
            summary: None,
            tags: Some(Vec::new()),
            observation_count: Some(texts.len() as u64),
            observations: Some(
                (texts.iter().enumerate())
                    .map(|(i, t)| {
                        crate::model::Observation::new(crate::model::Ordinal(i as i64 + 1), *t)
                    })
                    .collect(),
            ),
        }
    }

    fn page(nodes: Vec<PagedNode>) -> GraphPageResult {
        GraphPageResult {
            relations: vec![
                crate::model::Relation::new("a", "c", "r"),
                crate::model::Relation::new("c", "a", "r"),
            ],
            entities: nodes,
            total_entities: 3,
            total_relations: 2,
            next_cursor: None,
            notice: None,
        }
    }

    #[test]
    fn a_page_ends_before_the_node_that_takes_its_text_past_the_budget() {
        let mut result = page(vec![
            paged("a", &["aaaa"]),
            paged("b", &["bbbb"]),
            paged("c", &["cc"]),
        ]);
        result.within_text_bytes(9, false);
        let names: Vec<&str> = result.entities.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(result.next_cursor.as_deref(), Some("b"));
        assert_eq!(
            result.relations.len(),
            1,
            "only relations from the page's nodes"
        );
        assert_eq!(result.notice, None);
        // A node larger than a page alone: its facts up to the budget, and how to read on.
        let mut large = page(vec![
            paged("a", &["aaaaaa", "aaaaaa", "a"]),
            paged("c", &["c"]),
        ]);
        large.within_text_bytes(9, true);
        assert_eq!(large.entities.len(), 1);
        assert_eq!(large.entities[0].observations.as_ref().unwrap().len(), 1);
        assert_eq!(large.next_cursor.as_deref(), Some("a"));
        let notice = large.notice.unwrap();
        let call = r#"{"names": ["a"], "after_ordinal": 1, "include_ended": true}"#;
        assert!(notice.contains(call), "{notice}");
    }

    fn node(observations: &[(Option<i64>, &str)]) -> NodeRecord {
        NodeRecord {
            name: "n".into(),
            entity_type: "t".into(),
            observations: observations
                .iter()
                .map(|&(ordinal, content)| ObservationRecord {
                    ordinal: ordinal.map(crate::Ordinal),
                    content: content.into(),
                    ..ObservationRecord::default()
                })
                .collect(),
            ..NodeRecord::default()
        }
    }

    #[test]
    fn given_ordinals_are_kept_and_the_rest_appended() {
        let record = node(&[(Some(4), "d"), (None, "x"), (Some(1), "a")]);
        let (placed, next) = place_observations(&record, &[], 1);
        assert_eq!(placed, [(2, 1), (0, 4), (1, 5)]);
        assert_eq!(next, 6);
    }

    #[test]
    fn present_texts_are_skipped_and_taken_ordinals_moved() {
        let record = node(&[(Some(1), "a"), (Some(1), "b"), (None, "b"), (None, "c")]);
        let (placed, next) = place_observations(&record, &[(1, "a".into())], 2);
        // "a" is present, the second "b" repeats the first, which cannot have ordinal 1.
        assert_eq!(placed, [(1, 2), (3, 3)]);
        assert_eq!(next, 4);
    }

    #[test]
    fn the_counter_never_goes_back() {
        let mut record = node(&[(Some(2), "b")]);
        record.next_ordinal = Some(9);
        assert_eq!(place_observations(&record, &[], 1), (vec![(0, 2)], 9));
        assert_eq!(
            place_observations(&node(&[(None, "z")]), &[], 7),
            (vec![(0, 7)], 8)
        );
    }

    #[test]
    fn imported_ordinals_stop_where_the_counter_still_fits() {
        let last = limits::MAX_ORDINAL;
        let mut record = node(&[(Some(last), "a"), (None, "b")]);
        assert!(validate_node(record.clone()).is_ok());
        // The rest follow the largest given ordinal, without overflowing.
        assert_eq!(
            place_observations(&record, &[], 1),
            (vec![(0, last), (1, last + 1)], last + 2)
        );
        record.observations[0].ordinal = Some(crate::Ordinal(i64::MAX));
        let error = validate_node(record.clone()).unwrap_err().to_string();
        assert!(error.contains("observations[0].ordinal"), "{error}");
        record.observations.clear();
        record.next_ordinal = Some(last + 2);
        let error = validate_node(record).unwrap_err().to_string();
        assert!(error.contains("next_ordinal"), "{error}");
    }

    #[test]
    fn validation_names_the_field() {
        let mut record = node(&[(None, "")]);
        let error = validate_node(record.clone()).unwrap_err().to_string();
        assert!(error.contains("observations[0].content"), "{error}");
        record.observations.clear();
        record.tags = vec!["a".into(), "a".into()];
        assert_eq!(validate_node(record).unwrap().tags, ["a"]);
    }
}
