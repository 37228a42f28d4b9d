//! Observations: adding, replacing and deleting a node's facts, each asked by its tool's
//! request (the MCP input), checked, then answered by the store.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::Result;
use crate::limits::{self, batch_total};
use crate::model::*;
use crate::naming::aliases::{self, Aliased, NodeEntry};
use crate::store::*;
use crate::tool::{Effect, MemoryStore, Tool, ToolContext, ToolVisitor};

/// `add_observations`: facts to append to existing nodes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddObservations {
    /// At most 1,000 contents in all.
    pub observations: Vec<ObservationAdditions>,
}

impl AddObservations {
    /// The additions `observations`.
    pub fn new(observations: &[ObservationAdditions]) -> Self {
        Self {
            observations: observations.to_vec(),
        }
    }

    /// The request with its texts as the secret policy leaves them, if every node name and
    /// text is within its limits (1–1,000 entries, 1–1,000 contents each and in all) and the
    /// policy refuses none; else [`crate::Error::InvalidArgument`] naming the field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        let additions = &self.observations;
        limits::batch("observations", additions)?;
        let mut total = 0;
        for (i, addition) in additions.iter().enumerate() {
            limits::name(
                &format!("observations[{i}].entity_name"),
                &addition.entity_name,
            )?;
            limits::batch(&format!("observations[{i}].contents"), &addition.contents)?;
            for (j, content) in addition.contents.iter().enumerate() {
                limits::fact(&format!("observations[{i}].contents[{j}]"), content)?;
            }
            total += addition.contents.len();
        }
        batch_total("observations[].contents", total)?;
        if let Some(screened) = secrets.screen_additions(additions)? {
            self.observations = screened;
        }
        Ok(Checked::new(self))
    }
}

/// `replace_observation`: one observation's new text, kept at its ordinal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReplaceObservation {
    /// The node.
    pub entity_name: String,
    /// From open_nodes.
    pub ordinal: i64,
    /// The replacement text, 1–65,536 bytes.
    pub new_content: String,
}

impl ReplaceObservation {
    /// `entity_name`'s observation `ordinal`, to hold `new_content`.
    pub fn new(
        entity_name: impl Into<String>,
        ordinal: Ordinal,
        new_content: impl Into<String>,
    ) -> Self {
        Self {
            entity_name: entity_name.into(),
            ordinal: ordinal.0,
            new_content: new_content.into(),
        }
    }

    /// The request with its text as the secret policy leaves it, if the name, the ordinal
    /// and the text are within their limits; else [`crate::Error::InvalidArgument`] naming
    /// the field.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        limits::name("entity_name", &self.entity_name)?;
        limits::ordinal("ordinal", Ordinal(self.ordinal))?;
        limits::content("new_content", &self.new_content)?;
        self.new_content = secrets
            .screen("new_content", &self.new_content)?
            .into_owned();
        Ok(Checked::new(self))
    }
}

/// `delete_observations`: ordinals (or texts) to delete, per node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeleteObservations {
    /// At most 1,000 ordinals in all.
    pub deletions: Vec<ObservationDeletions>,
}

impl DeleteObservations {
    /// The deletions `deletions`.
    pub fn new(deletions: &[ObservationDeletions]) -> Self {
        Self {
            deletions: deletions.to_vec(),
        }
    }

    /// The request if it holds 1–1,000 entries with valid names, ordinals and texts, at
    /// least one per entry and at most 1,000 in all; else [`crate::Error::InvalidArgument`]
    /// naming the field.
    pub fn check(self) -> Result<Checked<Self>> {
        let deletions = &self.deletions;
        limits::batch("deletions", deletions)?;
        let mut total = 0;
        for (i, deletion) in deletions.iter().enumerate() {
            limits::name(
                &format!("deletions[{i}].entity_name"),
                &deletion.entity_name,
            )?;
            if deletion.contents.is_empty() {
                limits::batch(&format!("deletions[{i}].ordinals"), &deletion.ordinals)?;
            }
            for (j, ordinal) in deletion.ordinals.iter().enumerate() {
                limits::ordinal(&format!("deletions[{i}].ordinals[{j}]"), *ordinal)?;
            }
            for (j, content) in deletion.contents.iter().enumerate() {
                limits::content(&format!("deletions[{i}].observations[{j}]"), content)?;
            }
            total += deletion.ordinals.len() + deletion.contents.len();
        }
        batch_total("deletions[].ordinals", total)?;
        Ok(Checked::new(self))
    }
}

