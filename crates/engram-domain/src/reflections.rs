//! Reflections (tool group `reflections`, after `add_reflection` and `search_reflections` of the
//! system in `shared/reference/004`): free prose about a node, a current relation or the whole
//! workspace ("why we chose this", "what this project taught us"), kept apart from the facts.
//! The indexer embeds each one's text once per model ([`crate::IndexStore::pending_reflections`]);
//! `search_reflections` finds them by meaning and words and scores them as the fact searches
//! score facts ([`crate::search::calibration`]), so a score reads the same in both. A node's
//! newest ones are shown when it is opened ([`NODE_REFLECTIONS`]), its history lists them, and
//! `engram export` / `engram import` carry them.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::checked::Checked;
use crate::error::{Error, Result};
use crate::limits;
use crate::model::*;
use crate::search::calibration;
use crate::search::candidates::{Candidate, CandidateQuery, ObservationRow, QueryVector, Signals};
use crate::search::ranking::{self, QueryCues};
use crate::search::results::SearchMode;
use crate::tool::{Effect, Tool, ToolContext, ToolVisitor};

/// The newest reflections shown with a node that `open_nodes` opens; `more_reflections` counts
/// the rest.
pub const NODE_REFLECTIONS: usize = 3;

pub use crate::model::REFLECTION_PREVIEW_CHARS;

/// Reflections a store gathers per signal for a search of `limit` results: the nearest by
/// vector and as many best full-text matches, each at least this many.
const MIN_DEPTH: usize = 30;

fn default_reflection_limit() -> u32 {
    10
}

/// What a reflection is about: exactly one of a node, a current relation, or the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReflectionTarget {
    /// A node, by name (or alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// A current relation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<RelationTarget>,
    /// `true`: the whole workspace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workspace: bool,
}

/// A relation by its ends and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RelationTarget {
    /// Source node name.
    #[serde(alias = "from_entity")]
    pub from: String,
    /// Target node name.
    #[serde(alias = "to_entity")]
    pub to: String,
    /// Its type.
    #[serde(alias = "relationType")]
    pub relation_type: String,
}

/// A [`ReflectionTarget`] once checked: which of the three it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target<'a> {
    /// A node, by name.
    Node(&'a str),
    /// A relation, by its ends' names and type.
    Relation(&'a RelationTarget),
    /// The workspace.
    Workspace,
}

impl ReflectionTarget {
    /// A node's.
    pub fn node(name: impl Into<String>) -> Self {
        Self {
            node: Some(name.into()),
            ..Self::default()
        }
    }

    /// A relation's.
    pub fn relation(from: &str, relation_type: &str, to: &str) -> Self {
        Self {
            relation: Some(RelationTarget {
                from: from.to_owned(),
                to: to.to_owned(),
                relation_type: relation_type.to_owned(),
            }),
            ..Self::default()
        }
    }

    /// The workspace's.
    pub fn workspace() -> Self {
        Self {
            workspace: true,
            ..Self::default()
        }
    }

    /// Which one it is; [`Error::InvalidArgument`] naming `field` unless exactly one is given,
    /// or for a name or type out of its limits.
    pub fn target(&self, field: &str) -> Result<Target<'_>> {
        let given = [self.node.is_some(), self.relation.is_some(), self.workspace];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(Error::invalid(
                field,
                "give exactly one of `node` (a name), `relation` ({from, to, relation_type}) \
                 or `workspace: true`",
            ));
        }
        if let Some(node) = &self.node {
            limits::name(&format!("{field}.node"), node)?;
            return Ok(Target::Node(node));
        }
        if let Some(relation) = &self.relation {
            limits::name(&format!("{field}.relation.from"), &relation.from)?;
            limits::name(&format!("{field}.relation.to"), &relation.to)?;
            let relation_type = format!("{field}.relation.relation_type");
            limits::name(&relation_type, &relation.relation_type)?;
            return Ok(Target::Relation(relation));
        }
        Ok(Target::Workspace)
    }

    /// The target a store's row names: its node's name, or its relation's ends and type, or
    /// neither (the workspace).
    pub fn from_columns(
        node: Option<String>,
        from: Option<String>,
        to: Option<String>,
        relation_type: Option<String>,
    ) -> Self {
        match (node, from, to, relation_type) {
            (Some(node), ..) => Self::node(node),
            (None, Some(from), Some(to), Some(relation_type)) => Self {
                relation: Some(RelationTarget {
                    from,
                    to,
                    relation_type,
                }),
                ..Self::default()
            },
            _ => Self::workspace(),
        }
    }

    /// The node names it holds, for alias resolution.
    fn names(&mut self) -> Vec<&mut String> {
        let mut names: Vec<&mut String> = self.node.iter_mut().collect();
        if let Some(relation) = &mut self.relation {
            names.extend([&mut relation.from, &mut relation.to]);
        }
        names
    }

    /// What the scores read as the reflection's name: the node's name, a relation's ends and
    /// type, nothing for the workspace.
    fn label(&self) -> String {
        match (&self.node, &self.relation) {
            (Some(node), _) => node.clone(),
            (_, Some(r)) => format!("{} {} {}", r.from, r.relation_type, r.to),
            _ => String::new(),
        }
    }
}

