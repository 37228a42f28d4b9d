//! Memory over time: facts and relations that end without being deleted, and reads of the
//! memory as it was. Each fact and relation holds from `valid_from` (when it was written,
//! unless the client said earlier) until it is ended or expires; a replaced text is kept as an
//! earlier version of its ordinal. Default reads see what holds now; `include_ended` shows
//! everything with its period, `as_of` what held at a time.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits::{self, batch_total, relations_batch};
use crate::model::*;
use crate::naming::aliases::{self, Aliased, NodeEntry};
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// Which facts and relations a read sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadTime {
    /// Those that hold now: not ended, not expired (every default read).
    #[default]
    Now,
    /// All of them, current and ended, each with its period (`include_ended: true`).
    Ever,
    /// Those that held at this time, each text as it read then (`as_of`).
    At(Timestamp),
}

impl ReadTime {
    /// The view a request's `include_ended` and `as_of` ask for; [`Error::InvalidArgument`]
    /// naming `include_ended` when both are given (a read shows one time or all of them).
    pub fn from_request(include_ended: bool, as_of: Option<Timestamp>) -> Result<Self> {
        match (include_ended, as_of) {
            (false, None) => Ok(Self::Now),
            (true, None) => Ok(Self::Ever),
            (false, Some(at)) => Ok(Self::At(at)),
            (true, Some(_)) => Err(Error::invalid(
                "include_ended",
                "cannot be combined with as_of: give as_of for one time, include_ended for all",
            )),
        }
    }

    /// The `(include_ended, as_of)` a request asks this view with.
    pub fn into_request(self) -> (bool, Option<Timestamp>) {
        match self {
            Self::Now => (false, None),
            Self::Ever => (true, None),
            Self::At(at) => (false, Some(at)),
        }
    }

    /// `true` for the default view.
    pub fn is_now(self) -> bool {
        self == Self::Now
    }
}

/// Ordinals of one node's facts to end (`end_observations`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ObservationEndings {
    /// The node.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Its current facts to end.
    pub ordinals: Vec<Ordinal>,
}

/// `end_observations`: facts that stopped being true; they leave every default read and
/// search but are kept, for `include_ended`, `as_of` and `get_history`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EndObservations {
    /// At most 1,000 ordinals in all.
    pub endings: Vec<ObservationEndings>,
    /// Default now.
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
}

impl EndObservations {
    /// The facts `endings`, ended now.
    pub fn new(endings: &[ObservationEndings]) -> Self {
        Self {
            endings: endings.to_vec(),
            ended_at: None,
        }
    }

    /// The same facts, ended at `at`.
    pub fn ended_at(mut self, at: Timestamp) -> Self {
        self.ended_at = Some(at);
        self
    }

    /// The request if it holds 1–1,000 entries with valid names and 1–1,000 valid ordinals
    /// each (1,000 in all) and `ended_at` is within the years 1–9999 and not in the future;
    /// else [`Error::InvalidArgument`] naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        limits::batch("endings", &self.endings)?;
        let mut total = 0;
        for (i, ending) in self.endings.iter().enumerate() {
            limits::name(&format!("endings[{i}].entity_name"), &ending.entity_name)?;
            limits::batch(&format!("endings[{i}].ordinals"), &ending.ordinals)?;
            for (j, ordinal) in ending.ordinals.iter().enumerate() {
                limits::ordinal(&format!("endings[{i}].ordinals[{j}]"), *ordinal)?;
            }
            total += ending.ordinals.len();
        }
        batch_total("endings[].ordinals", total)?;
        if let Some(at) = self.ended_at {
            limits::timestamp("ended_at", at)?;
        }
        limits::not_in_future("ended_at", self.ended_at)?;
        Ok(Checked::new(self))
    }
}

/// One row of `end_observations`' result, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EndedObservations {
    /// The node.
    pub entity_name: String,
    /// The ordinals ended now, ascending.
    pub ended_ordinals: Vec<Ordinal>,
    /// The ordinals that hold no current fact of the node (none, ended or expired already,
    /// or the node does not exist), ascending.
    pub not_found_ordinals: Vec<Ordinal>,
}

/// `end_relations`: relations that stopped holding; they leave every default read, and the
/// same relation created again later starts a new period.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EndRelations {
    /// 1–1,000.
    pub relations: Vec<RelationSpec>,
    /// Default now.
    #[serde(default)]
    pub ended_at: Option<Timestamp>,
}

impl EndRelations {
    /// The relations `relations`, ended now.
    pub fn new(relations: &[RelationSpec]) -> Self {
        Self {
            relations: relations.to_vec(),
            ended_at: None,
        }
    }

    /// The same relations, ended at `at`.
    pub fn ended_at(mut self, at: Timestamp) -> Self {
        self.ended_at = Some(at);
        self
    }

