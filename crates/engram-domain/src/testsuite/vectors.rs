//! What a store does with vectors, on hand-made ones saved straight through
//! [`crate::IndexStore::save_embeddings`]: the indexer's queue and its state, vector search by
//! workspace, model, perspective and node, several dimensions, node aggregates, and vectors
//! going with what they were made from.

use crate::store::{ModelEmbeddings, SaveEmbeddings, VectorSearch};
use std::sync::Arc;

use super::*;
use crate::GetStats;
use crate::perspectives::{Perspective, render_document};
use crate::{DeleteWorkspace, GetNodeVectors, PendingEmbeddings};
use crate::{EmbeddingRecord, EmbeddingTask, MemoryStore, PendingCursor, WorkspaceId, text_hash};

/// Saves a hand-made vector for every pending task of `model` for which `vector` gives one.
pub(super) async fn save_vectors(
    store: &Arc<dyn MemoryStore>,
    model: &str,
    vector: impl Fn(&EmbeddingTask) -> Option<Vec<f32>>,
) -> usize {
    let tasks = pending(store, model, 1_000, None).await;
    let records: Vec<EmbeddingRecord> = tasks
        .iter()
        .filter_map(|task| {
            let text = render_document(&task.document_template, &task.context);
            Some(EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: text_hash(&text),
                source_updated_at: task.source_updated_at,
                vector: Some(vector(task)?),
                token_signs: None,
            })
        })
        .collect();
    store
        .save_embeddings(SaveEmbeddings {
            model,
            records: &records,
        })
        .await
        .unwrap();
    records.len()
}

/// The id of the workspace's perspective `name`.
async fn perspective(store: &Arc<dyn MemoryStore>, ws: WorkspaceId, name: &str) -> Perspective {
    store
        .perspectives(ws)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
}

/// `(node, ordinal, score rounded to 3 places)` of each hit.
fn hits(found: &[crate::ObservationHit]) -> Vec<(String, i64, i64)> {
    found
        .iter()
        .map(|h| {
            (
                h.name.clone(),
                h.ordinal.0,
                (h.score * 1000.0).round() as i64,
            )
        })
        .collect()
}

fn hit(name: &str, ordinal: i64, score: i64) -> (String, i64, i64) {
    (name.to_owned(), ordinal, score)
}

/// A unit vector along axis `i` of `dims`.
fn axis(i: usize, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    v[i] = 1.0;
    v
}

pub async fn vector_search_keeps_to_its_workspace_model_perspective_and_node(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, one) = memory_with_every_perspective(store.clone(), "one").await;
    let two = memory.create_workspace("two").await.unwrap().id;
    enable_every_perspective(&memory, two).await;
    for (ws, prefix) in [(one, ""), (two, "two ")] {
        let content = |text: &str| format!("{prefix}{text}");
        let a = entity("A", "thing", &[&content("x"), &content("y")]);
        let b = entity("B", "thing", &[&content("x-ish")]);
        memory
            .call(ws, CreateEntities::new(vec![a, b]))
            .await
            .unwrap();
    }
    // Model m: "x" along axis 0, "y" along axis 1, "x-ish" between them but nearer 0; in
    // workspace two everything points along axis 2. Model n: everything along axis 0.
    let saved = save_vectors(&store, "m", |task| {
        Some(match task.context.content.as_str() {
            "x" => axis(0, 3),
            "y" => axis(1, 3),
            "x-ish" => vec![0.8, 0.6, 0.0],
            _ => axis(2, 3),
        })
    })
    .await;
    assert_eq!(saved, 30);
    assert_eq!(save_vectors(&store, "n", |_| Some(axis(0, 3))).await, 30);
    let general = perspective(&store, one, "general").await.id;
    let search = async |ws, model: &str, perspective, k, within| {
        hits(
            &store
                .vector_search(VectorSearch {
                    workspace: ws,
                    model,
                    perspective,
                    vector: &axis(0, 3),
                    k,
                    within,
                })
                .await
                .unwrap(),
        )
    };

    assert_eq!(
        search(one, "m", general, 10, None).await,
        [hit("A", 1, 1000), hit("B", 1, 800), hit("A", 2, 0)]
    );
    assert_eq!(
        search(one, "m", general, 2, None).await,
        [hit("A", 1, 1000), hit("B", 1, 800)]
    );
    assert_eq!(
        search(one, "m", general, 10, Some("B")).await,
        [hit("B", 1, 800)]
    );
    assert_eq!(
        search(one, "m", general, 1, Some("A")).await,
        [hit("A", 1, 1000)]
    );
    assert!(
        search(one, "m", general, 10, Some("Ghost"))
            .await
            .is_empty()
    );
    assert_eq!(
        search(
            two,
            "m",
            perspective(&store, two, "general").await.id,
            10,
            None
        )
        .await,
        [hit("A", 1, 0), hit("A", 2, 0), hit("B", 1, 0)]
    );
    // Another perspective's vectors, another model's, and vectors of another dimension.
    let other_perspective = perspective(&store, two, "general").await.id;
    assert!(
        search(one, "m", other_perspective, 10, None)
            .await
            .is_empty()
    );
    assert_eq!(search(one, "n", general, 10, None).await.len(), 3);
    assert!(search(one, "unknown", general, 10, None).await.is_empty());
    let wider = store
        .vector_search(VectorSearch {
            workspace: one,
            model: "m",
            perspective: general,
            vector: &axis(0, 4),
            k: 10,
            within: None,
        })
        .await
        .unwrap();
    assert!(wider.is_empty());
}

