//! The conformance suite: every [`MemoryStore`] backend must pass all of it.
//!
//! Each test is a plain `async fn(Arc<dyn MemoryStore>)` here; a backend instantiates them all
//! with [`memory_store_test_suite!`](crate::memory_store_test_suite), giving a fixture that
//! returns a store on a fresh, empty database:
//!
//! ```ignore
//! engram_domain::memory_store_test_suite!(crate::fixture::fresh_store);
//! ```
//!
//! The caller's crate needs `tokio` (macros, multi-thread runtime) among its dependencies.

#![allow(missing_docs, clippy::missing_panics_doc)]

mod access;
mod calls;
mod consolidation;
mod embedder;
mod faults;
mod graph;
mod history;
mod late_interaction;
mod limits;
mod merge;
mod names_workload;
mod nodes;
mod observations;
mod properties;
mod properties_admin;
mod properties_curation;
mod properties_reads;
mod properties_writes;
mod reflections;
mod relations;
mod search;
mod secrets;
mod split;
mod suggestions;
mod time_workload;
mod transfer;
mod validity;
mod vectors;
mod vocabulary;
mod workload;
mod workspaces;

pub use access::*;
pub use calls::*;
pub use consolidation::*;
pub use embedder::*;
pub use faults::*;
pub use graph::*;
pub use history::*;
pub use late_interaction::*;
pub use limits::*;
pub use merge::*;
pub use names_workload::suggestions_benchmark;
pub use nodes::*;
pub use observations::*;
pub use properties::every_tool_has_generated_properties;
pub use properties_admin::*;
pub use properties_curation::*;
pub use properties_reads::*;
pub use properties_writes::*;
pub use reflections::*;
pub use relations::*;
pub use search::*;
pub use secrets::*;
pub use split::*;
pub use suggestions::*;
pub use time_workload::over_time_benchmark;
pub use transfer::*;
pub use validity::*;
pub use vectors::*;
pub use vocabulary::*;
pub use workload::consolidation_benchmark;
pub use workspaces::*;

use crate::store::CountEvents;
use std::sync::Arc;

use crate::GetStats;
use crate::{
    AddObservations, CreateEntities, CreateRelations, DeleteEntities, DeleteObservations,
    DeleteRelations, GetNeighborhood, GetNodesByType, GetPath, GetRecentlyModified,
    GetRelationsBetween, Memory, MemoryStore, NewNode, NodeDetail, Observation,
    ObservationAdditions, ObservationDeletions, OpenNodes, Relation, RelationSpec,
    RenameRelationType, ReplaceObservation, SetSummary, SetTags, Timestamp, WorkspaceId,
};

