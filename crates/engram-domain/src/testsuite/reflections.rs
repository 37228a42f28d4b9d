use std::sync::Arc;

use super::*;
use crate::{
    AddReflection, DeleteEntities, Error, GetHistory, HistoryOperation, Indexer, Memory,
    MemoryStore, MergeEntities, ReflectionRecord, ReflectionTarget, SearchReflections, WorkspaceId,
};

/// Ada (a person who writes the compiler) knows Bo; the memory embeds with [`TermEmbedder`].
async fn team(store: Arc<dyn MemoryStore>) -> (Memory, Indexer, WorkspaceId) {
    let (memory, ws) = memory_with_workspace(store.clone(), "team").await;
    let memory = memory.with_embedder(Arc::new(TermEmbedder));
    let indexer = Indexer::new(store, Arc::new(TermEmbedder), 64);
    let entities = vec![
        entity("Ada", "person", &["writes the compiler"]),
        entity("Bo", "person", &["runs the build farm"]),
    ];
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    create_relations(&memory, ws, &[("Ada", "knows", "Bo")]).await;
    (memory, indexer, ws)
}

fn reflect(target: ReflectionTarget, content: &str) -> AddReflection {
    AddReflection::new(target, content)
}

fn field_of(error: Error) -> String {
    match error {
        Error::InvalidArgument { field, .. } => field,
        other => panic!("not an invalid argument: {other}"),
    }
}

async fn found(memory: &Memory, ws: WorkspaceId, request: SearchReflections) -> Vec<String> {
    let results = memory.call(ws, request).await.unwrap().results;
    results
        .into_iter()
        .map(|hit| hit.reflection.content)
        .collect()
}

