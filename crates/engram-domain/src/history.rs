//! A node's history (`get_history`): what happened to it, newest first. Both stores read it
//! from what they keep anyway: the node's creation, every observation (its first text, its
//! replaced versions, its end), every relation touching it (current and ended), and the
//! events of what leaves no row (deletions, changes to the node's summary, tags or type).
//! A deleted observation leaves its deletion and no text: deleting is for good.

use async_trait::async_trait;
use derive_setters::Setters;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::Result;
use crate::limits;
use crate::model::*;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// Default page size of `get_history`.
pub const DEFAULT_HISTORY_LIMIT: u32 = 50;

fn default_history_limit() -> u32 {
    DEFAULT_HISTORY_LIMIT
}

/// `get_history`: a node's timeline, newest first, a page at a time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Setters)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GetHistory {
    /// The node.
    pub name: String,
    /// 1–1,000 (more to finish the last instant). Default 50.
    #[serde(default = "default_history_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1000)))]
    pub limit: u32,
    /// The previous page's next_before.
    #[setters(strip_option)]
    #[serde(default)]
    pub before: Option<Timestamp>,
}

impl GetHistory {
    /// The newest [`DEFAULT_HISTORY_LIMIT`] entries of `name`'s history.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            limit: DEFAULT_HISTORY_LIMIT,
            before: None,
        }
    }

    /// The request if the name is valid and `limit` is 1–1,000; else
    /// [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::name("name", &self.name)?;
        limits::within("limit", self.limit, limits::LIMIT)?;
        if let Some(before) = self.before {
            limits::timestamp("before", before)?;
        }
        Ok(Checked::new(self))
    }
}

/// What happened in a [`HistoryEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HistoryOperation {
    /// The node was created.
    Created,
    /// A fact was added (`content`: its first text).
    ObservationAdded,
    /// A fact's text was replaced (`old_content` by `content`).
    ObservationReplaced,
    /// A fact stopped holding (`end_observations`).
    ObservationEnded,
    /// A fact expired (until the purge deletes it).
    ObservationExpired,
    /// Facts were deleted (no text: deleting is for good).
    ObservationDeleted,
    /// A relation was created.
    RelationCreated,
    /// A relation stopped holding (`end_relations`).
    RelationEnded,
    /// A relation was deleted (recorded on its source node).
    RelationDeleted,
    /// The summary was set.
    SummarySet,
    /// The tags were set.
    TagsSet,
    /// The type changed.
    EntityTypeSet,
    /// The name changed.
    NameSet,
    /// A duplicate was merged into the node (`content`: its name, now an alias).
    Merged,
    /// Facts were split off into a new node (`content`: its name).
    Split,
    /// A reflection about the node, or about a relation of it, was written (`content`; a
    /// relation's ends and type in `from`, `to`, `relation_type`).
    ReflectionAdded,
    /// The node changed (recorded before histories said how).
    Updated,
}

impl HistoryOperation {
    /// The operation a store names with its wire name (`observation_added`, …); `Updated` for
    /// a name it does not know.
    pub fn from_name(name: &str) -> Self {
        let name = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name);
        Self::deserialize(name).unwrap_or(Self::Updated)
    }
}

/// One entry of a node's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HistoryEntry {
    /// When it happened (for an end: the end's time, which may be earlier than when it was
    /// recorded).
    pub at: Timestamp,
    /// What happened.
    pub operation: HistoryOperation,
    /// The fact's ordinal, for a fact's entries; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<Ordinal>,
    /// The fact's text (added, ended; the new text when replaced); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The replaced text; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_content: Option<String>,
    /// The relation, for a relation's entries (a deleted one is not named); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<Relation>,
    /// Who wrote it (a token's label, an OAuth subject, `local`); absent when not recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

