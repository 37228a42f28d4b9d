use std::sync::Arc;

use super::*;
use crate::{CreatedRelations, DeletedRelations, Error, MemoryStore};

pub async fn create_relations_reports_created_existing_and_missing(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B", "C"]).await;
    create_relations(&memory, ws, &[("A", "knows", "B")]).await;

    let result = memory
        .call(
            ws,
            CreateRelations::new(&[
                relation("A", "likes", "C"),
                relation("A", "knows", "B"),
                relation("Ghost", "x", "A"),
                relation("B", "y", "Nobody"),
                relation("Nobody", "z", "Ghost"),
                relation("C", "is", "C"),
                relation("B", "knows", "A"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(
        result,
        CreatedRelations {
            created: vec![
                relation("A", "likes", "C"),
                relation("C", "is", "C"),
                relation("B", "knows", "A"),
            ],
            already_existed: vec![relation("A", "knows", "B")],
            not_found: strings(&["Ghost", "Nobody"]),
            ..CreatedRelations::default()
        }
    );
    let opened = memory
        .call(ws, OpenNodes::new(&strings(&["A", "B", "C"])))
        .await
        .unwrap();
    assert_eq!(
        opened.relations,
        [
            edge("A", "knows", "B"),
            edge("A", "likes", "C"),
            edge("B", "knows", "A"),
            edge("C", "is", "C"),
        ]
    );
    // Missing endpoints are not created on the way.
    assert_eq!(counts(&memory, ws).await, (3, 0, 4));
}

pub async fn relations_repeated_in_one_call_count_once(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B"]).await;

    let created = memory
        .call(
            ws,
            CreateRelations::new(&[
                relation("A", "r", "B"),
                relation("A", "r", "B"),
                relation("B", "r", "A"),
                relation("A", "s", "B"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(
        created,
        CreatedRelations {
            created: vec![
                relation("A", "r", "B"),
                relation("B", "r", "A"),
                relation("A", "s", "B")
            ],
            ..CreatedRelations::default()
        }
    );
    assert_eq!(counts(&memory, ws).await, (2, 0, 3));

    let deleted = memory
        .call(
            ws,
            DeleteRelations::new(&[
                relation("A", "r", "B"),
                relation("A", "r", "B"),
                relation("A", "t", "B"),
                relation("Ghost", "r", "A"),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(
        deleted,
        DeletedRelations {
            deleted: 1,
            not_found: 2
        }
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "B"))
            .await
            .unwrap()
            .relations,
        [edge("A", "s", "B"), edge("B", "r", "A")]
    );
    let none = memory
        .call(ws, DeleteRelations::new(&[relation("A", "r", "B")]))
        .await
        .unwrap();
    assert_eq!(
        none,
        DeletedRelations {
            deleted: 0,
            not_found: 1
        }
    );
    assert_eq!(counts(&memory, ws).await, (2, 0, 2));
}

pub async fn rename_relation_type_renames_one_relation(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B"]).await;
    create_relations(&memory, ws, &[("A", "old", "B"), ("B", "old", "A")]).await;

    let renamed = memory
        .call(
            ws,
            RenameRelationType::new(&relation("A", "old", "B"), "new"),
        )
        .await
        .unwrap();
    let relation_now =
        RelationSpec::new(&renamed.from_entity, &renamed.to_entity, &renamed.new_type);
    assert_eq!(
        (relation_now, renamed.old_type.as_str()),
        (relation("A", "new", "B"), "old")
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "B"))
            .await
            .unwrap()
            .relations,
        [edge("A", "new", "B"), edge("B", "old", "A")]
    );
    assert_eq!(counts(&memory, ws).await, (2, 0, 2));
    assert_eq!(events(&memory, ws).await, (4, 1, 0));
}

pub async fn rename_onto_an_existing_relation_conflicts_and_changes_nothing(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B"]).await;
    create_relations(&memory, ws, &[("A", "x", "B"), ("A", "y", "B")]).await;
    let before = (
        memory
            .call(ws, OpenNodes::new(&strings(&["A", "B"])))
            .await
            .unwrap(),
        events(&memory, ws).await,
    );

    let conflict = memory
        .call(ws, RenameRelationType::new(&relation("A", "x", "B"), "y"))
        .await;
    assert!(matches!(conflict, Err(Error::Conflict(_))), "{conflict:?}");
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "B"))
            .await
            .unwrap()
            .relations,
        [edge("A", "x", "B"), edge("A", "y", "B")]
    );

    // A relation that does not exist, by type, direction or endpoint.
    for (from, kind, to) in [("A", "z", "B"), ("B", "x", "A"), ("A", "x", "Ghost")] {
        let missing = memory
            .call(ws, RenameRelationType::new(&relation(from, kind, to), "w"))
            .await;
        assert!(
            matches!(
                missing,
                Err(Error::NotFound {
                    kind: "relation",
                    ..
                })
            ),
            "{from} -[{kind}]-> {to}: {missing:?}"
        );
    }
    let after = (
        memory
            .call(ws, OpenNodes::new(&strings(&["A", "B"])))
            .await
            .unwrap(),
        events(&memory, ws).await,
    );
    assert_eq!(after, before);
}

pub async fn get_relations_between_lists_both_directions_sorted(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B", "C"]).await;
    create_relations(
        &memory,
        ws,
        &[
            ("B", "a", "A"),
            ("A", "b", "B"),
            ("A", "a", "B"),
            ("A", "c", "C"),
            ("C", "d", "B"),
            ("A", "self", "A"),
        ],
    )
    .await;

    let expected = [
        edge("A", "a", "B"),
        edge("A", "b", "B"),
        edge("B", "a", "A"),
    ];
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "B"))
            .await
            .unwrap()
            .relations,
        expected
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("B", "A"))
            .await
            .unwrap()
            .relations,
        expected
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("B", "C"))
            .await
            .unwrap()
            .relations,
        [edge("C", "d", "B")]
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "A"))
            .await
            .unwrap()
            .relations,
        [edge("A", "self", "A")]
    );
    memory
        .call(ws, DeleteRelations::new(&[relation("C", "d", "B")]))
        .await
        .unwrap();
    assert!(
        memory
            .call(ws, GetRelationsBetween::new("B", "C"))
            .await
            .unwrap()
            .relations
            .is_empty()
    );

    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("Ghost", "A"))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
    assert_eq!(
        memory
            .call(ws, GetRelationsBetween::new("A", "Ghost"))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
}