/// The columns both stores read a reflection from, alike on PostgreSQL and SQLite, over
/// [`REFLECTION_JOINS`]: id, node, from, to, relation_type, content, author, mood, created_at
/// ([`ReflectionTarget::from_columns`] builds the target).
pub const REFLECTION_COLUMNS: &str = "r.id, n.name, f.name, t.name, r.relation_type, \
    r.content, r.author, r.mood, r.created_at";

/// `FROM` and the joins [`REFLECTION_COLUMNS`] reads.
pub const REFLECTION_JOINS: &str = "FROM reflections r \
    LEFT JOIN nodes n ON n.id = r.node_id \
    LEFT JOIN nodes f ON f.id = r.from_node_id \
    LEFT JOIN nodes t ON t.id = r.to_node_id";

/// The statement both stores run to find a current relation for a reflection, alike: `$1`
/// the workspace, `$2` from, `$3` to, `$4` the type; the ends' ids.
pub const RELATION_ENDS_SQL: &str = "SELECT r.from_node_id, r.to_node_id FROM relations r \
    JOIN nodes f ON f.id = r.from_node_id JOIN nodes t ON t.id = r.to_node_id \
    WHERE r.workspace_id = $1 AND f.name = $2 AND t.name = $3 AND r.relation_type = $4";

/// The statement both stores run for the indexer's pending reflections, alike: `$1` the
/// model, `$2` the ids to skip (PostgreSQL: an array; SQLite: [`PENDING_SKIP_SQLITE`] in its
/// place), `$3` the most rows; id, label ([`crate::PendingReflection::label`]), content.
pub const PENDING_REFLECTIONS_SQL: &str = "SELECT r.id, \
    coalesce(n.name, f.name || ' ' || r.relation_type || ' ' || t.name, ''), r.content \
    FROM reflections r \
    LEFT JOIN nodes n ON n.id = r.node_id \
    LEFT JOIN nodes f ON f.id = r.from_node_id \
    LEFT JOIN nodes t ON t.id = r.to_node_id \
    WHERE NOT EXISTS (SELECT 1 FROM reflection_embeddings e \
                      WHERE e.reflection_id = r.id AND e.model = $1) \
      AND r.id <> ALL($2) \
    ORDER BY r.id LIMIT $3";

/// What SQLite reads in place of PostgreSQL's `r.id <> ALL($2)` in [`PENDING_REFLECTIONS_SQL`]
/// (`$2` a JSON array).
pub const PENDING_SKIP_SQLITE: &str = "r.id NOT IN (SELECT value FROM json_each($2))";

/// A target's ids in a store: what its rows hold. [`Error::NotFound`] from a store for a node
/// or current relation it does not have.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetIds {
    /// The node's id (a node's reflection).
    pub node: Option<i64>,
    /// The relation's ends' ids (a relation's reflection).
    pub ends: Option<(i64, i64)>,
}

/// The error for a relation a reflection names that is not current in the workspace.
pub fn relation_not_found(relation: &RelationTarget) -> Error {
    Error::relation_not_found(&RelationSpec::new(
        &relation.from,
        &relation.to,
        &relation.relation_type,
    ))
}

