//! The catalog's tools as data: each tool is its request type, which implements [`Tool`] in
//! its area module (`nodes.rs`, `observations.rs`, …): its name, the description a model
//! reads, whether it changes the memory, what it answers, and how it runs over the store.
//! [`Memory::call`](crate::Memory::call) runs one; [`crate::each_tool`] names every one, so
//! a protocol layer publishes them all without a line of its own per tool.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::access::AccessStore;
use crate::auth::TokenStore;
use crate::consolidation::store::ConsolidationStore;
use crate::embedding_coverage::CountedCoverages;
use crate::error::Result;
use crate::generate::{GenerationBudget, TextGenerator};
use crate::graph::GraphStore;
use crate::history::HistoryStore;
use crate::merge::AliasStore;
use crate::model::WorkspaceId;
use crate::naming::aliases::Aliased;
use crate::nodes::NodeStore;
use crate::observations::ObservationStore;
use crate::reflections::ReflectionStore;
use crate::relations::RelationStore;
use crate::search::candidates::SearchStore;
use crate::search::tools::Searcher;
use crate::secrets::SecretPolicy;
use crate::split::SplitStore;
use crate::stats::StatsStore;
use crate::suggestions::SuggestionStore;
use crate::transfer::store::TransferStore;
use crate::validity::ValidityStore;
use crate::vectors::IndexStore;
use crate::vocabulary::VocabularyStore;
use crate::workspaces::WorkspaceStore;

/// One tool of the catalog (`shared/reference/tool-catalog.md`) or of engram's extensions,
/// implemented by its request type: the tool's input as it arrives (serde names and
/// aliases; with feature `schema`, the JSON Schema a model reads, from the field docs).
pub trait Tool: DeserializeOwned + Schema + Clone + Send + Sync + Sized + 'static {
    /// The tool's wire name (`add_observations`).
    const NAME: &'static str;
    /// What a model reads about the tool in `tools/list`: one or two sentences.
    const DESCRIPTION: &'static str;
    /// Whether it changes the memory, and how (MCP's tool annotations).
    const EFFECT: Effect;
    /// Its result: the catalog's result object, serialised with every key it names.
    type Output: Serialize + Schema + Send + 'static;

    /// Checks the request ([`crate::Error::InvalidArgument`] naming the field, writing
    /// nothing) and carries it out in `workspace`.
    fn run(
        self,
        context: ToolContext<'_>,
        workspace: WorkspaceId,
    ) -> impl Future<Output = Result<Self::Output>> + Send;

    /// The nodes `output` found, by name, in order (a client may offer to open them); none
    /// for tools that do not search.
    fn found_nodes(_output: &Self::Output) -> Vec<&str> {
        Vec::new()
    }

    /// The nodes `output` returned that count as read for the access log
    /// ([`crate::access`]), in order: those a search found ([`Tool::found_nodes`]) by
    /// default; `open_nodes` and `search_observations` say theirs.
    fn accessed(output: &Self::Output) -> Vec<&str> {
        Self::found_nodes(output)
    }

    /// Every node name the request takes: [`Memory::call`](crate::Memory::call) answers one
    /// that is an alias as its node's (`naming`). None for tools that name no node.
    fn node_names(&mut self) -> Vec<&mut String> {
        Vec::new()
    }

    /// The names `output` reports as not found (rows that missed, `not_found` lists): looked
    /// up as aliases, then given suggestions when [`Tool::SUGGESTS`]. None by default.
    fn missed(&self, _output: &Self::Output) -> Vec<String> {
        Vec::new()
    }

    /// What to run again once `aliased` (alias → node) named what `output` missed: the
    /// entries that missed through an alias, by their nodes' names; `None` (the default) when
    /// nothing is.
    fn retry(&self, _output: &Self::Output, _aliased: &Aliased) -> Option<Self> {
        None
    }

    /// `first` with `again` (the answer to [`Tool::retry`]) joined in.
    fn join(&self, _first: Self::Output, again: Self::Output, _aliased: &Aliased) -> Self::Output {
        again
    }

    /// Whether the answer names existing nodes close to those it missed ([`Tool::suggest`]).
    const SUGGESTS: bool = false;

    /// Sets on `output` the names close to each it missed ([`crate::suggestions`]).
    fn suggest(_output: &mut Self::Output, _close: BTreeMap<String, Vec<String>>) {}
}

/// What a tool does to the memory (MCP 2025-03-26, tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It changes nothing (`readOnlyHint`): a read-only session may call it.
    Reads,
    /// It writes.
    Writes {
        /// It may remove or overwrite what is there (`destructiveHint`).
        destructive: bool,
        /// Calling it again with the same arguments changes nothing more (`idempotentHint`).
        idempotent: bool,
    },
}

/// What a [`Tool`] runs over: the parts of a [`Memory`](crate::Memory), lent for one call.
#[derive(Clone)]
pub struct ToolContext<'a> {
    pub(crate) store: &'a dyn MemoryStore,
    pub(crate) secrets: SecretPolicy,
    pub(crate) search: &'a Searcher,
    pub(crate) generator: Option<&'a Arc<dyn TextGenerator>>,
    pub(crate) generation_budget: GenerationBudget,
    pub(crate) counted_coverage: &'a CountedCoverages,
}

