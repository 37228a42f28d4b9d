//! Duplicates made one: `merge_entities` moves the sources' facts and relations into the
//! target in one transaction and keeps each source's name as an **alias** of the target;
//! `set_aliases` sets a node's aliases by hand. A tool given an alias where it takes a node
//! name answers for the node it names ([`crate::naming`]).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::model::*;
use crate::store::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// Most sources one `merge_entities` call takes.
pub const MAX_MERGE_SOURCES: usize = 32;

/// `merge_entities`: duplicates of one node folded into it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MergeEntities {
    /// 1–32 duplicates.
    pub sources: Vec<String>,
    /// The node that stays.
    pub target: String,
}

impl MergeEntities {
    /// `sources` merged into `target`.
    pub fn new(sources: &[String], target: impl Into<String>) -> Self {
        Self {
            sources: sources.to_vec(),
            target: target.into(),
        }
    }

    /// The request if every name is valid, there are 1–32 distinct sources and none is the
    /// target; else [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("target", &self.target)?;
        if self.sources.is_empty() || self.sources.len() > MAX_MERGE_SOURCES {
            return Err(Error::invalid(
                "sources",
                format!("1–{MAX_MERGE_SOURCES} names, got {}", self.sources.len()),
            ));
        }
        for (i, source) in self.sources.iter().enumerate() {
            let field = format!("sources[{i}]");
            limits::name(&field, source)?;
            if *source == self.target {
                return Err(Error::invalid(
                    field,
                    "is the target: a node is not merged into itself",
                ));
            }
            if self.sources[..i].contains(source) {
                return Err(Error::invalid(field, "repeats an earlier source"));
            }
        }
        Ok(Checked::new(self))
    }
}

/// Where a source's fact went (`merge_entities`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MovedObservation {
    /// The source node.
    pub from: String,
    /// Its ordinal there.
    pub old_ordinal: Ordinal,
    /// Its ordinal in the target; absent when it was dropped as a duplicate of a target fact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_ordinal: Option<Ordinal>,
}

/// Result of `merge_entities`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MergedEntities {
    /// The node that stayed.
    pub target: String,
    /// Every fact of the sources, in their order: where it went, or dropped (no
    /// `new_ordinal`) as an exact duplicate of a current target fact.
    pub observations: Vec<MovedObservation>,
    /// The relations re-pointed to the target.
    pub relations: Vec<Relation>,
    /// The sources' relations dropped: those the target already had, and those between the
    /// target and a source (they would relate the target to itself).
    pub dropped_relations: Vec<Relation>,
    /// The target's tags now: its own, then the sources' it lacked.
    pub tags: Vec<String>,
    /// The sources' summaries, which were not kept (the target's is), by source.
    pub source_summaries: BTreeMap<String, String>,
    /// The target's aliases now (the sources' names among them).
    pub aliases: Vec<String>,
}

/// One fact of a merge's source as its store reads it: the store's own handle of the row
/// (`Id`), its ordinal and text, and whether it is current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFact<Id> {
    /// The store's handle of the row.
    pub id: Id,
    /// Its ordinal in the source.
    pub ordinal: Ordinal,
    /// Its text.
    pub content: String,
    /// Whether it holds now (not ended, not expired).
    pub current: bool,
}

/// Where a merge's facts go ([`plan_merge_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactMoves<Id> {
    /// Every source fact, in the sources' order and then their ordinals': where it went.
    pub moved: Vec<MovedObservation>,
    /// The rows that move to the target, each with its new ordinal there.
    pub kept: Vec<(Id, Ordinal)>,
    /// The rows to delete: current facts whose exact text the target holds as a current fact.
    pub dropped: Vec<Id>,
    /// The target's ordinal counter afterwards.
    pub next_ordinal: i64,
}

/// `set_aliases`' check against the workspace, for the store to run in its transaction: the
/// first of `aliases` held by a node other than `node` (`holders`: alias → the node that holds
/// it, as a node's name or an alias) is [`Error::InvalidArgument`] naming `aliases[i]`.
pub fn refuse_held_aliases(
    node: &str,
    aliases: &[String],
    holders: &std::collections::HashMap<String, String>,
) -> Result<()> {
    for (i, alias) in aliases.iter().enumerate() {
        if let Some(holder) = holders.get(alias).filter(|holder| *holder != node) {
            let what = limits::held_by(alias, holder);
            return Err(Error::invalid(
                format!("aliases[{i}]"),
                format!("is {what}"),
            ));
        }
    }
    Ok(())
}

/// Where `merge_entities` puts the sources' facts, planned once for both stores from what each
/// store's transaction reads: the target's current texts (`held`), its ordinal counter
/// (`next_ordinal`), and each source's name with its facts in ordinal order. A current fact
/// whose exact text the target (or a source before it) holds as a current fact is dropped;
/// every other fact, ended ones too, takes the target's next ordinal in turn. Versions,
/// periods and vectors move with their rows in the store.
pub fn plan_merge_facts<Id: Copy>(
    held: impl IntoIterator<Item = String>,
    next_ordinal: i64,
    sources: &[(&str, Vec<SourceFact<Id>>)],
) -> FactMoves<Id> {
    let mut current: std::collections::HashSet<String> = held.into_iter().collect();
    let mut plan = FactMoves {
        moved: Vec::new(),
        kept: Vec::new(),
        dropped: Vec::new(),
        next_ordinal,
    };
    for (name, facts) in sources {
        for fact in facts {
            let new_ordinal = if fact.current && !current.insert(fact.content.clone()) {
                plan.dropped.push(fact.id);
                None
            } else {
                let ordinal = Ordinal(plan.next_ordinal);
                plan.kept.push((fact.id, ordinal));
                plan.next_ordinal += 1;
                Some(ordinal)
            };
            plan.moved.push(MovedObservation {
                from: (*name).to_owned(),
                old_ordinal: fact.ordinal,
                new_ordinal,
            });
        }
    }
    plan
}