pub async fn vectors_of_several_dimensions_live_side_by_side(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_every_perspective(store.clone(), "dims").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("A", "thing", &["a1", "a2"])]),
        )
        .await
        .unwrap();
    let ordinal_axis = |task: &EmbeddingTask, dims| axis(task.context.ordinal.0 as usize, dims);
    assert_eq!(
        save_vectors(&store, "three", |t| Some(ordinal_axis(t, 3))).await,
        10
    );
    assert_eq!(
        save_vectors(&store, "five", |t| Some(ordinal_axis(t, 5))).await,
        10
    );
    let general = perspective(&store, ws, "general").await.id;
    for (model, dims) in [("three", 3), ("five", 5)] {
        let found = store
            .vector_search(VectorSearch {
                workspace: ws,
                model,
                perspective: general,
                vector: &axis(2, dims),
                k: 10,
                within: None,
            })
            .await
            .unwrap();
        assert_eq!(hits(&found), [hit("A", 2, 1000), hit("A", 1, 0)], "{model}");
        let node = store
            .node_vectors(GetNodeVectors {
                workspace: ws,
                model,
                perspective: general,
            })
            .await
            .unwrap();
        assert_eq!(node.len(), 1);
        assert_eq!(node[0].vector.len(), dims);
    }
    assert_eq!(coverage_of(&store, ws, "three").await, 1.0);
    assert_eq!(coverage_of(&store, ws, "five").await, 1.0);
}

/// Up to `limit` pending pairs of `model`, from `cursor` on (`None`: from the first workspace's
/// first observation).
async fn pending(
    store: &Arc<dyn MemoryStore>,
    model: &str,
    limit: usize,
    cursor: Option<&PendingCursor>,
) -> Vec<EmbeddingTask> {
    let start = PendingCursor::default();
    let cursor = cursor.unwrap_or(&start);
    let request = PendingEmbeddings {
        model,
        limit,
        cursor,
    };
    store.pending_embeddings(request).await.unwrap()
}

async fn coverage_of(store: &Arc<dyn MemoryStore>, ws: WorkspaceId, model: &str) -> f64 {
    store
        .embedding_coverage(ModelEmbeddings {
            workspace: ws,
            model,
        })
        .await
        .unwrap()
}