/// Instantiates every conformance test as a `#[tokio::test]` calling `$fixture().await` for a
/// store on a fresh database.
#[macro_export]
macro_rules! memory_store_test_suite {
    ($fixture:path) => {
        $crate::memory_store_test_suite!(@tests $fixture;
            // what each tool costs in store calls
            every_tool_makes_the_store_calls_it_is_known_to,
            // workspaces
            workspaces_are_created_listed_renamed_and_deleted,
            workspace_names_are_validated,
            workspaces_are_isolated,
            perspectives_start_with_the_defaults_and_can_change,
            tokens_are_kept_hashed_scoped_expiring_and_revocable,
            // nodes
            create_entities_returns_rows_in_order_and_leaves_existing_names_alone,
            create_entities_rejects_a_batch_with_any_invalid_entity,
            delete_entities_cascades_to_observations_relations_and_events,
            open_nodes_returns_observations_in_order_and_touching_relations,
            get_nodes_by_type_lists_one_type_by_name,
            get_recently_modified_is_newest_first_and_limited,
            set_summary_and_set_tags_write_the_node,
            a_name_almost_typed_is_suggested_wherever_a_node_is_not_found,
            // history
            updated_at_moves_on_every_write_to_a_node_or_its_children,
            summary_updated_at_moves_only_when_the_summary_is_set,
            get_stats_counts_nodes_observations_and_relations,
            event_counts_record_creates_updates_and_deletes,
            writes_record_their_author_in_history,
            // observations
            ordinals_are_stable_and_never_reused,
            concurrent_additions_get_unique_gap_free_ordinals,
            crossing_writers_never_deadlock,
            add_observations_reports_unknown_nodes_and_repeated_nodes,
            a_text_the_node_holds_is_not_stored_again,
            added_facts_name_a_held_fact_they_repeat_or_update,
            a_misbehaving_embedder_never_breaks_search,
            refused_texts_in_one_workspace_do_not_hold_up_another,
            replace_observation_keeps_the_ordinal,
            delete_observations_reports_deleted_and_missing_ordinals,
            // memory over time
            ended_facts_leave_default_reads_and_stay_for_history,
            an_end_before_the_beginning_is_refused_and_changes_nothing,
            replaced_texts_are_read_as_of_their_time,
            ended_relations_leave_reads_and_start_again,
            expired_facts_leave_reads_at_once_and_are_purged,
            history_tells_what_happened_newest_first,
            merge_entities_folds_duplicates_and_keeps_their_names_as_aliases,
            aliases_are_set_by_hand_and_never_shadow_a_name,
            create_entities_can_merge_into_an_existing_node,
            an_upsert_racing_a_merge_loses_no_fact,
            an_alias_racing_a_new_node_never_equals_a_name,
            an_overgrown_node_is_proposed_in_topics_and_split,
            // relations
            create_relations_reports_created_existing_and_missing,
            relations_repeated_in_one_call_count_once,
            rename_relation_type_renames_one_relation,
            rename_onto_an_existing_relation_conflicts_and_changes_nothing,
            get_relations_between_lists_both_directions_sorted,
            // access
            reads_are_noted_and_written_apart_from_the_graph,
            stale_nodes_are_unwritten_and_rarely_read,
            ranking_by_use_lifts_what_is_read_among_equals,
            // reflections
            reflections_are_kept_found_and_shown_with_their_node,
            a_bad_reflection_is_refused_naming_the_argument_and_writes_nothing,
            reflections_keep_to_their_workspace,
            reflections_follow_their_node_through_merges_and_deletes,
            reflections_are_exported_and_imported_once,
            // graph
            neighborhood_walks_relations_both_ways_through_a_cycle,
            get_path_finds_a_shortest_path_in_either_direction,
            get_path_looks_at_most_twelve_hops_away,
            find_all_paths_lists_simple_paths_shortest_first,
            the_vocabulary_counts_types_and_a_node_is_described_by_its_relations,
            subgraphs_grow_from_several_nodes_and_relations_filter_by_ends_and_type,
            orphaned_nodes_are_those_without_relations,
            unlinked_references_match_whole_names_of_unrelated_nodes,
            // consolidation
            consolidation_report_finds_exactly_what_needs_attention,
            consolidation_report_names_nodes_that_may_be_one,
            consolidation_report_finds_repeats_and_updates_by_meaning,
            merge_candidates_know_nicknames_added_words_and_expansions,
            consolidation_report_finds_facts_to_fold_end_or_split,
            consolidation_report_counts_events_since_and_cuts_lists,
            consolidation_report_without_an_embedder_says_so,
            consolidation_report_uses_the_generator_within_its_budget,
            // limits
            names_and_types_are_bounded_and_printable,
            contents_and_summaries_are_bounded,
            batches_hold_one_to_a_thousand_items,
            tags_are_bounded,
            integer_arguments_are_bounded,
            answers_that_carry_fact_texts_stay_within_eight_mebibytes,
            // properties
            properties_of_the_write_tools_hold_for_generated_arguments,
            properties_of_the_read_tools_hold_for_generated_arguments,
            properties_of_the_admin_tools_hold_for_generated_arguments,
            properties_of_the_curation_tools_hold_for_generated_arguments,
            every_tool_has_generated_properties,
            // search
            indexed_observations_are_found_by_meaning,
            changed_observations_and_context_are_re_embedded,
            query_observations_ranks_within_one_node,
            similar_unrelated_nodes_are_paired,
            embedding_mode_falls_back_to_text_and_says_so,
            text_mode_matches_any_term_of_a_question,
            chinese_and_japanese_are_found_by_full_text,
            the_indexer_loses_nothing_while_the_embedder_is_down,
            hybrid_finds_what_only_one_signal_can,
            search_observations_ranks_every_matching_observation,
            search_rows_carry_their_facts_ordinal_and_valid_from,
            a_search_embeds_its_query_once_and_remembers_it,
            a_perspective_changed_elsewhere_is_seen_by_the_next_search,
            a_hung_embedder_costs_one_budget_not_one_per_search,
            a_text_the_embedder_rejects_does_not_stop_the_others,
            a_rejected_text_is_forgotten_when_its_observation_goes,
            coverage_counts_are_reused_while_indexing_until_a_write,
            late_interaction_decides_what_the_other_signals_tie,
            // secrets and the brief
            every_write_path_refuses_a_secret_naming_the_field_and_kind_only,
            stored_names_refuse_a_secret,
            ordinary_technical_text_is_stored_as_given,
            redacted_and_allowed_secrets_are_stored_as_the_policy_says,
            brief_lists_the_most_connected_then_the_newest_nodes,
            // transfer
            read_graph_pages_hold_every_node_and_relation_once,
            import_merges_into_existing_nodes_and_runs_twice_to_the_same_graph,
            an_invalid_import_record_writes_nothing,
            an_export_imported_into_an_empty_workspace_is_the_same_graph,
            an_export_keeps_memory_over_time,
            an_imported_alias_another_node_holds_is_refused,
            an_imported_record_named_by_an_alias_is_that_node,
            // vectors
            vector_search_keeps_to_its_workspace_model_perspective_and_node,
            vectors_of_several_dimensions_live_side_by_side,
            node_vectors_are_the_mean_of_their_observation_vectors,
            deleted_things_take_their_vectors_with_them,
            a_changed_template_drops_its_perspectives_vectors,
            the_change_marker_moves_on_writes_only,
            pending_pairs_come_workspace_by_workspace_in_turn,
        );
    };
    (@tests $fixture:path; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let store = $fixture().await;
                $crate::testsuite::$name(store).await;
            }
        )*
    };
}

