//! Moving whole graphs in and out: the records of engram's lossless export, the pages
//! `read_graph` and `engram export` walk, and the batches `engram import` writes.
//!
//! One [`NodeRecord`] carries everything a node holds (ordinals, timestamps, the ordinal
//! counter, its aliases, its facts over time: ended ones too, each with its period, expiry
//! and author), and a [`RelationRecord`] a relation's period, ended or not, so an export
//! imported into an empty workspace recreates it, as it reads now and as it read before. The same
//! type comes in from files that know less (the reference memory server's JSONL has no
//! ordinals or timestamps): every field that can be missing is optional and the store fills
//! it as a write would.

pub(crate) mod operations;
pub(crate) mod store;

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
    /// The other names it answers to (merged duplicates, `set_aliases`), sorted; at most 64 of
    /// 1–256 bytes, none its own name. On import, an alias that another node holds (as its
    /// name or an alias) is not set and comes back in [`ImportOutcome::aliases_refused`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
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

/// An observation with its ordinal, timestamps and period: a current fact, an ended one (with
/// `valid_to`) or an expiring one (with `expires_at`).
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
    /// Since when it holds; on import, absent means since `created_at` (else since the
    /// import, or for a fact that ended before, since its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// When it stopped holding (an ended fact, imported as ended) or stops (one that expires,
    /// or ends later); absent while it holds with no end. On import, an `expires_at` without
    /// it is its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
    /// When it expires: once past, the purge deletes it for good; absent when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Who wrote it, as its store recorded the write (a token's label, an OAuth subject,
    /// `local`); absent when none was. An import records it again for `get_history`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

impl ObservationRecord {
    /// When it stops being current, if it does: `valid_to`, else `expires_at`.
    pub fn ends(&self) -> Option<Timestamp> {
        self.valid_to.or(self.expires_at)
    }

    /// Since when an import has it hold: `valid_from`, else `created_at`, else (for a fact
    /// that ended before now without saying when it began) its end; `None` for the time of
    /// the import.
    pub fn held_from(&self) -> Option<Timestamp> {
        (self.valid_from.or(self.created_at))
            .or_else(|| self.ends().filter(|end| *end < chrono::Utc::now()))
    }
}

/// A directed typed relation between two nodes, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelationRecord {
    /// Source node name.
    pub from: String,
    /// Target node name.
    pub to: String,
    /// The relation's type; 1–256 bytes (`relationType`, the reference server's spelling,
    /// is read too).
    #[serde(alias = "relationType")]
    pub relation_type: String,
    /// When it was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// Since when it holds; on import, absent means since `created_at` (else since the
    /// import, or for an ended relation, since its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// When it stopped holding: an ended relation, imported as ended (never in the future);
    /// absent for a current one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<Timestamp>,
}

impl RelationRecord {
    /// Since when an import has it hold: `valid_from`, else `created_at`, else (an ended
    /// relation) its end; `None` for the time of the import.
    pub fn held_from(&self) -> Option<Timestamp> {
        self.valid_from.or(self.created_at).or(self.valid_to)
    }
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
    /// Whether to read the graph over time, as an export does: the ended facts besides the
    /// current ones (with `observations`), each fact's author, the ended relations besides
    /// the current ones, and each node's aliases. Without it a page is the graph now.
    pub over_time: bool,
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
    /// Aliases set.
    pub aliases_set: u64,
    /// Aliases their node had already.
    pub aliases_existing: u64,
    /// Aliases not set because another node holds the name, in input order.
    pub aliases_refused: Vec<RefusedAlias>,
}

/// How one relation of an import batch went ([`ImportOutcome::count_relation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationImported {
    /// Written now.
    Created,
    /// There already (current, or ended at the same time).
    Existing,
    /// Not written: an endpoint does not exist.
    Missing,
}

impl ImportOutcome {
    /// Counts a node of the batch, `created` now or there already, of whose `facts` facts
    /// `placed` were added ([`place_observations`]).
    pub fn count_node(&mut self, created: bool, facts: usize, placed: usize) {
        match created {
            true => self.nodes_created += 1,
            false => self.nodes_existing += 1,
        }
        self.observations_added += placed as u64;
        self.observations_existing += (facts - placed) as u64;
    }

    /// Counts a relation of [`distinct_relations`] as the store wrote it.
    pub fn count_relation(&mut self, relation: &RelationRecord, how: RelationImported) {
        match how {
            RelationImported::Created => self.relations_created += 1,
            RelationImported::Existing => self.relations_existing += 1,
            RelationImported::Missing => self.relations_missing.push(relation.clone()),
        }
    }
}