/// `set_aliases`: the other names a node answers to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SetAliases {
    /// The node.
    pub name: String,
    /// Replaces its aliases; at most 64.
    pub aliases: Vec<String>,
}

impl SetAliases {
    /// `name`'s aliases set to `aliases`.
    pub fn new(name: impl Into<String>, aliases: &[String]) -> Self {
        Self {
            name: name.into(),
            aliases: aliases.to_vec(),
        }
    }

    /// The request with repeats dropped if the names are valid, at most 64 and none is the
    /// node's own; else [`Error::InvalidArgument`] naming the field.
    pub fn check(mut self) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        self.aliases = limits::aliases(&self.name, std::mem::take(&mut self.aliases))?;
        Ok(Checked::new(self))
    }
}

/// Result of `set_aliases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AliasesUpdate {
    /// The node.
    pub name: String,
    /// Its aliases now.
    pub aliases: Vec<String>,
}

impl Tool for MergeEntities {
    const NAME: &'static str = "merge_entities";
    const DESCRIPTION: &'static str =
        "Merge duplicates into target (facts, relations, tags); their names become its aliases.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: false,
    };
    type Output = MergedEntities;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        // Checked again when asked once more by the nodes' names (`naming`): an alias replaced
        // by its node's name may make a source the target, or two sources one node (merged
        // into itself, a node would be lost).
        let request = self.check()?;
        context.store.merge_entities(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        let mut names = vec![&mut self.target];
        names.extend(self.sources.iter_mut());
        names
    }
}

impl Tool for SetAliases {
    const NAME: &'static str = "set_aliases";
    const DESCRIPTION: &'static str = "Set the other names a node answers to.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: true,
    };
    type Output = AliasesUpdate;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check()?);
        // An alias is a name the node answers to: refused, never redacted, when it holds a
        // credential, as every other stored name is.
        for (i, alias) in request.aliases.iter().enumerate() {
            context
                .secrets
                .screen_identity(|| format!("aliases[{i}]"), alias)?;
        }
        store.set_aliases(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

/// The tools that merge nodes and name them.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<MergeEntities>();
    visitor.visit::<SetAliases>();
}

/// Duplicates merged, and the aliases a node answers to.
#[async_trait]
pub trait AliasStore: Send + Sync + 'static {
    /// `merge_entities`, in one transaction: the sources' observations appended to the target
    /// in their order (new ordinals; a current source fact whose exact text the target holds
    /// as a current fact is dropped), their relations re-pointed (those the target has, and
    /// those between a source and the target, dropped), ended relations too, tags united
    /// (the target's first), the sources' names (and their aliases) made the target's
    /// aliases, a `merged:<source>` update event recorded on the target, the sources deleted.
    /// [`crate::Error::NotFound`] for an unknown node; [`crate::Error::InvalidArgument`]
    /// naming `sources` when the tags would pass 64.
    async fn merge_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<MergeEntities>,
    ) -> Result<MergedEntities>;
    /// `set_aliases`: replaces the node's aliases. [`crate::Error::InvalidArgument`] naming
    /// `aliases[i]` (nothing changed) when one is a node's name or another node's alias;
    /// [`crate::Error::NotFound`] for an unknown node.
    async fn set_aliases(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetAliases>,
    ) -> Result<AliasesUpdate>;
    /// The node names the aliases among `names` stand for, by alias; names that are no alias
    /// are absent.
    async fn resolve_aliases(
        &self,
        request: ResolveAliases<'_>,
    ) -> Result<std::collections::HashMap<String, String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(id: u8, ordinal: i64, content: &str, current: bool) -> SourceFact<u8> {
        SourceFact {
            id,
            ordinal: Ordinal(ordinal),
            content: content.into(),
            current,
        }
    }

    #[test]
    fn a_merge_drops_current_facts_the_target_holds_and_numbers_the_rest_in_turn() {
        let sources = [
            (
                "pg",
                vec![
                    fact(1, 1, "stores the graph", true),
                    fact(2, 2, "runs on 15", false),
                    fact(3, 4, "has pgvector", true),
                ],
            ),
            (
                "postgres",
                vec![
                    fact(4, 1, "has pgvector", true),
                    fact(5, 2, "stores the graph", false),
                ],
            ),
        ];
        let plan = plan_merge_facts(["stores the graph".to_owned()], 7, &sources);
        assert_eq!(
            plan.dropped,
            [1, 4],
            "held by the target, then by an earlier source"
        );
        assert_eq!(
            plan.kept,
            [(2, Ordinal(7)), (3, Ordinal(8)), (5, Ordinal(9))],
            "ended facts move whatever their text"
        );
        assert_eq!(plan.next_ordinal, 10);
        let moved: Vec<(&str, i64, Option<i64>)> = (plan.moved.iter())
            .map(|m| (m.from.as_str(), m.old_ordinal.0, m.new_ordinal.map(|o| o.0)))
            .collect();
        assert_eq!(
            moved,
            [
                ("pg", 1, None),
                ("pg", 2, Some(7)),
                ("pg", 4, Some(8)),
                ("postgres", 1, None),
                ("postgres", 2, Some(9))
            ]
        );
    }
}