pub async fn reflections_are_kept_found_and_shown_with_their_node(store: Arc<dyn MemoryStore>) {
    let (memory, indexer, ws) = team(store).await;
    let on_ada = ReflectionTarget::node("Ada");
    let mut first = reflect(
        on_ada.clone(),
        "We chose Ada because she knows parsers deeply",
    );
    first.author = Some("nolan".into());
    first.mood = Some("insight".into());
    let kept = memory.call(ws, first).await.unwrap();
    assert_eq!(kept.target, on_ada);
    assert_eq!(
        (kept.author.as_deref(), kept.mood.as_deref()),
        (Some("nolan"), Some("insight"))
    );
    let knows = ReflectionTarget::relation("Ada", "knows", "Bo");
    let on_relation = memory
        .call(
            ws,
            reflect(knows.clone(), "Their friendship keeps the build green"),
        )
        .await
        .unwrap();
    assert_eq!(on_relation.target, knows);
    assert!(on_relation.author.is_none() && on_relation.mood.is_none());
    let whole = ReflectionTarget::workspace();
    (memory.call(
        ws,
        reflect(whole.clone(), "This project taught us to test early"),
    ))
    .await
    .unwrap();
    for text in [
        "Ada reviews every parser change",
        "Ada mentors the interns",
        "Ada is calm",
    ] {
        memory
            .call(ws, reflect(on_ada.clone(), text))
            .await
            .unwrap();
        tick().await;
    }

    // Opened, a node shows its three newest and counts the rest.
    let ada = open_node(&memory, ws, "Ada").await;
    let shown: Vec<&str> = ada.reflections.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(
        shown,
        [
            "Ada is calm",
            "Ada mentors the interns",
            "Ada reviews every parser change"
        ]
    );
    assert_eq!(ada.more_reflections, Some(1));
    let bo = open_node(&memory, ws, "Bo").await;
    assert!(bo.reflections.is_empty() && bo.more_reflections.is_none());

    // Before the indexer ran, by full text; after, by meaning and words, scored in 0–1.
    let words = found(&memory, ws, SearchReflections::new("deeply")).await;
    assert_eq!(words, ["We chose Ada because she knows parsers deeply"]);
    indexer.run_until_idle().await.unwrap();
    let answer = memory
        .call(ws, SearchReflections::new("why Ada knows parsers"))
        .await
        .unwrap();
    let best = &answer.results[0];
    assert_eq!(
        best.reflection.content,
        "We chose Ada because she knows parsers deeply"
    );
    let scores: Vec<f64> = answer.results.iter().map(|hit| hit.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert_eq!(
        memory
            .call(ws, SearchReflections::new("why Ada knows parsers"))
            .await
            .unwrap(),
        answer,
        "the same query scores the same"
    );

    // Filters: the target, the author, the mood.
    let mut only = SearchReflections::new("build green friendship Ada");
    only.target = Some(knows);
    only.min_score = Some(0.0);
    assert_eq!(
        found(&memory, ws, only).await,
        ["Their friendship keeps the build green"]
    );
    let mut only = SearchReflections::new("test early project taught");
    only.target = Some(whole);
    only.min_score = Some(0.0);
    assert_eq!(
        found(&memory, ws, only).await,
        ["This project taught us to test early"]
    );
    let mut by = SearchReflections::new("Ada");
    by.author = Some("nolan".into());
    by.min_score = Some(0.0);
    assert_eq!(
        found(&memory, ws, by.clone()).await,
        ["We chose Ada because she knows parsers deeply"]
    );
    by.author = None;
    by.mood = Some("doubt".into());
    assert!(found(&memory, ws, by).await.is_empty());
    let mut limited = SearchReflections::new("Ada");
    (limited.limit, limited.min_score) = (2, Some(0.0));
    assert_eq!(memory.call(ws, limited).await.unwrap().results.len(), 2);

    // The history of a node lists its reflections and its relations'.
    let history = memory.call(ws, GetHistory::new("Bo")).await.unwrap();
    let added: Vec<_> = (history.events.iter())
        .filter(|e| e.operation == HistoryOperation::ReflectionAdded)
        .collect();
    assert_eq!(added.len(), 1, "{history:?}");
    assert_eq!(
        added[0].content.as_deref(),
        Some("Their friendship keeps the build green")
    );
    assert_eq!(
        added[0].relation.as_ref().map(|r| r.relation_type.as_str()),
        Some("knows")
    );
    // A node shows a long reflection cut, with the cut marked; the search answers it whole.
    let long = format!("Bo {}", "keeps the farm humming ".repeat(40));
    memory
        .call(ws, reflect(ReflectionTarget::node("Bo"), &long))
        .await
        .unwrap();
    let shown = &open_node(&memory, ws, "Bo").await.reflections[0].content;
    assert_eq!(
        shown.chars().count(),
        crate::reflections::REFLECTION_PREVIEW_CHARS + 1
    );
    assert!(shown.ends_with('…') && long.starts_with(shown.trim_end_matches('…')));
}

pub async fn a_bad_reflection_is_refused_naming_the_argument_and_writes_nothing(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, _, ws) = team(store).await;
    let refused = |request: AddReflection| {
        let memory = memory.clone();
        async move { memory.call(ws, request).await.unwrap_err() }
    };
    let none = reflect(ReflectionTarget::default(), "text");
    assert_eq!(field_of(refused(none).await), "target");
    let mut two = ReflectionTarget::node("Ada");
    two.workspace = true;
    assert_eq!(field_of(refused(reflect(two, "text")).await), "target");
    let empty = reflect(ReflectionTarget::node(""), "text");
    assert_eq!(field_of(refused(empty).await), "target.node");
    let long_type = ReflectionTarget::relation("Ada", &"t".repeat(300), "Bo");
    assert_eq!(
        field_of(refused(reflect(long_type, "text")).await),
        "target.relation.relation_type"
    );
    let blank = reflect(ReflectionTarget::workspace(), "");
    assert_eq!(field_of(refused(blank).await), "content");
    let mut long_author = reflect(ReflectionTarget::workspace(), "text");
    long_author.author = Some("a".repeat(300));
    assert_eq!(field_of(refused(long_author).await), "author");
    let mut empty_mood = reflect(ReflectionTarget::workspace(), "text");
    empty_mood.mood = Some(String::new());
    assert_eq!(field_of(refused(empty_mood).await), "mood");
    // A node or current relation that is not there.
    let missing = refused(reflect(ReflectionTarget::node("Nobody"), "text")).await;
    assert!(
        matches!(&missing, Error::NotFound { kind: "node", .. }),
        "{missing}"
    );
    let backwards = ReflectionTarget::relation("Bo", "knows", "Ada");
    let missing = refused(reflect(backwards, "text")).await;
    assert!(
        matches!(
            &missing,
            Error::NotFound {
                kind: "relation",
                ..
            }
        ),
        "{missing}"
    );
    // Searches check theirs.
    let mut search = SearchReflections::new("Ada");
    search.limit = 0;
    assert_eq!(
        field_of(memory.call(ws, search).await.unwrap_err()),
        "limit"
    );
    let mut search = SearchReflections::new("Ada");
    search.min_score = Some(1.5);
    assert_eq!(
        field_of(memory.call(ws, search).await.unwrap_err()),
        "min_score"
    );
    let mut search = SearchReflections::new("Ada");
    search.target = Some(ReflectionTarget::node("Nobody"));
    assert!(matches!(
        memory.call(ws, search).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        field_of(
            memory
                .call(ws, SearchReflections::new(""))
                .await
                .unwrap_err()
        ),
        "query"
    );
    assert!(
        memory.reflections_page(ws, 0, 10).await.unwrap().is_empty(),
        "nothing was written"
    );
}

pub async fn reflections_keep_to_their_workspace(store: Arc<dyn MemoryStore>) {
    let (memory, _, ws) = team(store).await;
    let other = memory.create_workspace("other").await.unwrap().id;
    create_nodes(&memory, other, &["Ada"]).await;
    (memory.call(
        ws,
        reflect(ReflectionTarget::node("Ada"), "Ada's compiler is fast"),
    ))
    .await
    .unwrap();
    (memory.call(
        other,
        reflect(ReflectionTarget::workspace(), "Elsewhere nothing compiles"),
    ))
    .await
    .unwrap();
    let mut search = SearchReflections::new("compiler compiles");
    search.min_score = Some(0.0);
    assert_eq!(
        found(&memory, ws, search.clone()).await,
        ["Ada's compiler is fast"]
    );
    assert_eq!(
        found(&memory, other, search).await,
        ["Elsewhere nothing compiles"]
    );
    assert!(
        open_node(&memory, other, "Ada")
            .await
            .reflections
            .is_empty()
    );
    // A relation of one workspace is not another's.
    let knows = ReflectionTarget::relation("Ada", "knows", "Bo");
    let refused = memory
        .call(other, reflect(knows, "text"))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::NotFound { .. }), "{refused}");
    assert_eq!(memory.reflections_page(ws, 0, 10).await.unwrap().len(), 1);
}