/// Result of `get_history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct History {
    /// The node.
    pub name: String,
    /// Its entries, newest first.
    pub events: Vec<HistoryEntry>,
    /// When the page is full: `before` for the next page; `null` at the node's creation.
    pub next_before: Option<Timestamp>,
    /// When the texts of older entries were left out to keep the answer within 8 MiB of text
    /// ([`limits::ANSWER_TEXT_BYTES`]): where to read them. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl Tool for GetHistory {
    const NAME: &'static str = "get_history";
    const DESCRIPTION: &'static str = "A node's changes, newest first.";
    const EFFECT: Effect = Effect::Reads;
    type Output = History;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        let limit = request.limit as usize;
        let mut events = context.store.get_history(workspace, &request).await?;
        // The node's own name: a call by an alias is answered once more by it (`naming`).
        let name = request.into_inner().name;
        let full = events.len() >= limit;
        let next_before = match events.last() {
            Some(last) if full && last.operation != HistoryOperation::Created => Some(last.at),
            _ => None,
        };
        let notice = texts_within_answer(&mut events, &name);
        Ok(History {
            name,
            events,
            next_before,
            notice,
        })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.name]
    }
}

/// Keeps an answer's text within [`limits::ANSWER_TEXT_BYTES`]: past it, the older entries
/// keep their time, operation and ordinal, and their texts (`content`, `old_content`) are left
/// out, with a notice saying where to read them. Every entry stays, so paging with
/// `next_before` loses none (entries of one instant are never split across pages).
fn texts_within_answer(events: &mut [HistoryEntry], name: &str) -> Option<String> {
    let text = |e: &HistoryEntry| {
        e.content.as_ref().map_or(0, String::len) + e.old_content.as_ref().map_or(0, String::len)
    };
    let kept = limits::rows_within_answer(events.iter().map(text));
    let emptied = (events[kept..].iter_mut())
        .filter(|e| text(e) > 0)
        .map(|e| {
            e.content = None;
            e.old_content = None;
        })
        .count();
    (emptied > 0).then(|| {
        format!(
            "the texts of {emptied} older entries are left out past the {} MiB one answer \
             holds: open_nodes {{\"names\": [{name:?}], \"include_ended\": true}} reads \
             the facts, or get_history with a lower limit",
            limits::ANSWER_TEXT_BYTES / (1024 * 1024)
        )
    })
}

/// The history tool.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<GetHistory>();
}

/// What happened to a node, read from what the store keeps.
#[async_trait]
pub trait HistoryStore: Send + Sync + 'static {
    /// `get_history`: the node's entries before `before`, newest first: `limit` of them, and
    /// any more at the instant of the last (so that no entry falls between pages).
    /// [`crate::Error::NotFound`] for an unknown node.
    async fn get_history(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetHistory>,
    ) -> Result<Vec<HistoryEntry>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_answer_budget_older_entries_keep_everything_but_their_texts() {
        let text = "x".repeat(64 * 1024);
        let entry = |ordinal: i64| HistoryEntry {
            at: Timestamp::default(),
            operation: HistoryOperation::ObservationAdded,
            ordinal: Some(Ordinal(ordinal)),
            content: Some(text.clone()),
            old_content: None,
            relation: None,
            author: None,
        };
        let mut events: Vec<HistoryEntry> = (1..=200).map(entry).collect();
        let notice = texts_within_answer(&mut events, "big").unwrap();
        assert_eq!(events.len(), 200);
        let with_text = events.iter().filter(|e| e.content.is_some()).count();
        assert_eq!(with_text, 128, "8 MiB of 64 KiB texts");
        assert!(
            events[128..]
                .iter()
                .all(|e| e.content.is_none() && e.ordinal.is_some())
        );
        assert!(notice.contains("the texts of 72 older entries"), "{notice}");
        assert!(notice.contains(r#"open_nodes {"names": ["big"], "include_ended": true}"#));
        let mut few: Vec<HistoryEntry> = (1..=3).map(entry).collect();
        assert_eq!(texts_within_answer(&mut few, "big"), None);
    }

    #[test]
    fn an_operation_is_read_by_its_wire_name_and_an_unknown_one_as_updated() {
        use HistoryOperation::*;
        for operation in [
            Created,
            ObservationReplaced,
            RelationEnded,
            EntityTypeSet,
            Split,
        ] {
            let wire = serde_json::to_value(operation).unwrap();
            assert_eq!(
                HistoryOperation::from_name(wire.as_str().unwrap()),
                operation
            );
        }
        assert_eq!(HistoryOperation::from_name("renamed_later"), Updated);
    }
}