/// A reflection as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reflection {
    /// Its id, unique in the store.
    pub id: i64,
    /// What it is about.
    pub target: ReflectionTarget,
    /// Its text.
    pub content: String,
    /// Who wrote it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Its mood, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mood: Option<String>,
    /// When it was written.
    pub created_at: Timestamp,
}

/// A reflection shown with its node (`open_nodes`), newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NodeReflection {
    /// Its text.
    pub content: String,
    /// Who wrote it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Its mood, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mood: Option<String>,
    /// When it was written.
    pub created_at: Timestamp,
}

/// `add_reflection`: prose about a node, a current relation or the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddReflection {
    /// What it is about: `{"node": name}`, `{"relation": {from, to, relation_type}}` (a current
    /// relation) or `{"workspace": true}`.
    pub target: ReflectionTarget,
    /// The prose: why something was chosen, what was learned (1–65,536 bytes).
    pub content: String,
    /// Who writes it (1–256 bytes). Default: the caller the transport names, if any.
    #[serde(default)]
    pub author: Option<String>,
    /// A mood word, e.g. "insight", "doubt" (1–256 bytes).
    #[serde(default)]
    pub mood: Option<String>,
}

impl AddReflection {
    /// `content` about `target`.
    pub fn new(target: ReflectionTarget, content: impl Into<String>) -> Self {
        Self {
            target,
            content: content.into(),
            author: None,
            mood: None,
        }
    }

    /// The request with its texts as the secret policy leaves them and its author defaulted
    /// to the call's ([`crate::authorship::current`]), if every field is within its limits.
    pub fn check(mut self, secrets: crate::SecretPolicy) -> Result<Checked<Self>> {
        if self.author.is_none() {
            // The transport's author, within the 256 bytes an author may have.
            self.author = crate::authorship::current().map(|author| {
                let mut kept = author.to_string();
                while kept.len() > 256 {
                    kept.pop();
                }
                kept
            });
        }
        let texts = (&mut self.content, &mut self.author, &mut self.mood);
        screen_texts(secrets, "", &self.target, texts)?;
        Ok(Checked::new(self))
    }
}

/// Checks a reflection's `target` and its texts (`content`, then the optional `author` and
/// `mood`) against their limits and leaves them as the secret policy does, naming each field
/// after `prefix` (`""`, `"reflections[2]."`).
fn screen_texts(
    secrets: crate::SecretPolicy,
    prefix: &str,
    target: &ReflectionTarget,
    (content, author, mood): (&mut String, &mut Option<String>, &mut Option<String>),
) -> Result<()> {
    target.target(&format!("{prefix}target"))?;
    let field = format!("{prefix}content");
    limits::content(&field, content)?;
    *content = secrets.screen(&field, content)?.into_owned();
    for (name, value) in [("author", author), ("mood", mood)] {
        if let Some(text) = value {
            let field = format!("{prefix}{name}");
            limits::name(&field, text)?;
            *text = secrets.screen(&field, text)?.into_owned();
        }
    }
    Ok(())
}

impl Tool for AddReflection {
    const NAME: &'static str = "add_reflection";
    const DESCRIPTION: &'static str = "Keeps free prose about a node, a relation or the whole \
        workspace (why a choice was made, what was learned), apart from its facts; found again \
        with search_reflections and shown when the node is opened.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: false,
    };
    type Output = Reflection;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        let request = self.check(context.secrets)?;
        context.store.add_reflection(workspace, &request).await
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        self.target.names()
    }
}

/// `search_reflections`: reflections by meaning and words.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SearchReflections {
    /// What to look for: a question, a phrase or keywords.
    pub query: String,
    /// Only reflections about this node, relation or the workspace itself.
    #[serde(default)]
    pub target: Option<ReflectionTarget>,
    /// Only those by this author.
    #[serde(default)]
    pub author: Option<String>,
    /// Only those of this mood.
    #[serde(default)]
    pub mood: Option<String>,
    /// Most results, 1–100. Default 10.
    #[serde(default = "default_reflection_limit")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 100)))]
    pub limit: u32,
    /// Least score kept (0–1), as in search_nodes. Default: the model's.
    #[serde(default)]
    pub min_score: Option<f64>,
}