pub async fn node_vectors_are_the_mean_of_their_observation_vectors(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_every_perspective(store.clone(), "means").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("B", "kind_b", &["b1", "b2"]),
                entity("A", "kind_a", &["a1"]),
                entity("Empty", "thing", &[]),
            ]),
        )
        .await
        .unwrap();
    let by_ordinal = |task: &EmbeddingTask| Some(axis(task.context.ordinal.0 as usize - 1, 2));
    save_vectors(&store, "m", by_ordinal).await;
    let general = perspective(&store, ws, "general").await.id;
    let vectors = |store: Arc<dyn MemoryStore>| async move {
        store
            .node_vectors(GetNodeVectors {
                workspace: ws,
                model: "m",
                perspective: general,
            })
            .await
            .unwrap()
            .into_iter()
            .map(|n| (n.name, n.entity_type, n.vector))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        vectors(store.clone()).await,
        [
            ("A".to_owned(), "kind_a".to_owned(), vec![1.0, 0.0]),
            ("B".to_owned(), "kind_b".to_owned(), vec![0.5, 0.5])
        ]
    );

    // B loses an observation: its other one is re-indexed (its text is unchanged, so no new
    // vector), and its mean follows. A loses its only one: its aggregate goes with it.
    memory
        .call(
            ws,
            DeleteObservations::new(&[deletions("B", &[1]), deletions("A", &[1])]),
        )
        .await
        .unwrap();
    assert_eq!(
        vectors(store.clone()).await,
        [("B".to_owned(), "kind_b".to_owned(), vec![0.5, 0.5])]
    );
    let tasks = pending(&store, "m", 100, None).await;
    assert_eq!(tasks.len(), 5);
    let unchanged: Vec<EmbeddingRecord> = tasks
        .iter()
        .map(|task| {
            let text = render_document(&task.document_template, &task.context);
            assert_eq!(
                task.stored_hash.as_deref(),
                Some(text_hash(&text).as_slice())
            );
            EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: text_hash(&text),
                source_updated_at: task.source_updated_at,
                vector: None,
                token_signs: None,
            }
        })
        .collect();
    store
        .save_embeddings(SaveEmbeddings {
            model: "m",
            records: &unchanged,
        })
        .await
        .unwrap();
    assert!(pending(&store, "m", 100, None).await.is_empty());
    assert_eq!(
        vectors(store.clone()).await,
        [("B".to_owned(), "kind_b".to_owned(), vec![0.0, 1.0])]
    );
    assert_eq!(coverage_of(&store, ws, "m").await, 1.0);
}