pub async fn reflections_follow_their_node_through_merges_and_deletes(store: Arc<dyn MemoryStore>) {
    let (memory, _, ws) = team(store).await;
    create_nodes(&memory, ws, &["Bob"]).await;
    (memory.call(
        ws,
        reflect(ReflectionTarget::node("Bob"), "Bob is Bo, written twice"),
    ))
    .await
    .unwrap();
    (memory.call(ws, reflect(ReflectionTarget::workspace(), "Names drift")))
        .await
        .unwrap();
    memory
        .call(ws, MergeEntities::new(&strings(&["Bob"]), "Bo"))
        .await
        .unwrap();
    let bo = open_node(&memory, ws, "Bo").await;
    assert_eq!(bo.reflections.len(), 1);
    assert_eq!(bo.reflections[0].content, "Bob is Bo, written twice");
    // By the alias the merge left, the reflection's target is Bo.
    let by_alias = memory
        .call(
            ws,
            reflect(ReflectionTarget::node("Bob"), "Bob answers as Bo"),
        )
        .await
        .unwrap();
    assert_eq!(by_alias.target, ReflectionTarget::node("Bo"));
    (memory.call(ws, DeleteEntities::new(&strings(&["Bo"]))))
        .await
        .unwrap();
    let left = memory.reflections_page(ws, 0, 10).await.unwrap();
    let texts: Vec<&str> = left.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(
        texts,
        ["Names drift"],
        "a deleted node takes its reflections"
    );
}

pub async fn reflections_are_exported_and_imported_once(store: Arc<dyn MemoryStore>) {
    let (memory, _, ws) = team(store).await;
    let mut first = reflect(ReflectionTarget::node("Ada"), "Ada chose Rust");
    first.author = Some("sofia".into());
    memory.call(ws, first).await.unwrap();
    let knows = ReflectionTarget::relation("Ada", "knows", "Bo");
    memory
        .call(ws, reflect(knows, "They met at RustConf"))
        .await
        .unwrap();
    memory
        .call(ws, reflect(ReflectionTarget::workspace(), "A good year"))
        .await
        .unwrap();
    let page = memory.reflections_page(ws, 0, 2).await.unwrap();
    assert_eq!(page.len(), 2);
    let rest = memory.reflections_page(ws, page[1].id, 2).await.unwrap();
    assert_eq!(rest.len(), 1);
    let records: Vec<ReflectionRecord> = page.into_iter().chain(rest).map(Into::into).collect();

    let copy = memory.create_workspace("copy").await.unwrap().id;
    create_nodes(&memory, copy, &["Ada"]).await;
    let imported = memory
        .import_reflections(copy, records.clone())
        .await
        .unwrap();
    assert_eq!((imported.created, imported.existing), (2, 0));
    assert_eq!(imported.missing, [1], "the relation is not in the copy");
    let again = memory
        .import_reflections(copy, records.clone())
        .await
        .unwrap();
    assert_eq!((again.created, again.existing), (0, 2));
    let copied = memory.reflections_page(copy, 0, 10).await.unwrap();
    assert_eq!(copied[0].author.as_deref(), Some("sofia"));
    assert_eq!(
        copied[0].created_at, records[0].created_at,
        "the time is kept"
    );
    // A bad record writes nothing of its batch, naming it.
    let mut bad = records[2].clone();
    bad.content = String::new();
    let refused = memory
        .import_reflections(copy, vec![records[0].clone(), bad])
        .await;
    assert_eq!(field_of(refused.unwrap_err()), "reflections[1].content");
    assert!(matches!(
        memory.reflections_page(copy, 0, 0).await,
        Err(Error::InvalidArgument { .. })
    ));
}