impl SearchReflections {
    /// `query` over every reflection of the workspace.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            target: None,
            author: None,
            mood: None,
            limit: default_reflection_limit(),
            min_score: None,
        }
    }
}

/// A reflection found, with its score (as `search_nodes`' scores read).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReflectionHit {
    /// The reflection.
    #[serde(flatten)]
    pub reflection: Reflection,
    /// How likely it answers the query (0–1, 3 decimals).
    pub score: f64,
}

/// `search_reflections`' result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReflectionResults {
    /// The reflections found, best first.
    pub results: Vec<ReflectionHit>,
    /// Why the answer is narrower than asked (full text only, nothing above `min_score`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl Tool for SearchReflections {
    const NAME: &'static str = "search_reflections";
    const DESCRIPTION: &'static str = "Finds reflections (add_reflection) by meaning and words, \
        best first, scored as search_nodes scores facts; filter by target, author or mood.";
    const EFFECT: Effect = Effect::Reads;
    type Output = ReflectionResults;

    async fn run(self, context: ToolContext<'_>, workspace: WorkspaceId) -> Result<Self::Output> {
        limits::content("query", &self.query)?;
        limits::within("limit", self.limit, 1..=100)?;
        if let Some(target) = &self.target {
            target.target("target")?;
        }
        for (field, value) in [("author", &self.author), ("mood", &self.mood)] {
            if let Some(value) = value {
                limits::name(field, value)?;
            }
        }
        if let Some(least) = self.min_score
            && !(0.0..=1.0).contains(&least)
        {
            return Err(Error::invalid("min_score", format!("0–1, got {least}")));
        }
        let search = context.search;
        let (vector, model, mut notice) = match search.query_embedding(&self.query).await? {
            Ok((model, embedding)) => (Some(embedding), model, None),
            Err(why) => (None, String::new(), Some(why)),
        };
        let depth = (self.limit as usize * 3).max(MIN_DEPTH);
        let query = ReflectionQuery {
            text: &self.query,
            model: &model,
            vector: vector.as_ref().map(|e| e.vector.as_slice()),
            depth,
            target: self.target.as_ref(),
            author: self.author.as_deref(),
            mood: self.mood.as_deref(),
        };
        let candidates = context
            .store
            .reflection_candidates(workspace, &query)
            .await?;
        let unembedded = vector.is_some() && !candidates.iter().any(|c| c.nearest);
        if unembedded && !candidates.is_empty() {
            notice = Some(
                "no reflection's vector matched (indexing may still be running); answered by \
                 full-text search"
                    .to_owned(),
            );
        }
        let calibration = search.embedder().and_then(|e| e.calibration());
        let query_vector = vector.map(|embedding| QueryVector {
            perspective: PerspectiveId(0),
            perspective_name: "reflection".to_owned(),
            vector: embedding.vector.clone(),
            token_signs: embedding.token_signs.clone(),
        });
        let (mut results, why) = scored(
            &self.query,
            query_vector,
            candidates,
            calibration.as_ref(),
            self.min_score,
        );
        results.truncate(self.limit as usize);
        if let Some(why) = why {
            limits::add_notice(&mut notice, why);
        }
        Ok(ReflectionResults { results, notice })
    }

    fn node_names(&mut self) -> Vec<&mut String> {
        self.target
            .as_mut()
            .map_or_else(Vec::new, ReflectionTarget::names)
    }
}

/// What a store gathers for `search_reflections`.
#[derive(Debug, Clone, Copy)]
pub struct ReflectionQuery<'a> {
    /// The query, for full-text search (any of its words, stemmed).
    pub text: &'a str,
    /// The model of `vector`: only vectors of this model (and its dimension) are compared.
    pub model: &'a str,
    /// The query's vector; `None` leaves the vector signal out.
    pub vector: Option<&'a [f32]>,
    /// Reflections gathered per signal: the `depth` nearest, and the `depth` best text matches.
    pub depth: usize,
    /// Only those about this target (a relation by its ends and type, held now or not). A node
    /// that does not exist is [`Error::NotFound`].
    pub target: Option<&'a ReflectionTarget>,
    /// Only those by this author.
    pub author: Option<&'a str>,
    /// Only those of this mood.
    pub mood: Option<&'a str>,
}