pub async fn deleted_things_take_their_vectors_with_them(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_every_perspective(store.clone(), "gone").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("A", "thing", &["a1", "a2"]),
                entity("B", "thing", &["b1"]),
            ]),
        )
        .await
        .unwrap();
    save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await;
    let general = perspective(&store, ws, "general").await.id;
    let found = async || {
        let found = store
            .vector_search(VectorSearch {
                workspace: ws,
                model: "m",
                perspective: general,
                vector: &[1.0, 0.0],
                k: 10,
                within: None,
            })
            .await
            .unwrap();
        let mut found: Vec<(String, i64)> =
            found.into_iter().map(|h| (h.name, h.ordinal.0)).collect();
        found.sort();
        found
    };
    assert_eq!(
        found().await,
        [("A".into(), 1), ("A".into(), 2), ("B".into(), 1)]
    );
    memory
        .call(ws, DeleteObservations::new(&[deletions("A", &[2])]))
        .await
        .unwrap();
    assert_eq!(found().await, [("A".into(), 1), ("B".into(), 1)]);
    memory
        .call(ws, DeleteEntities::new(&strings(&["B"])))
        .await
        .unwrap();
    assert_eq!(found().await, [("A".into(), 1)]);

    // A's remaining observation: 5 perspectives; clearing drops them and makes them pending.
    assert_eq!(
        store
            .clear_embeddings(ModelEmbeddings {
                workspace: ws,
                model: "other"
            })
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .clear_embeddings(ModelEmbeddings {
                workspace: ws,
                model: "m"
            })
            .await
            .unwrap(),
        5
    );
    assert!(found().await.is_empty());
    assert!(
        store
            .node_vectors(GetNodeVectors {
                workspace: ws,
                model: "m",
                perspective: general
            })
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(pending(&store, "m", 100, None).await.len(), 5);
    assert_eq!(coverage_of(&store, ws, "m").await, 0.0);

    // Deleting the workspace deletes its vectors with it: a new one starts empty.
    save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await;
    memory
        .delete_workspace(DeleteWorkspace::new("gone", true))
        .await
        .unwrap();
    assert!(pending(&store, "m", 100, None).await.is_empty());
    let (memory, ws) = memory_with_every_perspective(store.clone(), "gone").await;
    memory
        .call(ws, CreateEntities::new(vec![entity("A", "thing", &["a1"])]))
        .await
        .unwrap();
    let general = perspective(&store, ws, "general").await.id;
    assert!(
        store
            .vector_search(VectorSearch {
                workspace: ws,
                model: "m",
                perspective: general,
                vector: &[1.0, 0.0],
                k: 10,
                within: None
            })
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn a_changed_template_drops_its_perspectives_vectors(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_every_perspective(store.clone(), "views").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("A", "thing", &["a1", "a2"])]),
        )
        .await
        .unwrap();
    assert_eq!(
        save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await,
        10
    );
    let general = perspective(&store, ws, "general").await;

    // Disabling keeps the vectors but takes the perspective out of indexing and coverage.
    let disabled = Perspective {
        enabled: false,
        ..general.clone()
    };
    memory.set_perspective(ws, &disabled).await.unwrap();
    assert_eq!(store.embedding_pairs(ws).await.unwrap(), 8);
    assert_eq!(coverage_of(&store, ws, "m").await, 1.0);
    memory.set_perspective(ws, &general).await.unwrap();
    assert_eq!(store.embedding_pairs(ws).await.unwrap(), 10);
    assert!(pending(&store, "m", 100, None).await.is_empty());

    // A new document template makes the perspective's vectors go.
    let shouting = Perspective {
        document_template: "{name}! {observation}!".into(),
        ..general.clone()
    };
    let stored = memory.set_perspective(ws, &shouting).await.unwrap();
    assert_eq!(stored.id, general.id);
    let pending = pending(&store, "m", 100, None).await;
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|t| t.perspective_id == general.id
        && t.document_template == "{name}! {observation}!"
        && t.stored_hash.is_none()));
    assert_eq!(coverage_of(&store, ws, "m").await, 0.8);
    assert!(
        store
            .vector_search(VectorSearch {
                workspace: ws,
                model: "m",
                perspective: general.id,
                vector: &[1.0, 0.0],
                k: 10,
                within: None
            })
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn the_change_marker_moves_on_writes_only(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_every_perspective(store.clone(), "marks").await;
    let start = store.change_marker().await.unwrap();
    memory
        .call(ws, CreateEntities::new(vec![entity("A", "thing", &["a1"])]))
        .await
        .unwrap();
    let created = store.change_marker().await.unwrap();
    assert_ne!(created, start);
    memory
        .call(ws, OpenNodes::new(&strings(&["A"])))
        .await
        .unwrap();
    memory.call(ws, GetStats {}).await.unwrap();
    assert_eq!(store.change_marker().await.unwrap(), created);
    memory
        .call(ws, SetTags::new("A", &strings(&["t"])))
        .await
        .unwrap();
    assert_ne!(store.change_marker().await.unwrap(), created);
}

/// The indexer's queue serves workspaces in turn: a batch starts with the workspace after the
/// one served first last time (wrapping around), so a backlog in one never keeps another
/// waiting for more than a batch; within a workspace it reads on from where the last batch
/// stopped, then from the start up to there.
pub async fn pending_pairs_come_workspace_by_workspace_in_turn(store: Arc<dyn MemoryStore>) {
    let (memory, busy) = memory_with_workspace(store.clone(), "busy").await;
    let quiet = memory.create_workspace("quiet").await.unwrap().id;
    let texts: Vec<String> = (0..20).map(|i| format!("backlog {i}")).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    (memory.call(
        busy,
        CreateEntities::new(vec![entity("Big", "thing", &texts)]),
    ))
    .await
    .unwrap();
    (memory.call(
        quiet,
        CreateEntities::new(vec![entity("Small", "thing", &["one text"])]),
    ))
    .await
    .unwrap();
    let workspaces = |tasks: &[EmbeddingTask]| -> Vec<WorkspaceId> {
        tasks.iter().map(|t| t.workspace).collect()
    };
    let contents = |tasks: &[EmbeddingTask]| -> Vec<String> {
        tasks.iter().map(|t| t.context.content.clone()).collect()
    };
    // From the start: the first workspace first, in observation order, the batch filled
    // from the next.
    let mut cursor = PendingCursor::default();
    let first = pending(&store, "m", 21, Some(&cursor)).await;
    assert_eq!(first.len(), 21);
    assert_eq!(&workspaces(&first)[..20], [busy; 20]);
    assert_eq!(first[20].workspace, quiet);
    assert_eq!(
        contents(&first)[..3],
        ["backlog 0", "backlog 1", "backlog 2"]
    );
    // Having served `busy` first (its first three observations), `quiet` comes first, then
    // `busy` from its third observation on (read again: the batch may have cut it).
    cursor.advance(&first[..3]);
    let next = pending(&store, "m", 4, Some(&cursor)).await;
    assert_eq!(workspaces(&next), [quiet, busy, busy, busy]);
    assert_eq!(
        contents(&next)[1..],
        ["backlog 2", "backlog 3", "backlog 4"]
    );
    // Past the last observation, around to the first.
    cursor.advance(&first[..20]);
    cursor.served_first = Some(quiet);
    let around = pending(&store, "m", 2, Some(&cursor)).await;
    assert_eq!(contents(&around), ["backlog 19", "backlog 0"]);
}