/// `add_observations`: the additions stored, and the names close to each node that was not
/// found.
impl Tool for AddObservations {
    const NAME: &'static str = "add_observations";
    const DESCRIPTION: &'static str = "Append facts to existing nodes (`not_found: true`: none added). `similar_to`: a held\n\
fact it `repeats` (delete_observations) or `may_update` (end_observations).";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: false,
    };
    type Output = AddObservationsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check(context.secrets)?);
        let mut results = store_additions(store, workspace, &request).await?;
        for result in results.iter_mut().filter(|result| !result.added.is_empty()) {
            // The facts are stored: a failed comparison leaves `similar_to` empty, never fails
            // the write.
            result.similar_to = (similar_held(store, workspace, result).await).unwrap_or_default();
        }
        Ok(AddObservationsResult { results })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        (self.observations.iter_mut())
            .map(|a| &mut a.entity_name)
            .collect()
    }

    fn missed(&self, output: &Self::Output) -> Vec<String> {
        let rows = (&self.observations[..], &output.results[..]);
        aliases::missed_rows(rows, |row| row.not_found)
    }

    fn retry(&self, output: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let rows = (&self.observations[..], &output.results[..]);
        (aliases::retry_rows(rows, |row| row.not_found, aliased))
            .map(|observations| Self { observations })
    }

    fn join(&self, first: Self::Output, again: Self::Output, aliased: &Aliased) -> Self::Output {
        let rows = (&self.observations[..], first.results);
        let results = aliases::join_rows(rows, again.results, |row| row.not_found, aliased);
        AddObservationsResult { results }
    }

    const SUGGESTS: bool = true;

    fn suggest(output: &mut Self::Output, close: BTreeMap<String, Vec<String>>) {
        for row in output.results.iter_mut().filter(|row| row.not_found) {
            row.did_you_mean = close.get(&row.entity_name).cloned().unwrap_or_default();
        }
    }
}

/// Most of a node's newest facts an added fact is compared with (`similar_to`): a bound on
/// what one call reads from a node of thousands.
const SIMILAR_HELD: u32 = 128;

/// Of the facts `row` added, those like a current fact the node held before
/// ([`crate::consolidation::facts::likeness`]), each with the held fact most like it: one said
/// again before one updated, the newest first.
async fn similar_held(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    row: &AddedObservations,
) -> Result<Vec<SimilarFact>> {
    use crate::consolidation::facts::{Likeness, Words, most_alike, quote};
    let request = FactVectors {
        workspace,
        name: &row.entity_name,
        model: None,
        perspective: None,
        // The added facts are among the newest: past them, the newest held.
        newest: Some(SIMILAR_HELD + row.added.len() as u32),
    };
    let facts = match store.fact_vectors(request).await {
        Ok(node) => node.facts,
        // Deleted since the facts were added.
        Err(crate::Error::NotFound { .. }) => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let added: HashSet<Ordinal> = row.added.iter().map(|o| o.ordinal).collect();
    let held: Vec<(&FactVector, Words)> = (facts.iter().rev())
        .filter(|fact| !added.contains(&fact.ordinal))
        .map(|fact| (fact, Words::of(&fact.content)))
        .collect();
    let mut similar = Vec::new();
    let subject = Words::of(&row.entity_name);
    for new in &row.added {
        // The newest held fact it repeats, else the newest it may update.
        let held_words = held.iter().map(|(_, old)| old);
        let found = most_alike(held_words, &Words::of(&new.content), &subject);
        if let Some((fact, likeness)) = found.map(|(at, kind)| (held[at].0, kind)) {
            similar.push(SimilarFact {
                ordinal: new.ordinal,
                similar_ordinal: fact.ordinal,
                content: quote(&fact.content),
                kind: match likeness {
                    Likeness::Duplicate => SimilarKind::Repeats,
                    Likeness::Version => SimilarKind::MayUpdate,
                },
            });
        }
    }
    Ok(similar)
}

/// `add_observations` without the suggestions: each text once.
async fn store_additions(
    store: &dyn MemoryStore,
    workspace: WorkspaceId,
    request: &Checked<AddObservations>,
) -> Result<Vec<AddedObservations>> {
    let additions = &request.observations;
    // A text given twice for one node (in one entry or two) is stored once; the store
    // skips the texts the node already holds. Repeats are rare: the call is copied
    // without them only when it has some.
    let mut given: HashMap<&str, HashSet<&str>> = HashMap::new();
    let kept: Vec<Vec<bool>> = (additions.iter())
        .map(|addition| {
            let seen = given.entry(addition.entity_name.as_str()).or_default();
            (addition.contents.iter())
                .map(|fact| seen.insert(fact.content.as_str()))
                .collect()
        })
        .collect();
    if kept.iter().flatten().all(|first| *first) {
        return store.add_observations(workspace, request).await;
    }
    let once: Vec<ObservationAdditions> = (additions.iter().zip(&kept))
        .map(|(addition, kept)| ObservationAdditions {
            entity_name: addition.entity_name.clone(),
            contents: (addition.contents.iter().zip(kept))
                .filter(|(_, kept)| **kept)
                .map(|(content, _)| content.clone())
                .collect(),
        })
        .collect();
    let once = Checked::new(AddObservations { observations: once });
    let mut results = store.add_observations(workspace, &once).await?;
    // Every skipped text in request order, with the ordinal that holds it.
    let placed: HashMap<(String, String), Ordinal> = (results.iter())
        .flat_map(|r| {
            (r.added.iter().chain(&r.skipped_duplicates))
                .map(|o| ((r.entity_name.clone(), o.content.clone()), o.ordinal))
        })
        .collect();
    let mut stored: HashSet<(&str, &str)> = HashSet::new();
    for (result, addition) in results.iter_mut().zip(additions) {
        if result.not_found {
            continue;
        }
        let name = addition.entity_name.as_str();
        let added: HashSet<&str> = result.added.iter().map(|o| o.content.as_str()).collect();
        let mut skipped = Vec::new();
        for fact in &addition.contents {
            let content = fact.content.as_str();
            if added.contains(content) && stored.insert((name, content)) {
                continue;
            }
            if let Some(&ordinal) = placed.get(&(name.to_owned(), content.to_owned())) {
                skipped.push(Observation::new(ordinal, content));
            }
        }
        result.skipped_duplicates = skipped;
    }
    Ok(results)
}

impl Tool for ReplaceObservation {
    const NAME: &'static str = "replace_observation";
    const DESCRIPTION: &'static str =
        "Replace one observation's text in place, keeping its ordinal.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: true,
    };
    type Output = ReplacedObservation;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        context.store.replace_observation(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        vec![&mut self.entity_name]
    }
}