/// A reflection a store gathered, with its raw signals.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionCandidate {
    /// The reflection.
    pub reflection: Reflection,
    /// Its cosine similarity to the query vector, when it has a vector of the query's model.
    pub similarity: Option<f64>,
    /// Whether it was among the `depth` nearest.
    pub nearest: bool,
    /// Its stored token signs, if any.
    pub token_signs: Option<Vec<u8>>,
    /// Its full-text score (higher is better) when it matched the query's words.
    pub text_score: Option<f64>,
}

/// Ranks and scores `candidates` for `query` as the fact searches do ([`ranking::rank`], then
/// [`ranking::calibrate`] with the model's calibration, or text mode's without vectors), best
/// first, those below `min_score` (default: the model's) left out; with the notice when none
/// was kept.
fn scored(
    query: &str,
    vector: Option<QueryVector>,
    candidates: Vec<ReflectionCandidate>,
    model: Option<&calibration::ModelCalibration>,
    min_score: Option<f64>,
) -> (Vec<ReflectionHit>, Option<String>) {
    let found = candidates.len();
    let mode = match candidates.iter().any(|c| c.nearest) {
        true => SearchMode::Hybrid,
        false => SearchMode::Text,
    };
    let mut by_id = std::collections::HashMap::with_capacity(found);
    let candidates: Vec<Candidate> = (candidates.into_iter())
        .map(|c| {
            let reflection = c.reflection;
            let row = ObservationRow {
                observation_id: reflection.id,
                name: reflection.target.label(),
                entity_type: String::new(),
                summary: None,
                ordinal: Ordinal(1),
                content: reflection.content.clone(),
                created_at: reflection.created_at,
                valid_from: reflection.created_at,
            };
            by_id.insert(reflection.id, reflection);
            let signals = Signals {
                similarities: vec![c.similarity],
                nearest: vec![c.nearest],
                vectors: vec![None],
                token_signs: vec![c.token_signs],
                text_score: c.text_score,
            };
            Candidate { row, signals }
        })
        .collect();
    let request = CandidateQuery {
        workspace: WorkspaceId(0),
        text: Some(query.to_owned()),
        model: String::new(),
        vectors: vector.into_iter().collect(),
        depth: found,
        text_depth: found,
        within: None,
        entity_types: Vec::new(),
        as_of: None,
        perspectives: false,
        alias_runs: Vec::new(),
    };
    let cues = QueryCues::of(query);
    let mut ranked = ranking::rank(&request, candidates, mode, &cues);
    let mut notice = None;
    if let Some((calibration, default, rescue)) = calibration::of_mode(mode, model) {
        let least = min_score.unwrap_or(default);
        let best = ranking::calibrate(
            &mut ranked,
            &cues,
            &calibration,
            least,
            rescue.as_ref(),
            mode,
        );
        notice = best.map(|(_, score)| {
            format!(
                "no reflection matched: {found} scored below min_score {least} (the best: {}); \
                 a lower min_score shows them",
                calibration::round(score)
            )
        });
    } else if let Some(least) = min_score {
        ranking::keep_at_least(&mut ranked, least, None);
    }
    let results = (ranked.into_iter())
        .filter_map(|r| {
            let reflection = by_id.remove(&r.row.observation_id)?;
            Some(ReflectionHit {
                reflection,
                score: calibration::round(r.score),
            })
        })
        .collect();
    (results, notice)
}

/// `engram export`'s and `engram import`'s reflection line (`"type": "reflection"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReflectionRecord {
    /// What it is about.
    pub target: ReflectionTarget,
    /// Its text.
    pub content: String,
    /// Who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Its mood.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mood: Option<String>,
    /// When it was written.
    pub created_at: Timestamp,
}

impl From<Reflection> for ReflectionRecord {
    fn from(reflection: Reflection) -> Self {
        Self {
            target: reflection.target,
            content: reflection.content,
            author: reflection.author,
            mood: reflection.mood,
            created_at: reflection.created_at,
        }
    }
}