/// A [`Memory`] over `store` and a new workspace in it.
pub async fn memory_with_workspace(
    store: Arc<dyn MemoryStore>,
    name: &str,
) -> (Memory, WorkspaceId) {
    let memory = Memory::new(store);
    let workspace = memory.create_workspace(name).await.unwrap();
    (memory, workspace.id)
}

/// Enables every perspective of `workspace` (a new one starts with `general` alone), for
/// tests about how several perspectives are indexed side by side.
pub async fn enable_every_perspective(memory: &Memory, workspace: WorkspaceId) {
    for perspective in memory.perspectives(workspace).await.unwrap() {
        let enabled = crate::perspectives::Perspective {
            enabled: true,
            ..perspective
        };
        memory.set_perspective(workspace, &enabled).await.unwrap();
    }
}

/// [`memory_with_workspace`] with every perspective enabled ([`enable_every_perspective`]).
pub async fn memory_with_every_perspective(
    store: Arc<dyn MemoryStore>,
    name: &str,
) -> (Memory, WorkspaceId) {
    let (memory, workspace) = memory_with_workspace(store, name).await;
    enable_every_perspective(&memory, workspace).await;
    (memory, workspace)
}

/// Asserts that a call which started at `started` gave up on a held lock within its time
/// limit, well under 3 s, as [`Error::Unavailable`] saying so: `result` is the call's.
pub fn assert_gave_up_in_time<T: std::fmt::Debug>(
    started: std::time::Instant,
    result: crate::Result<T>,
) {
    let elapsed = started.elapsed();
    assert!(elapsed < std::time::Duration::from_secs(3), "{elapsed:?}");
    let error = result.unwrap_err();
    assert!(matches!(error, crate::Error::Unavailable(_)), "{error}");
    assert!(error.to_string().contains("time limit"), "{error}");
}

/// A node to create with a type and observations.
pub fn entity(name: &str, entity_type: &str, observations: &[&str]) -> NewNode {
    NewNode {
        name: name.into(),
        entity_type: entity_type.into(),
        observations: facts(observations),
        ..NewNode::default()
    }
}

/// Observations to add to one node.
pub fn additions(entity_name: &str, contents: &[&str]) -> ObservationAdditions {
    ObservationAdditions {
        entity_name: entity_name.into(),
        contents: facts(contents),
    }
}