/// The batch's relations each once, in order, as a store writes them: a repeat of one before
/// it (the same endpoints, type and end) is counted in `outcome` as there already, since the
/// first is written by then.
pub fn distinct_relations<'a>(
    relations: &'a [RelationRecord],
    outcome: &mut ImportOutcome,
) -> Vec<&'a RelationRecord> {
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<&RelationRecord> = (relations.iter())
        .filter(|r| seen.insert((&r.from, &r.to, &r.relation_type, r.valid_to)))
        .collect();
    outcome.relations_existing += (relations.len() - distinct.len()) as u64;
    distinct
}

/// An alias an import did not set: another node holds the name, as its name or an alias.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedAlias {
    /// The node the record gave it to.
    pub node: String,
    /// The alias.
    pub alias: String,
    /// The node that holds it (the alias itself when that is a node's name).
    pub holder: String,
}

impl std::fmt::Display for RefusedAlias {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = limits::held_by(&self.alias, &self.holder);
        write!(
            f,
            "alias {:?} of {} not set: it is {what}",
            self.alias, self.node
        )
    }
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
        self.aliases_set += other.aliases_set;
        self.aliases_existing += other.aliases_existing;
        self.aliases_refused.extend(other.aliases_refused);
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
                let keep =
                    limits::cut_at(observations, &mut 0, budget).unwrap_or(observations.len());
                let rest = observations.split_off(keep);
                let after = observations.last().map_or(0, |o| o.ordinal.0);
                self.notice = Some(format!(
                    "{} observations of {:?} left out past the {} MiB of text one page holds; \
                     read them with {}",
                    rest.len(),
                    node.name,
                    budget / (1024 * 1024),
                    limits::read_on_call(&node.name, after, include_ended, None)
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

/// Checks a node record against [`crate::limits`] and returns it with its tags and aliases
/// de-duplicated and its facts' authors as they are recorded (no control characters, at most
/// [`crate::authorship::AUTHOR_CHARS`]); errors name the field (`name`,
/// `observations[3].content`, `aliases[0]`, …) and the limit.
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
    node.aliases = limits::aliases(&node.name, std::mem::take(&mut node.aliases))?;
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
    for (i, observation) in node.observations.iter_mut().enumerate() {
        limits::content(&format!("observations[{i}].content"), &observation.content)?;
        if let Some(ordinal) = observation.ordinal {
            limits::assigned_ordinal(&format!("observations[{i}].ordinal"), ordinal.0)?;
        }
        for (field, at) in [
            ("created_at", observation.created_at),
            ("updated_at", observation.updated_at),
            ("valid_from", observation.valid_from),
            ("valid_to", observation.valid_to),
            ("expires_at", observation.expires_at),
        ] {
            let field = format!("observations[{i}].{field}");
            at.map_or(Ok(()), |at| limits::timestamp(&field, at))?;
        }
        if let (Some(from), Some(end)) = (observation.held_from(), observation.ends()) {
            let field = match observation.valid_to {
                Some(_) => "valid_to",
                None => "expires_at",
            };
            period(&format!("observations[{i}].{field}"), "the fact", from, end)?;
        }
        observation.author = (observation.author.take())
            .map(|author| crate::authorship::recorded(&author).to_string())
            .filter(|author| !author.is_empty());
    }
    Ok(node)
}

/// [`crate::Error::InvalidArgument`] naming `field` when `what` ends (`end`) before it began to
/// hold (`from`).
fn period(field: &str, what: &str, from: Timestamp, end: Timestamp) -> Result<()> {
    if end < from {
        return Err(crate::Error::invalid(
            field,
            format!("is before {what} began to hold ({end} < valid_from {from})"),
        ));
    }
    Ok(())
}

/// Checks a relation record's names, type and times against [`crate::limits`]: its end, if
/// any, neither in the future nor before it began.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming `from`, `to`, `relation_type`, `created_at`,
/// `valid_from` or `valid_to`.
pub fn validate_relation(relation: &RelationRecord) -> Result<()> {
    limits::name("from", &relation.from)?;
    limits::name("to", &relation.to)?;
    limits::name("relation_type", &relation.relation_type)?;
    for (field, at) in [
        ("created_at", relation.created_at),
        ("valid_from", relation.valid_from),
        ("valid_to", relation.valid_to),
    ] {
        at.map_or(Ok(()), |at| limits::timestamp(field, at))?;
    }
    limits::not_in_future("valid_to", relation.valid_to)?;
    if let (Some(from), Some(end)) = (relation.held_from(), relation.valid_to) {
        period("valid_to", "the relation", from, end)?;
    }
    Ok(())
}

/// A fact an import compares by: its text, and for one that does not hold at `now` (ended or
/// expired), its end. A current fact matches the node's current fact of the same text (a text
/// is held once while current); an ended one the node's ended fact of the same text and end.
fn fact_key(content: &str, end: Option<Timestamp>, now: Timestamp) -> (&str, Option<Timestamp>) {
    (content, end.filter(|end| *end <= now))
}

/// Where a node's observations go on import: `(index into node.observations, ordinal)` for
/// each observation to insert, and the node's next ordinal afterwards. `present` is what the
/// node holds, `(ordinal, text, valid_to)` for each of its facts, current or not, and `now`
/// the import's time. A fact the node holds already ([`fact_key`]: the same text, current or
/// ended alike, an ended one with the same end) or that repeats one before it in the record
/// is skipped; an ordinal that is given and free is kept, any other gets the next free one.
pub fn place_observations(
    node: &NodeRecord,
    present: &[(i64, String, Option<Timestamp>)],
    next_ordinal: i64,
    now: Timestamp,
) -> (Vec<(usize, i64)>, i64) {
    use std::collections::HashSet;
    let mut facts: HashSet<(&str, Option<Timestamp>)> = (present.iter())
        .map(|(_, content, end)| fact_key(content, *end, now))
        .collect();
    let mut taken: HashSet<i64> = present.iter().map(|(o, _, _)| *o).collect();
    let mut kept = Vec::new();
    for (i, observation) in node.observations.iter().enumerate() {
        if facts.insert(fact_key(&observation.content, observation.ends(), now)) {
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

/// Which of a batch's aliases an import sets, once its nodes are written: `holders` maps each
/// alias of `nodes` that the workspace holds to the node holding it (as its name, or as an
/// alias). Returns the `(node, alias)` pairs to insert, in input order, and counts those
/// their node holds already and those refused (another node holds them, or an earlier node of
/// the batch takes them) into `outcome`.
pub fn place_aliases<'a>(
    nodes: &'a [NodeRecord],
    holders: &std::collections::HashMap<String, String>,
    outcome: &mut ImportOutcome,
) -> Vec<(&'a str, &'a str)> {
    let mut taken: std::collections::HashMap<&str, &str> = (holders.iter())
        .map(|(alias, holder)| (alias.as_str(), holder.as_str()))
        .collect();
    let mut placed = Vec::new();
    for node in nodes {
        for alias in &node.aliases {
            match taken.get(alias.as_str()) {
                Some(holder) if *holder == node.name => outcome.aliases_existing += 1,
                Some(holder) => outcome.aliases_refused.push(RefusedAlias {
                    node: node.name.clone(),
                    alias: alias.clone(),
                    holder: (*holder).to_owned(),
                }),
                None => {
                    taken.insert(alias, &node.name);
                    placed.push((node.name.as_str(), alias.as_str()));
                }
            }
        }
    }
    outcome.aliases_set += placed.len() as u64;
    placed
}

/// `engram import`: one batch of recorded nodes and relations ([`Memory::import`]), written
/// in one transaction.
///
/// [`Memory::import`]: crate::Memory::import
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportBatch {
    /// The nodes as recorded: at most 1,000 of distinct names, holding at most
    /// [`crate::IMPORT_BATCH_OBSERVATIONS`] observations.
    pub nodes: Vec<NodeRecord>,
    /// The relations as recorded: at most 1,000.
    pub relations: Vec<RelationRecord>,
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

    fn now() -> Timestamp {
        chrono::Utc::now()
    }

    fn at(day: u32) -> Timestamp {
        chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2024, 1, day, 0, 0, 0).unwrap()
    }

    #[test]
    fn an_ended_fact_is_matched_by_its_text_and_end_a_current_one_by_its_text() {
        let mut record = node(&[(None, "a"), (None, "a"), (None, "a"), (None, "b")]);
        record.observations[0].valid_to = Some(at(2));
        record.observations[1].valid_to = Some(at(3));
        // An expiring fact that has not expired holds its text as a current one does.
        record.observations[3].expires_at = Some(now() + chrono::Duration::days(1));
        let present = [(1, "a".to_owned(), Some(at(2))), (2, "b".to_owned(), None)];
        let (placed, next) = place_observations(&record, &present, 3, now());
        // "a" ended on the 2nd is held; ended on the 3rd and current it is not; "b" is.
        assert_eq!(placed, [(1, 3), (2, 4)]);
        assert_eq!(next, 5);
    }

    #[test]
    fn an_alias_another_node_holds_is_refused_and_one_held_already_counted() {
        let mut first = node(&[]);
        first.aliases = vec!["own".into(), "taken".into(), "name".into(), "free".into()];
        let mut second = node(&[]);
        second.name = "m".into();
        second.aliases = vec!["free".into(), "new".into()];
        let holders = [("own", "n"), ("taken", "x"), ("name", "name")]
            .map(|(alias, holder)| (alias.to_owned(), holder.to_owned()))
            .into_iter()
            .collect();
        let mut outcome = ImportOutcome::default();
        let nodes = [first, second];
        let placed = place_aliases(&nodes, &holders, &mut outcome);
        assert_eq!(placed, [("n", "free"), ("m", "new")]);
        assert_eq!((outcome.aliases_set, outcome.aliases_existing), (2, 1));
        let refused: Vec<String> = outcome
            .aliases_refused
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(
            refused,
            [
                "alias \"taken\" of n not set: it is already an alias of x",
                "alias \"name\" of n not set: it is another node's name",
                "alias \"free\" of m not set: it is already an alias of n",
            ]
        );
    }

    #[test]
    fn periods_and_aliases_are_checked_naming_the_field() {
        let mut record = node(&[(None, "a")]);
        record.observations[0].valid_from = Some(at(3));
        record.observations[0].valid_to = Some(at(2));
        let error = validate_node(record.clone()).unwrap_err().to_string();
        assert!(error.contains("observations[0].valid_to"), "{error}");
        record.observations[0].valid_to = None;
        record.observations[0].expires_at = Some(at(1));
        let error = validate_node(record.clone()).unwrap_err().to_string();
        assert!(error.contains("observations[0].expires_at"), "{error}");
        // An ended fact without a start held until its end.
        record.observations[0] = ObservationRecord {
            content: "a".into(),
            valid_to: Some(at(2)),
            ..ObservationRecord::default()
        };
        assert_eq!(record.observations[0].held_from(), Some(at(2)));
        record.aliases = vec!["x".into(), "x".into()];
        assert_eq!(validate_node(record.clone()).unwrap().aliases, ["x"]);
        record.aliases = vec!["n".into()];
        let error = validate_node(record).unwrap_err().to_string();
        assert!(error.contains("aliases[0]"), "{error}");
        let relation = RelationRecord {
            from: "a".into(),
            to: "b".into(),
            relation_type: "r".into(),
            valid_to: Some(now() + chrono::Duration::days(1)),
            ..RelationRecord::default()
        };
        let error = validate_relation(&relation).unwrap_err().to_string();
        assert!(error.contains("valid_to"), "{error}");
    }

    #[test]
    fn an_outcome_counts_repeats_as_existing_and_missing_relations_in_order() {
        let relation = |from: &str, valid_to| RelationRecord {
            from: from.into(),
            to: "b".into(),
            relation_type: "r".into(),
            valid_to,
            ..RelationRecord::default()
        };
        let batch = [
            relation("a", None),
            relation("a", None),
            relation("a", Some(at(2))),
            relation("gone", None),
        ];
        let mut outcome = ImportOutcome::default();
        let distinct = distinct_relations(&batch, &mut outcome);
        assert_eq!(distinct.len(), 3, "an ended one is another relation");
        let hows = [
            RelationImported::Created,
            RelationImported::Existing,
            RelationImported::Missing,
        ];
        for (relation, how) in distinct.into_iter().zip(hows) {
            outcome.count_relation(relation, how);
        }
        outcome.count_node(true, 3, 2);
        let counts = (outcome.relations_created, outcome.relations_existing);
        assert_eq!(counts, (1, 2), "the repeat and the one there already");
        assert_eq!(outcome.relations_missing, [relation("gone", None)]);
        let nodes = (outcome.nodes_created, outcome.observations_added);
        assert_eq!((nodes, outcome.observations_existing), ((1, 2), 1));
    }

    #[test]
    fn given_ordinals_are_kept_and_the_rest_appended() {
        let record = node(&[(Some(4), "d"), (None, "x"), (Some(1), "a")]);
        let (placed, next) = place_observations(&record, &[], 1, now());
        assert_eq!(placed, [(2, 1), (0, 4), (1, 5)]);
        assert_eq!(next, 6);
    }

    #[test]
    fn present_texts_are_skipped_and_taken_ordinals_moved() {
        let record = node(&[(Some(1), "a"), (Some(1), "b"), (None, "b"), (None, "c")]);
        let (placed, next) = place_observations(&record, &[(1, "a".into(), None)], 2, now());
        // "a" is present, the second "b" repeats the first, which cannot have ordinal 1.
        assert_eq!(placed, [(1, 2), (3, 3)]);
        assert_eq!(next, 4);
    }

    #[test]
    fn the_counter_never_goes_back() {
        let mut record = node(&[(Some(2), "b")]);
        record.next_ordinal = Some(9);
        assert_eq!(
            place_observations(&record, &[], 1, now()),
            (vec![(0, 2)], 9)
        );
        assert_eq!(
            place_observations(&node(&[(None, "z")]), &[], 7, now()),
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
            place_observations(&record, &[], 1, now()),
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