impl ReflectionRecord {
    /// The record as the secret policy leaves it, if every field is within its limits (the
    /// fields named `{at}.content`, …); [`Error::InvalidArgument`] otherwise.
    pub fn check(mut self, secrets: crate::SecretPolicy, at: &str) -> Result<Checked<Self>> {
        let prefix = format!("{at}.");
        let texts = (&mut self.content, &mut self.author, &mut self.mood);
        screen_texts(secrets, &prefix, &self.target, texts)?;
        limits::timestamp(&format!("{at}.created_at"), self.created_at)?;
        Ok(Checked::new(self))
    }
}

/// What importing reflections did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReflectionsImported {
    /// Reflections written.
    pub created: usize,
    /// Reflections skipped: one with the same target and text was there.
    pub existing: usize,
    /// Reflections skipped because their node or (current) relation is not in the workspace:
    /// their indexes among the records given, ascending ([`target_text`] names the target).
    pub missing: Vec<usize>,
}

/// Reflections: kept, searched, paged and imported.
#[async_trait]
pub trait ReflectionStore: Send + Sync + 'static {
    /// `add_reflection`: writes it, with the store's time. [`Error::NotFound`] for a node, or a
    /// current relation, that is not in the workspace.
    async fn add_reflection(
        &self,
        workspace: WorkspaceId,
        request: &Checked<AddReflection>,
    ) -> Result<Reflection>;

    /// `search_reflections`' candidates in one snapshot: the workspace's reflections passing
    /// the query's filters that are among the `depth` nearest to its vector or its `depth` best
    /// full-text matches, with their similarity (of those with a vector of the model and
    /// dimension), token signs and text score, in any order.
    async fn reflection_candidates(
        &self,
        workspace: WorkspaceId,
        query: &ReflectionQuery<'_>,
    ) -> Result<Vec<ReflectionCandidate>>;

    /// `engram export`: up to `limit` of the workspace's reflections with ids after `after`, in
    /// id order.
    async fn reflections_page(
        &self,
        workspace: WorkspaceId,
        after: i64,
        limit: u32,
    ) -> Result<Vec<Reflection>>;

    /// `engram import`: writes each record whose node (a relation's: both ends) is there and
    /// that is not there yet (same target, same text), with its recorded time, in one
    /// transaction; a relation's need not hold now.
    async fn import_reflections(
        &self,
        workspace: WorkspaceId,
        records: &[Checked<ReflectionRecord>],
    ) -> Result<ReflectionsImported>;
}

/// `target` as text (`node X`, `relation A -[t]-> B`, `the workspace`), for messages.
pub fn target_text(target: &ReflectionTarget) -> String {
    match (&target.node, &target.relation) {
        (Some(node), _) => format!("node {node}"),
        (_, Some(r)) => format!("relation {} -[{}]-> {}", r.from, r.relation_type, r.to),
        _ => "the workspace".to_owned(),
    }
}

/// The semantics of [`Memory::reflections_page`](crate::Memory::reflections_page).
pub(crate) async fn page(
    store: &dyn crate::MemoryStore,
    workspace: WorkspaceId,
    after: i64,
    limit: u32,
) -> Result<Vec<Reflection>> {
    limits::within("limit", limit, limits::LIMIT)?;
    store.reflections_page(workspace, after, limit).await
}

/// The semantics of [`Memory::import_reflections`](crate::Memory::import_reflections).
pub(crate) async fn import(
    store: &dyn crate::MemoryStore,
    secrets: crate::SecretPolicy,
    workspace: WorkspaceId,
    records: Vec<ReflectionRecord>,
) -> Result<ReflectionsImported> {
    limits::batch("reflections", &records)?;
    let checked = (records.into_iter().enumerate())
        .map(|(i, record)| record.check(secrets, &format!("reflections[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    store.import_reflections(workspace, &checked).await
}

pub(crate) fn tools(visitor: &mut impl ToolVisitor) {
    visitor.visit::<AddReflection>();
    visitor.visit::<SearchReflections>();
}
