//! "Did you mean": every answer that a node was not found names the close existing names.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::GetStats;
use crate::{Error, MemoryStore, QueryObservations};

pub async fn a_name_almost_typed_is_suggested_wherever_a_node_is_not_found(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store.clone(), "w").await;
    let nodes = ["Priya Raman", "PostgreSQL", "Project Atlas", "Prague"];
    let nodes = nodes.map(|name| entity(name, "thing", &["a fact"]));
    memory
        .call(ws, CreateEntities::new(nodes.to_vec()))
        .await
        .unwrap();
    // Another workspace's names are never suggested.
    let other = memory.create_workspace("other").await.unwrap().id;
    (memory.call(
        other,
        CreateEntities::new(vec![entity("Globex Corp", "org", &[])]),
    ))
    .await
    .unwrap();

    let opened = (memory.call(
        ws,
        OpenNodes::new(&strings(&["Priya", "postgres", "Globex", "Prague"])),
    ))
    .await
    .unwrap();
    assert_eq!(opened.not_found, ["Priya", "postgres", "Globex"]);
    assert_eq!(
        opened.did_you_mean,
        BTreeMap::from([
            ("Priya".to_owned(), strings(&["Priya Raman"])),
            ("postgres".to_owned(), strings(&["PostgreSQL"])),
        ])
    );

    let added = (memory.call(
        ws,
        AddObservations::new(&[additions("priya raman", &["x"])]),
    ))
    .await
    .unwrap();
    assert!(added.results[0].not_found);
    assert_eq!(added.results[0].did_you_mean, ["Priya Raman"]);

    let created = (memory.call(
        ws,
        CreateRelations::new(&[relation("Pryia Raman", "uses", "PostgreSQL")]),
    ))
    .await
    .unwrap();
    assert_eq!(created.not_found, ["Pryia Raman"]);
    assert_eq!(created.did_you_mean["Pryia Raman"], ["Priya Raman"]);

    let deleted = memory
        .call(ws, DeleteEntities::new(&strings(&["Project-Atlas"])))
        .await
        .unwrap();
    assert_eq!(deleted.did_you_mean["Project-Atlas"], ["Project Atlas"]);
    assert_eq!(
        memory.call(ws, GetStats {}).await.unwrap().node_count,
        4,
        "a suggestion deletes nothing"
    );

    let error = memory
        .call(ws, SetSummary::new("Priya", "x"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "node not found: Priya (did you mean \"Priya Raman\"?)"
    );
    let error = memory
        .call(ws, GetNeighborhood::new("postgres", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::NotFound { did_you_mean, .. } if did_you_mean == &["PostgreSQL"]),
        "{error}"
    );
    let query = QueryObservations::new("Priya", "fact");
    let error = memory.call(ws, query).await.unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("(did you mean \"Priya Raman\"?)"),
        "{error}"
    );

    // Nothing close: the plain answer.
    let error = memory
        .call(ws, SetTags::new("Zanzibar", &[]))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "node not found: Zanzibar");
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["Globex"])))
        .await
        .unwrap();
    assert!(opened.did_you_mean.is_empty());
}