    /// The request if it holds 1–1,000 relations with valid names and types and `ended_at`
    /// is within the years 1–9999 and not in the future; else [`Error::InvalidArgument`]
    /// naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        relations_batch(&self.relations)?;
        if let Some(at) = self.ended_at {
            limits::timestamp("ended_at", at)?;
        }
        limits::not_in_future("ended_at", self.ended_at)?;
        Ok(Checked::new(self))
    }
}

/// Result of `end_relations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EndedRelations {
    /// The relations ended now, in request order.
    pub ended: Vec<RelationSpec>,
    /// The relations that do not hold now (never created, ended or deleted already, or an
    /// endpoint does not exist), in request order.
    pub not_found: Vec<RelationSpec>,
}

/// [`Error::InvalidArgument`] naming `ended_at`: `what` held from `valid_from`, after `ended_at`.
pub fn ended_before_it_began(what: &str, ended_at: Timestamp, valid_from: Timestamp) -> Error {
    Error::invalid(
        "ended_at",
        format!("is before {what} began to hold ({ended_at} < valid_from {valid_from})"),
    )
}

impl Tool for EndObservations {
    const NAME: &'static str = "end_observations";
    const DESCRIPTION: &'static str =
        "End facts that stopped being true; kept for include_ended, as_of and history.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = EndObservationsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check()?);
        let results = store.end_observations(workspace, &request).await?;
        Ok(EndObservationsResult { results })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        (self.endings.iter_mut())
            .map(|e| &mut e.entity_name)
            .collect()
    }

    /// Rows that ended nothing: their node may be named by an alias.
    fn missed(&self, output: &Self::Output) -> Vec<String> {
        aliases::missed_rows((&self.endings, &output.results), ended_nothing)
    }

    fn retry(&self, output: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let rows = (&self.endings[..], &output.results[..]);
        let endings = aliases::retry_rows(rows, ended_nothing, aliased)?;
        Some(Self {
            endings,
            ended_at: self.ended_at,
        })
    }

    fn join(&self, first: Self::Output, again: Self::Output, aliased: &Aliased) -> Self::Output {
        let rows = (&self.endings[..], first.results);
        let results = aliases::join_rows(rows, again.results, ended_nothing, aliased);
        EndObservationsResult { results }
    }
}

impl NodeEntry for ObservationEndings {
    fn node(&self) -> &String {
        &self.entity_name
    }

    fn node_mut(&mut self) -> &mut String {
        &mut self.entity_name
    }
}

/// Whether a row of `end_observations` ended nothing.
fn ended_nothing(row: &EndedObservations) -> bool {
    row.ended_ordinals.is_empty()
}

impl Tool for EndRelations {
    const NAME: &'static str = "end_relations";
    const DESCRIPTION: &'static str =
        "End relations that stopped holding; kept for include_ended, as_of and history.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
    };
    type Output = EndedRelations;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check()?;
        context.store.end_relations(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        aliases::endpoint_names(&mut self.relations)
    }

    fn missed(&self, output: &Self::Output) -> Vec<String> {
        aliases::endpoints(&output.not_found)
    }

    /// The relations not found with an alias for an endpoint, by the nodes' names.
    fn retry(&self, output: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let relations = aliases::by_node_names(&output.not_found, aliased)?;
        Some(Self {
            relations,
            ended_at: self.ended_at,
        })
    }

    fn join(
        &self,
        mut first: Self::Output,
        again: Self::Output,
        aliased: &Aliased,
    ) -> Self::Output {
        let retried = |r: &RelationSpec| {
            aliased.contains_key(&r.from_entity) || aliased.contains_key(&r.to_entity)
        };
        first.not_found.retain(|r| !retried(r));
        first.not_found.extend(again.not_found);
        first.ended.extend(again.ended);
        first
    }
}

/// `end_observations`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EndObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<EndedObservations>,
}

/// The tools that end facts and relations.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<EndObservations>();
    visitor.visit::<EndRelations>();
}

/// Memory over time: ending facts and relations that stopped being true, and deleting for good
/// the facts whose expiry has passed.
#[async_trait]
pub trait ValidityStore: Send + Sync + 'static {
    /// `end_observations`: the current facts at the ordinals stop holding at `ended_at` (the
    /// store's now when absent), kept for history. [`crate::Error::InvalidArgument`] naming
    /// `ended_at` (nothing changed) when it is before a fact's `valid_from`.
    async fn end_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndObservations>,
    ) -> Result<Vec<EndedObservations>>;
    /// `end_relations`: the current relations stop holding at `ended_at` (the store's now when
    /// absent) and are kept with their period; creating one again starts a new period.
    /// [`crate::Error::InvalidArgument`] naming `ended_at` (nothing changed) when it is before
    /// a relation's `valid_from`.
    async fn end_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndRelations>,
    ) -> Result<EndedRelations>;
    /// Deletes for good, in every workspace, the facts whose `expires_at` has passed (they
    /// left every read when it did); at most `limit` per call. Returns how many.
    async fn purge_expired(&self, limit: u32) -> Result<u64>;
}