/// Durable storage of workspaces and their graphs: the union of the area traits (one per
/// capability, each declared in its area module beside its requests, `NodeStore` in
/// `nodes.rs`, …), implemented for every type that has them all. Each call is atomic: it commits whole or changes nothing. Inputs are validated by
/// [`crate::Memory`] before they reach a store (limits in [`crate::limits`]); stores may rely on
/// that, and back it with database constraints.
///
/// Errors: unknown workspaces and nodes are [`crate::Error::NotFound`] unless the tool reports
/// them in its result (`not_found` lists); an unreachable database is
/// [`crate::Error::Unavailable`].
///
/// Object safe: used as `Arc<dyn MemoryStore>`. It is the union of one trait per capability,
/// each implemented by a backend in the module that holds its SQL; a part of engram that needs
/// one capability takes that trait alone (`Arc<dyn IndexStore>` for the indexer).
pub trait MemoryStore:
    WorkspaceStore
    + NodeStore
    + AliasStore
    + SplitStore
    + ObservationStore
    + RelationStore
    + GraphStore
    + ValidityStore
    + HistoryStore
    + ConsolidationStore
    + StatsStore
    + SuggestionStore
    + TokenStore
    + TransferStore
    + IndexStore
    + SearchStore
    + VocabularyStore
    + ReflectionStore
    + AccessStore
{
}

impl<T> MemoryStore for T where
    T: WorkspaceStore
        + NodeStore
        + AliasStore
        + SplitStore
        + ObservationStore
        + RelationStore
        + GraphStore
        + ValidityStore
        + HistoryStore
        + ConsolidationStore
        + StatsStore
        + SuggestionStore
        + TokenStore
        + TransferStore
        + IndexStore
        + SearchStore
        + VocabularyStore
        + ReflectionStore
        + AccessStore
        + ?Sized
{
}

/// Receives every tool's type from [`crate::each_tool`].
pub trait ToolVisitor {
    /// Called once per tool.
    fn visit<T: Tool>(&mut self);
}

/// The JSON Schema a tool's input and output publish, with feature `schema`; nothing without.
#[cfg(feature = "schema")]
pub trait Schema: schemars::JsonSchema {}
#[cfg(feature = "schema")]
impl<T: schemars::JsonSchema> Schema for T {}

/// The JSON Schema a tool's input and output publish, with feature `schema`; nothing without.
#[cfg(not(feature = "schema"))]
pub trait Schema {}
#[cfg(not(feature = "schema"))]
impl<T> Schema for T {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Collects each tool's name, description and effect.
    #[derive(Default)]
    struct Listed(Vec<(&'static str, &'static str, Effect)>);

    impl ToolVisitor for Listed {
        fn visit<T: Tool>(&mut self) {
            self.0.push((T::NAME, T::DESCRIPTION, T::EFFECT));
        }
    }

    #[test]
    fn every_tool_is_listed_once_with_a_wire_name_and_a_description() {
        let mut listed = Listed::default();
        crate::each_tool(&mut listed);
        let mut names: Vec<&str> = listed.0.iter().map(|(name, ..)| *name).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "a tool is listed twice: {names:?}");
        assert_eq!(count, 40, "the catalog's 24 tools and 16 extensions");
        for (name, description, _) in &listed.0 {
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert!(
                description.len() > 20 && !description.ends_with(' '),
                "{name}"
            );
        }
        let reads = |name: &str| listed.0.iter().any(|t| t.0 == name && t.2 == Effect::Reads);
        assert!(reads("search_nodes") && reads("open_nodes") && !reads("set_tags"));
    }

    /// The README's "Tools" section names every tool the server lists, and counts them true.
    #[test]
    fn the_readme_names_and_counts_every_tool() {
        const README: &str = include_str!("../../../README.md");
        let section = README
            .split("\n## Tools\n")
            .nth(1)
            .expect("a Tools section");
        let paragraph = section
            .split("\nParameters and fields")
            .next()
            .unwrap()
            .trim_start();
        let mut listed = Listed::default();
        crate::each_tool(&mut listed);
        let mut named: Vec<&str> = (paragraph.split('`').skip(1).step_by(2))
            .filter(|word| listed.0.iter().any(|(name, ..)| name == word))
            .collect();
        named.sort_unstable();
        named.dedup();
        let mut tools: Vec<&str> = listed.0.iter().map(|(name, ..)| *name).collect();
        tools.sort_unstable();
        assert_eq!(named, tools, "the README's Tools section names these");
        const NUMBERS: [&str; 18] = [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
        ];
        let extra = NUMBERS[tools.len() - 24];
        assert!(
            paragraph.starts_with("All 24 tools of the catalog"),
            "{paragraph}"
        );
        assert!(
            paragraph.contains(&format!("and {extra} more")),
            "the README should say \"and {extra} more\""
        );
    }
}