impl Tool for DeleteObservations {
    const NAME: &'static str = "delete_observations";
    const DESCRIPTION: &'static str =
        "Delete observations by ordinal; the others keep their ordinals.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: true,
    };
    type Output = DeleteObservationsResult;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let (store, request) = (context.store, self.check()?);
        let results = store.delete_observations(workspace, &request).await?;
        Ok(DeleteObservationsResult { results })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        (self.deletions.iter_mut())
            .map(|d| &mut d.entity_name)
            .collect()
    }

    /// Rows that deleted nothing: their node may be named by an alias.
    fn missed(&self, output: &Self::Output) -> Vec<String> {
        aliases::missed_rows((&self.deletions, &output.results), deleted_nothing)
    }

    fn retry(&self, output: &Self::Output, aliased: &Aliased) -> Option<Self> {
        let rows = (&self.deletions[..], &output.results[..]);
        (aliases::retry_rows(rows, deleted_nothing, aliased)).map(|deletions| Self { deletions })
    }

    fn join(&self, first: Self::Output, again: Self::Output, aliased: &Aliased) -> Self::Output {
        let rows = (&self.deletions[..], first.results);
        let results = aliases::join_rows(rows, again.results, deleted_nothing, aliased);
        DeleteObservationsResult { results }
    }
}

impl NodeEntry for ObservationAdditions {
    fn node(&self) -> &String {
        &self.entity_name
    }

    fn node_mut(&mut self) -> &mut String {
        &mut self.entity_name
    }
}

impl NodeEntry for ObservationDeletions {
    fn node(&self) -> &String {
        &self.entity_name
    }

    fn node_mut(&mut self) -> &mut String {
        &mut self.entity_name
    }
}

/// Whether a row of `delete_observations` deleted nothing.
fn deleted_nothing(row: &DeletedObservations) -> bool {
    row.deleted_ordinals.is_empty()
}

/// `add_observations`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AddObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<AddedObservations>,
}

/// `delete_observations`' result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DeleteObservationsResult {
    /// One row per request entry, in request order.
    pub results: Vec<DeletedObservations>,
}

/// The observation tools.
pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<AddObservations>();
    visitor.visit::<ReplaceObservation>();
    visitor.visit::<DeleteObservations>();
}

/// Observations: appending, replacing and deleting a node's ordered facts.
#[async_trait]
pub trait ObservationStore: Send + Sync + 'static {
    /// `add_observations`: appends in order; ordinals come from a per-node counter, so
    /// concurrent writers never collide and deleted ordinals are never reused.
    async fn add_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddObservations>,
    ) -> Result<Vec<AddedObservations>>;
    /// `replace_observation`: replaces the text in place, keeping the ordinal.
    /// [`crate::Error::NotFound`] for an unknown node or ordinal.
    async fn replace_observation(
        &self,
        workspace: WorkspaceId,
        request: &Checked<ReplaceObservation>,
    ) -> Result<ReplacedObservation>;
    /// `delete_observations`: deletes by ordinal; the others keep theirs.
    async fn delete_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteObservations>,
    ) -> Result<Vec<DeletedObservations>>;
}