/// A relation `from -[relation_type]-> to`.
pub fn relation(from: &str, relation_type: &str, to: &str) -> RelationSpec {
    RelationSpec::new(from, to, relation_type)
}

/// Ordinals to delete from one node.
pub fn deletions(entity_name: &str, ordinals: &[i64]) -> ObservationDeletions {
    ObservationDeletions {
        entity_name: entity_name.into(),
        ordinals: ordinals.iter().copied().map(crate::Ordinal).collect(),
        contents: Vec::new(),
    }
}

/// The relation `from -[relation_type]-> to` as reads return it.
pub fn edge(from: &str, relation_type: &str, to: &str) -> Relation {
    Relation::new(from, to, relation_type)
}

/// Observations given as `(ordinal, content)`.
pub fn observations(items: &[(i64, &str)]) -> Vec<Observation> {
    items
        .iter()
        .map(|(ordinal, content)| Observation::new(crate::Ordinal(*ordinal), *content))
        .collect()
}

/// `facts` as `open_nodes` read them, each of which must carry its `valid_from`, without it:
/// comparable with what a write answers and with [`observations`].
#[track_caller]
pub fn undated(facts: &[Observation]) -> Vec<Observation> {
    (facts.iter())
        .map(|fact| {
            assert!(
                fact.valid_from.is_some(),
                "a fact read without valid_from: {fact:?}"
            );
            Observation {
                valid_from: None,
                ..fact.clone()
            }
        })
        .collect()
}

/// Plain facts, current from now.
pub fn facts<T: AsRef<str>>(values: &[T]) -> Vec<crate::NewFact> {
    values.iter().map(|v| v.as_ref().into()).collect()
}

/// Owned strings.
pub fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// Creates nodes of type `thing` with no observations.
pub async fn create_nodes(memory: &Memory, workspace: WorkspaceId, names: &[&str]) {
    let entities = names.iter().map(|n| entity(n, "thing", &[])).collect();
    memory
        .call(workspace, CreateEntities::new(entities))
        .await
        .unwrap();
}

/// Creates relations given as `(from, type, to)`.
pub async fn create_relations(
    memory: &Memory,
    workspace: WorkspaceId,
    relations: &[(&str, &str, &str)],
) {
    let specs: Vec<RelationSpec> = relations
        .iter()
        .map(|(from, kind, to)| relation(from, kind, to))
        .collect();
    let created = memory
        .call(workspace, CreateRelations::new(&specs))
        .await
        .unwrap();
    assert_eq!(created.created.len(), specs.len(), "{created:?}");
}

/// One node as `open_nodes` returns it; panics when it does not exist.
pub async fn open_node(memory: &Memory, workspace: WorkspaceId, name: &str) -> NodeDetail {
    let mut opened = memory
        .call(workspace, OpenNodes::new(&strings(&[name])))
        .await
        .unwrap();
    assert_eq!(opened.entities.len(), 1, "{name} not found: {opened:?}");
    opened.entities.remove(0)
}

/// The workspace's `(node_count, observation_count, relation_count)`.
pub async fn counts(memory: &Memory, workspace: WorkspaceId) -> (i64, i64, i64) {
    let stats = memory.call(workspace, GetStats {}).await.unwrap();
    (
        stats.node_count,
        stats.observation_count,
        stats.relation_count,
    )
}

/// The workspace's `(creates, updates, deletes)` events since `since`.
pub async fn events_since(
    memory: &Memory,
    workspace: WorkspaceId,
    since: Timestamp,
) -> (i64, i64, i64) {
    let events = memory
        .store()
        .event_counts(CountEvents { workspace, since })
        .await
        .unwrap();
    assert_eq!(events.since, since);
    (events.creates, events.updates, events.deletes)
}

/// The workspace's `(creates, updates, deletes)` events of all time.
pub async fn events(memory: &Memory, workspace: WorkspaceId) -> (i64, i64, i64) {
    events_since(memory, workspace, Timestamp::UNIX_EPOCH).await
}

/// Waits long enough that the next transaction's `now()` is strictly later.
pub async fn tick() {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
}
