//! What each tool costs in store calls, checked by machine: a store wrapper that records
//! every call it forwards ([`CountingStore`]). Every store call is one transaction in both
//! stores, so a tool's list is its transactions. A write tool is one call; the reads and
//! reads that need more (the perspectives before a workspace's first search, the coverage
//! behind `get_stats`, the report's lists) are pinned here, so a change that adds a round trip is seen.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;
use crate::perspectives::Perspective;
use crate::search::{CandidateQuery, Gathered};
use crate::transfer::*;
use crate::*;

/// A store that records the name of every call it forwards to `inner`, in order.
pub struct CountingStore<S: ?Sized> {
    calls: Mutex<Vec<&'static str>>,
    inner: Arc<S>,
}

impl<S: ?Sized> CountingStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: Arc<S>) -> Self {
        Self {
            calls: Mutex::new(Vec::new()),
            inner,
        }
    }

    fn count(&self, call: &'static str) {
        self.calls.lock().unwrap().push(call);
    }

    /// The calls recorded since the last `take`.
    pub fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> WorkspaceStore for CountingStore<S> {
    async fn schema_current(&self) -> Result<bool> {
        self.count("schema_current");
        self.inner.schema_current().await
    }

    async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        self.count("create_workspace");
        self.inner.create_workspace(name).await
    }

    async fn workspace(&self, name: &str) -> Result<Workspace> {
        self.count("workspace");
        self.inner.workspace(name).await
    }

    async fn list_workspaces(&self) -> Result<Vec<WorkspaceInfo>> {
        self.count("list_workspaces");
        self.inner.list_workspaces().await
    }

    async fn rename_workspace(&self, name: &str, new_name: &str) -> Result<Workspace> {
        self.count("rename_workspace");
        self.inner.rename_workspace(name, new_name).await
    }

    async fn delete_workspace(&self, name: &str, force: bool) -> Result<()> {
        self.count("delete_workspace");
        self.inner.delete_workspace(name, force).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> NodeStore for CountingStore<S> {
    async fn create_entities(&self, request: CreateEntities<'_>) -> Result<Vec<CreatedNode>> {
        self.count("create_entities");
        self.inner.create_entities(request).await
    }

    async fn delete_entities(&self, request: DeleteEntities<'_>) -> Result<DeletedNodes> {
        self.count("delete_entities");
        self.inner.delete_entities(request).await
    }

    async fn open_nodes(&self, request: OpenNodes<'_>) -> Result<OpenedNodes> {
        self.count("open_nodes");
        self.inner.open_nodes(request).await
    }

    async fn get_nodes_by_type(&self, request: GetNodesByType<'_>) -> Result<Vec<TypedNode>> {
        self.count("get_nodes_by_type");
        self.inner.get_nodes_by_type(request).await
    }

    async fn get_recently_modified(&self, request: GetRecentlyModified) -> Result<Vec<NodeBrief>> {
        self.count("get_recently_modified");
        self.inner.get_recently_modified(request).await
    }

    async fn set_summary(&self, request: SetSummary<'_>) -> Result<SummaryUpdate> {
        self.count("set_summary");
        self.inner.set_summary(request).await
    }

    async fn set_tags(&self, request: SetTags<'_>) -> Result<TagsUpdate> {
        self.count("set_tags");
        self.inner.set_tags(request).await
    }

    async fn get_orphaned_nodes(&self, workspace: WorkspaceId) -> Result<Vec<NodeBrief>> {
        self.count("get_orphaned_nodes");
        self.inner.get_orphaned_nodes(workspace).await
    }

    async fn get_pending_consolidation(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<PendingConsolidation>> {
        self.count("get_pending_consolidation");
        self.inner.get_pending_consolidation(workspace).await
    }

    async fn get_stats(&self, workspace: WorkspaceId) -> Result<Stats> {
        self.count("get_stats");
        self.inner.get_stats(workspace).await
    }

    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>> {
        self.count("similar_names");
        self.inner.similar_names(request).await
    }

    async fn event_counts(&self, workspace: WorkspaceId, since: Timestamp) -> Result<EventCounts> {
        self.count("event_counts");
        self.inner.event_counts(workspace, since).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> ObservationStore for CountingStore<S> {
    async fn add_observations(
        &self,
        request: AddObservations<'_>,
    ) -> Result<Vec<AddedObservations>> {
        self.count("add_observations");
        self.inner.add_observations(request).await
    }

    async fn replace_observation(
        &self,
        request: ReplaceObservation<'_>,
    ) -> Result<ReplacedObservation> {
        self.count("replace_observation");
        self.inner.replace_observation(request).await
    }

    async fn delete_observations(
        &self,
        request: DeleteObservations<'_>,
    ) -> Result<Vec<DeletedObservations>> {
        self.count("delete_observations");
        self.inner.delete_observations(request).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> RelationStore for CountingStore<S> {
    async fn create_relations(&self, request: CreateRelations<'_>) -> Result<CreatedRelations> {
        self.count("create_relations");
        self.inner.create_relations(request).await
    }

    async fn delete_relations(&self, request: DeleteRelations<'_>) -> Result<DeletedRelations> {
        self.count("delete_relations");
        self.inner.delete_relations(request).await
    }

    async fn rename_relation_type(&self, request: RenameRelationType<'_>) -> Result<RelationSpec> {
        self.count("rename_relation_type");
        self.inner.rename_relation_type(request).await
    }

    async fn get_relations_between(
        &self,
        request: GetRelationsBetween<'_>,
    ) -> Result<Vec<Relation>> {
        self.count("get_relations_between");
        self.inner.get_relations_between(request).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> GraphStore for CountingStore<S> {
    async fn get_neighborhood(&self, request: GetNeighborhood<'_>) -> Result<Neighborhood> {
        self.count("get_neighborhood");
        self.inner.get_neighborhood(request).await
    }

    async fn get_path(&self, request: GetPath<'_>) -> Result<GraphPath> {
        self.count("get_path");
        self.inner.get_path(request).await
    }

    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        self.count("find_unlinked_references");
        self.inner.find_unlinked_references(workspace).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> TokenStore for CountingStore<S> {
    async fn create_token(&self, token: &auth::NewToken) -> Result<auth::TokenInfo> {
        self.count("create_token");
        self.inner.create_token(token).await
    }

    async fn tokens(&self, workspace: Option<WorkspaceId>) -> Result<Vec<auth::TokenInfo>> {
        self.count("tokens");
        self.inner.tokens(workspace).await
    }

    async fn token(&self, id: &str) -> Result<Option<(auth::TokenInfo, Vec<u8>)>> {
        self.count("token");
        self.inner.token(id).await
    }

    async fn revoke_token(&self, id: &str) -> Result<()> {
        self.count("revoke_token");
        self.inner.revoke_token(id).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> TransferStore for CountingStore<S> {
    async fn graph_page(&self, request: ReadGraph<'_>) -> Result<GraphPage> {
        self.count("graph_page");
        self.inner.graph_page(request).await
    }

    async fn import(&self, request: ImportBatch<'_>) -> Result<ImportOutcome> {
        self.count("import");
        self.inner.import(request).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> IndexStore for CountingStore<S> {
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>> {
        self.count("perspectives");
        self.inner.perspectives(workspace).await
    }

    async fn set_perspective(&self, request: SetPerspective<'_>) -> Result<Perspective> {
        self.count("set_perspective");
        self.inner.set_perspective(request).await
    }

    async fn pending_embeddings(
        &self,
        request: PendingEmbeddings<'_>,
    ) -> Result<Vec<EmbeddingTask>> {
        self.count("pending_embeddings");
        self.inner.pending_embeddings(request).await
    }

    async fn save_embeddings(&self, model: &str, records: &[EmbeddingRecord]) -> Result<()> {
        self.count("save_embeddings");
        self.inner.save_embeddings(model, records).await
    }

    async fn node_vectors(&self, request: GetNodeVectors<'_>) -> Result<Vec<NodeVector>> {
        self.count("node_vectors");
        self.inner.node_vectors(request).await
    }

    async fn embedding_coverage(&self, workspace: WorkspaceId, model: &str) -> Result<f64> {
        self.count("embedding_coverage");
        self.inner.embedding_coverage(workspace, model).await
    }

    async fn change_marker(&self) -> Result<i64> {
        self.count("change_marker");
        self.inner.change_marker().await
    }

    async fn clear_embeddings(&self, workspace: WorkspaceId, model: &str) -> Result<u64> {
        self.count("clear_embeddings");
        self.inner.clear_embeddings(workspace, model).await
    }

    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64> {
        self.count("embedding_pairs");
        self.inner.embedding_pairs(workspace).await
    }
}

#[async_trait]
impl<S: MemoryStore + ?Sized> SearchStore for CountingStore<S> {
    async fn search(&self, workspace: WorkspaceId, query: &CandidateQuery) -> Result<Gathered> {
        self.count("search");
        self.inner.search(workspace, query).await
    }

    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>> {
        self.count("related_pairs");
        self.inner.related_pairs(workspace).await
    }
}

/// Every tool through [`Memory`], with the store calls (transactions) it makes: one for each
/// write; reads as pinned.
pub async fn every_tool_makes_the_store_calls_it_is_known_to(store: Arc<dyn MemoryStore>) {
    let counting = Arc::new(CountingStore::new(store));
    let memory = Memory::new(counting.clone()).with_embedder(Arc::new(TermEmbedder));
    let ws = memory.create_workspace("calls").await.unwrap().id;
    let nodes = vec![
        entity("Alice", "person", &["Alice works on engram"]),
        entity("engram", "project", &["engram is a memory server"]),
    ];
    let mut seen: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut note = |tool, calls| seen.push((tool, calls));
    counting.take();
    memory.create_entities(ws, nodes).await.unwrap();
    note("create_entities", counting.take());
    (memory.add_observations(ws, &[additions("Alice", &["Alice lives in Lisbon"])]))
        .await
        .unwrap();
    note("add_observations", counting.take());
    (memory.replace_observation(ws, "Alice", Ordinal(2), "Alice lives in Porto"))
        .await
        .unwrap();
    note("replace_observation", counting.take());
    (memory.create_relations(ws, &[relation("Alice", "works_on", "engram")]))
        .await
        .unwrap();
    note("create_relations", counting.take());
    memory
        .set_summary(ws, "Alice", "An engineer.")
        .await
        .unwrap();
    note("set_summary", counting.take());
    memory
        .set_tags(ws, "Alice", &strings(&["team"]))
        .await
        .unwrap();
    note("set_tags", counting.take());
    (memory.rename_relation_type(ws, &relation("Alice", "works_on", "engram"), "builds"))
        .await
        .unwrap();
    note("rename_relation_type", counting.take());
    memory.open_nodes(ws, &strings(&["Alice"])).await.unwrap();
    note("open_nodes", counting.take());
    memory.get_nodes_by_type(ws, "person").await.unwrap();
    note("get_nodes_by_type", counting.take());
    memory.get_recently_modified(ws, 7, 10).await.unwrap();
    note("get_recently_modified", counting.take());
    memory
        .get_relations_between(ws, "Alice", "engram")
        .await
        .unwrap();
    note("get_relations_between", counting.take());
    memory.get_neighborhood(ws, "Alice", 2).await.unwrap();
    note("get_neighborhood", counting.take());
    memory.get_path(ws, "Alice", "engram").await.unwrap();
    note("get_path", counting.take());
    memory.get_orphaned_nodes(ws).await.unwrap();
    note("get_orphaned_nodes", counting.take());
    memory.find_unlinked_references(ws).await.unwrap();
    note("find_unlinked_references", counting.take());
    memory.get_pending_consolidation(ws).await.unwrap();
    note("get_pending_consolidation", counting.take());
    memory.get_stats(ws).await.unwrap();
    note("get_stats", counting.take());
    let hybrid = SearchMode::Hybrid;
    (memory.search_nodes(ws, &SearchNodes::new("Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("search_nodes", counting.take());
    (memory.search_nodes(ws, &SearchNodes::new("Lisbon").mode(SearchMode::Text)))
        .await
        .unwrap();
    note("search_nodes text", counting.take());
    (memory.search_observations(ws, &SearchObservations::new("Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("search_observations", counting.take());
    (memory.query_observations(ws, &QueryObservations::new("Alice", "Lisbon").mode(hybrid)))
        .await
        .unwrap();
    note("query_observations", counting.take());
    memory
        .find_similar_nodes(
            ws,
            FindSimilarNodes {
                limit: 10,
                min_score: 0.75,
            },
        )
        .await
        .unwrap();
    note("find_similar_nodes", counting.take());
    (memory.get_consolidation_report(ws, ReportOptions::default()))
        .await
        .unwrap();
    note("get_consolidation_report", counting.take());
    (memory.read_graph(ws, None, 50, None, GraphDetail::Full))
        .await
        .unwrap();
    note("read_graph", counting.take());
    memory.brief(ws, 5).await.unwrap();
    note("brief", counting.take());
    (memory.delete_relations(ws, &[relation("Alice", "builds", "engram")]))
        .await
        .unwrap();
    note("delete_relations", counting.take());
    memory
        .delete_observations(ws, &[deletions("Alice", &[1])])
        .await
        .unwrap();
    note("delete_observations", counting.take());
    memory
        .delete_entities(ws, &strings(&["engram"]))
        .await
        .unwrap();
    note("delete_entities", counting.take());

    let expected: Vec<(&str, Vec<&str>)> = EXPECTED_CALLS
        .iter()
        .map(|(tool, calls)| (*tool, calls.to_vec()))
        .collect();
    assert_eq!(seen, expected);
}

/// The store calls of each tool in [`every_tool_makes_the_store_calls_it_is_known_to`].
const EXPECTED_CALLS: &[(&str, &[&str])] = &[
    ("create_entities", &["create_entities"]),
    ("add_observations", &["add_observations"]),
    ("replace_observation", &["replace_observation"]),
    ("create_relations", &["create_relations"]),
    ("set_summary", &["set_summary"]),
    ("set_tags", &["set_tags"]),
    ("rename_relation_type", &["rename_relation_type"]),
    ("open_nodes", &["open_nodes"]),
    ("get_nodes_by_type", &["get_nodes_by_type"]),
    ("get_recently_modified", &["get_recently_modified"]),
    ("get_relations_between", &["get_relations_between"]),
    ("get_neighborhood", &["get_neighborhood"]),
    ("get_path", &["get_path"]),
    ("get_orphaned_nodes", &["get_orphaned_nodes"]),
    ("find_unlinked_references", &["find_unlinked_references"]),
    ("get_pending_consolidation", &["get_pending_consolidation"]),
    // The counts, then the embedding coverage (reused while an indexer works).
    ("get_stats", &["get_stats", "embedding_coverage"]),
    // The first search of a workspace reads the perspectives to render its query for; every
    // search is then one store call, whose snapshot holds the perspectives again (a change
    // made elsewhere is seen: `a_perspective_changed_elsewhere_is_seen_by_the_next_search`).
    ("search_nodes", &["perspectives", "search"]),
    ("search_nodes text", &["search"]),
    ("search_observations", &["search"]),
    // The node must exist (a missing one is an error, not an empty answer).
    ("query_observations", &["open_nodes", "search"]),
    (
        "find_similar_nodes",
        &["perspectives", "node_vectors", "related_pairs"],
    ),
    (
        "get_consolidation_report",
        &[
            "get_pending_consolidation",
            "get_orphaned_nodes",
            "event_counts",
            "perspectives",
            "node_vectors",
            "related_pairs",
            "embedding_coverage",
            "open_nodes",
        ],
    ),
    ("read_graph", &["graph_page"]),
    (
        "brief",
        &[
            "get_stats",
            "related_pairs",
            "open_nodes",
            "get_recently_modified",
        ],
    ),
    ("delete_relations", &["delete_relations"]),
    ("delete_observations", &["delete_observations"]),
    ("delete_entities", &["delete_entities"]),
];