/// Observations to append to one node (`add_observations`), as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "ObservationInput"))]
#[serde(deny_unknown_fields)]
pub struct ObservationAdditions {
    /// The node to append to.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Texts, or {content, valid_from?, expires_at?}.
    pub contents: Vec<NewFact>,
}

/// One row of `add_observations`' result, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AddedObservations {
    /// The node appended to.
    pub entity_name: String,
    /// What was added with the ordinals it got (empty when the node does not exist).
    pub added: Vec<Observation>,
    /// `true` when no node has this name; nothing was added for it (a row, not a tool error, as the
    /// specification's shape has it: check it before believing the facts were stored).
    pub not_found: bool,
    /// Given texts the node already held (or that the call repeated), not stored again: each
    /// with the ordinal that holds it (the reference memory server's habit); absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_duplicates: Vec<Observation>,
    /// When `not_found`, up to three existing node names close to `entity_name`
    /// ([`crate::suggestions`]), best first; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub did_you_mean: Vec<String>,
    /// Added facts that a current fact of the node already says, or that look like an update
    /// of one (the same sentence with another number, date or word), so the caller can
    /// delete the new one or end the old; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub similar_to: Vec<SimilarFact>,
}

impl AddedObservations {
    /// The row of a node that took `added` and already held `skipped_duplicates`.
    pub fn stored(entity_name: &str, added: Vec<Observation>, skipped: Vec<Observation>) -> Self {
        Self {
            entity_name: entity_name.to_owned(),
            added,
            not_found: false,
            skipped_duplicates: skipped,
            did_you_mean: Vec::new(),
            similar_to: Vec::new(),
        }
    }

    /// The row of `entity_name` when no node has that name.
    pub fn missing(entity_name: &str) -> Self {
        Self {
            not_found: true,
            ..Self::stored(entity_name, Vec::new(), Vec::new())
        }
    }
}

/// An added fact like one the node held (an `add_observations` row's `similar_to`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarFact {
    /// The added fact's ordinal.
    pub ordinal: Ordinal,
    /// The held fact's ordinal.
    pub similar_ordinal: Ordinal,
    /// The held fact's text, cut at 160 characters.
    pub content: String,
    /// How the added fact is like it.
    pub kind: SimilarKind,
}

/// How an added fact is like a held one, and so what to do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SimilarKind {
    /// It says the held fact again: delete one (`delete_observations`).
    Repeats,
    /// It may update the held fact: end the held one (`end_observations`).
    MayUpdate,
}

/// Result of `replace_observation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReplacedObservation {
    /// The node.
    pub entity_name: String,
    /// The ordinal, unchanged.
    pub ordinal: Ordinal,
    /// The text before.
    pub old_content: String,
    /// The text now.
    pub new_content: String,
}

/// Ordinals to delete from one node (`delete_observations`), as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "DeletionInput", transform = ordinals_required))]
#[serde(deny_unknown_fields)]
pub struct ObservationDeletions {
    /// The node.
    #[serde(alias = "entityName")]
    pub entity_name: String,
    /// Ordinals to delete; the remaining observations keep theirs.
    #[serde(default)]
    pub ordinals: Vec<Ordinal>,
    /// Texts to delete (every observation of the node with exactly this content), as the
    /// reference memory server deletes, by its key `observations` (not advertised); their
    /// ordinals are reported as deleted, and a text that matches nothing is not reported.
    #[serde(default, rename = "observations")]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub contents: Vec<String>,
}

/// The catalog's schema of [`ObservationDeletions`]: `ordinals` required. Serde defaults it
/// only so that the reference server's `observations` (texts) can stand in its place.
#[cfg(feature = "schema")]
fn ordinals_required(schema: &mut schemars::Schema) {
    if let Some(ordinals) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("ordinals"))
        .and_then(|o| o.as_object_mut())
    {
        ordinals.remove("default");
    }
    if let Some(required) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        required.push("ordinals".into());
    }
}

/// One row of `delete_observations`' result, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DeletedObservations {
    /// The node.
    pub entity_name: String,
    /// Ordinals that existed and are gone, ascending.
    pub deleted_ordinals: Vec<Ordinal>,
    /// Ordinals that did not exist (all of them when the node does not exist), ascending.
    pub not_found_ordinals: Vec<Ordinal>,
}
