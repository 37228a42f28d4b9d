use std::sync::Arc;

use super::*;
use crate::{DeleteWorkspace, Error, Memory, MemoryStore, RenameWorkspace};
use crate::{FindUnlinkedReferences, GetStats};

pub async fn workspaces_are_created_listed_renamed_and_deleted(store: Arc<dyn MemoryStore>) {
    let memory = Memory::new(store);
    let alpha = memory.create_workspace("alpha").await.unwrap();
    assert_eq!(alpha.name, "alpha");
    memory.create_workspace("beta").await.unwrap();
    assert_eq!(
        memory.create_workspace("alpha").await.unwrap_err(),
        Error::AlreadyExists {
            kind: "workspace",
            name: "alpha".into()
        }
    );
    create_nodes(&memory, alpha.id, &["a1", "a2"]).await;

    let listed: Vec<(String, i64)> = memory
        .list_workspaces()
        .await
        .unwrap()
        .into_iter()
        .map(|w| (w.workspace.name, w.node_count))
        .collect();
    assert_eq!(listed, [("alpha".to_owned(), 2), ("beta".to_owned(), 0)]);

    assert!(matches!(
        memory
            .rename_workspace(RenameWorkspace::new("alpha", "beta"))
            .await,
        Err(Error::AlreadyExists { .. })
    ));
    let renamed = memory
        .rename_workspace(RenameWorkspace::new("alpha", "gamma"))
        .await
        .unwrap();
    assert_eq!((renamed.id, renamed.name.as_str()), (alpha.id, "gamma"));
    assert_eq!(memory.workspace("gamma").await.unwrap().id, alpha.id);
    assert_eq!(
        memory.workspace("alpha").await.unwrap_err(),
        Error::workspace_not_found("alpha")
    );

    // A workspace with nodes needs force; an empty one does not.
    assert!(matches!(
        memory
            .delete_workspace(DeleteWorkspace::new("gamma", false))
            .await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        memory.call(alpha.id, GetStats {}).await.unwrap().node_count,
        2
    );
    memory
        .delete_workspace(DeleteWorkspace::new("gamma", true))
        .await
        .unwrap();
    memory
        .delete_workspace(DeleteWorkspace::new("beta", false))
        .await
        .unwrap();
    assert!(memory.list_workspaces().await.unwrap().is_empty());
    assert_eq!(
        memory
            .delete_workspace(DeleteWorkspace::new("beta", false))
            .await
            .unwrap_err(),
        Error::workspace_not_found("beta")
    );
}

pub async fn workspace_names_are_validated(store: Arc<dyn MemoryStore>) {
    let memory = Memory::new(store);
    for bad in ["", "has space", "slash/name", "ünïcode", &"w".repeat(65)] {
        let error = memory.create_workspace(bad).await.unwrap_err();
        assert!(
            matches!(&error, Error::InvalidArgument { field, .. } if field == "workspace"),
            "{bad:?}: {error}"
        );
    }
    assert!(memory.list_workspaces().await.unwrap().is_empty());
}

pub async fn workspaces_are_isolated(store: Arc<dyn MemoryStore>) {
    let memory = Memory::new(store);
    let one = memory.create_workspace("one").await.unwrap().id;
    let two = memory.create_workspace("two").await.unwrap().id;
    memory
        .call(
            one,
            CreateEntities::new(vec![entity(
                "Alice",
                "person",
                &["lives in Lisbon, knows Bob"],
            )]),
        )
        .await
        .unwrap();
    create_nodes(&memory, one, &["Bob"]).await;
    create_relations(&memory, one, &[("Alice", "knows", "Bob")]).await;

    // The same name in another workspace is another node.
    let created = memory
        .call(
            two,
            CreateEntities::new(vec![entity("Alice", "robot", &[])]),
        )
        .await
        .unwrap()
        .entities;
    assert!(!created[0].already_existed);

    let opened = memory
        .call(two, OpenNodes::new(&strings(&["Alice", "Bob"])))
        .await
        .unwrap();
    assert_eq!(opened.entities.len(), 1);
    assert_eq!(opened.entities[0].entity_type, "robot");
    assert!(opened.entities[0].observations.is_empty());
    assert!(opened.relations.is_empty());
    assert_eq!(opened.not_found, ["Bob"]);
    assert!(
        memory
            .call(two, GetNodesByType::new("person"))
            .await
            .unwrap()
            .nodes
            .is_empty()
    );
    let recent: Vec<String> = memory
        .call(two, GetRecentlyModified::new(7, 100))
        .await
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(recent, ["Alice"]);
    assert!(
        memory
            .call(two, FindUnlinkedReferences {})
            .await
            .unwrap()
            .references
            .is_empty()
    );
    assert_eq!(
        memory
            .call(two, GetRelationsBetween::new("Alice", "Bob"))
            .await
            .unwrap_err(),
        Error::node_not_found("Bob")
    );
    // A relation cannot reach into another workspace.
    let cross = memory
        .call(
            two,
            CreateRelations::new(&[relation("Alice", "knows", "Bob")]),
        )
        .await
        .unwrap();
    assert_eq!(cross.not_found, ["Bob"]);
    let deleted = memory
        .call(two, DeleteEntities::new(&strings(&["Bob"])))
        .await
        .unwrap();
    assert_eq!(deleted.not_found, ["Bob"]);

    let stats_one = memory.call(one, GetStats {}).await.unwrap();
    let stats_two = memory.call(two, GetStats {}).await.unwrap();
    assert_eq!(
        (
            stats_one.node_count,
            stats_one.observation_count,
            stats_one.relation_count
        ),
        (2, 1, 1)
    );
    assert_eq!(
        (
            stats_two.node_count,
            stats_two.observation_count,
            stats_two.relation_count
        ),
        (1, 0, 0)
    );
    assert_eq!(
        (stats_one.workspace.as_str(), stats_two.workspace.as_str()),
        ("one", "two")
    );
    // Deleting a workspace leaves the other whole.
    memory
        .delete_workspace(DeleteWorkspace::new("two", true))
        .await
        .unwrap();
    assert_eq!(memory.call(one, GetStats {}).await.unwrap().node_count, 2);
}

pub async fn perspectives_start_with_the_defaults_and_can_change(store: Arc<dyn MemoryStore>) {
    use crate::perspectives::Perspective;
    let (memory, workspace) = memory_with_workspace(store, "views").await;
    let listed = |perspectives: Vec<Perspective>| -> Vec<(String, bool)> {
        perspectives
            .into_iter()
            .map(|p| (p.name, p.enabled))
            .collect()
    };
    let defaults = memory.perspectives(workspace).await.unwrap();
    assert_eq!(
        listed(defaults.clone()),
        [
            ("general", true),
            ("project", false),
            ("relational", false),
            ("technical", false),
            ("temporal", false)
        ]
        .map(|(n, enabled)| (n.to_owned(), enabled))
    );
    let general = defaults.iter().find(|p| p.name == "general").unwrap();
    assert_eq!(
        general.document_template,
        "{entity_type} {name}: {observation}"
    );

    let people = Perspective {
        id: crate::PerspectiveId(0),
        name: "people".into(),
        document_template: "{entity_type} {name}: {observation}".into(),
        query_template: "{query}".into(),
        enabled: true,
    };
    let stored = memory.set_perspective(workspace, &people).await.unwrap();
    assert!(stored.id.0 > 0);
    let disabled = Perspective {
        enabled: false,
        ..general.clone()
    };
    memory.set_perspective(workspace, &disabled).await.unwrap();

    let no_observation = Perspective {
        document_template: "{name}".into(),
        ..people.clone()
    };
    assert!(matches!(
        memory.set_perspective(workspace, &no_observation).await,
        Err(Error::InvalidArgument { field, .. }) if field == "document_template"
    ));
    let bad_name = Perspective {
        name: "Bad Name".into(),
        ..people.clone()
    };
    assert!(matches!(
        memory.set_perspective(workspace, &bad_name).await,
        Err(Error::InvalidArgument { field, .. }) if field == "name"
    ));
    assert_eq!(
        listed(memory.perspectives(workspace).await.unwrap()),
        [
            ("general", false),
            ("people", true),
            ("project", false),
            ("relational", false),
            ("technical", false),
            ("temporal", false)
        ]
        .map(|(n, e)| (n.to_owned(), e))
    );
}

pub async fn tokens_are_kept_hashed_scoped_expiring_and_revocable(store: Arc<dyn MemoryStore>) {
    use crate::auth::Access;
    let memory = Memory::new(store);
    memory.create_workspace("a").await.unwrap();
    memory.create_workspace("b").await.unwrap();
    let now = Timestamp::from(std::time::SystemTime::now());
    let (reader, token) = memory
        .create_token(
            crate::auth::CreateToken::new("a", Access::ReadOnly)
                .label(Some("ci agent".into()))
                .expires_at(Some(now + chrono::Duration::days(90))),
            &[1; 40],
        )
        .await
        .unwrap();
    assert_eq!(
        (reader.workspace.as_str(), reader.access),
        ("a", Access::ReadOnly)
    );
    assert_eq!(reader.label.as_deref(), Some("ci agent"));
    let granted = memory.authenticate(&token, now).await.unwrap().unwrap();
    assert_eq!(granted, reader);
    // The secret is not stored: a token with the same id and another secret is refused.
    let forged = format!(
        "{}{}",
        &token[..token.len() - 1],
        if token.ends_with('0') { '1' } else { '0' }
    );
    assert_eq!(memory.authenticate(&forged, now).await.unwrap(), None);
    assert_eq!(
        memory.authenticate("engram_nonsense", now).await.unwrap(),
        None
    );
    let later = now + chrono::Duration::days(91);
    assert_eq!(
        memory.authenticate(&token, later).await.unwrap(),
        None,
        "expired"
    );

    let (writer, writer_token) = memory
        .create_token(
            crate::auth::CreateToken::new("b", Access::ReadWrite),
            &[2; 40],
        )
        .await
        .unwrap();
    assert_eq!(
        memory.tokens(None).await.unwrap(),
        [reader.clone(), writer.clone()]
    );
    assert_eq!(
        memory.tokens(Some("b")).await.unwrap(),
        std::slice::from_ref(&writer)
    );

    memory.revoke_token(&reader.id).await.unwrap();
    assert_eq!(
        memory.authenticate(&token, now).await.unwrap(),
        None,
        "revoked"
    );
    // Kept in the list, marked with when it was revoked.
    let listed = memory.tokens(Some("a")).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(
        listed[0]
            .revoked_at
            .is_some_and(|at| at >= reader.created_at),
        "{listed:?}"
    );
    let again = memory.revoke_token(&reader.id).await.unwrap_err();
    assert!(
        matches!(again, Error::NotFound { kind: "token", .. }),
        "{again}"
    );
    assert!(matches!(
        memory.revoke_token("not-a-token").await,
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        memory
            .create_token(
                crate::auth::CreateToken::new("nowhere", Access::ReadWrite),
                &[3; 40],
            )
            .await,
        Err(Error::NotFound {
            kind: "workspace",
            ..
        })
    ));
    // A workspace takes its tokens with it.
    memory
        .delete_workspace(DeleteWorkspace::new("b", true))
        .await
        .unwrap();
    assert_eq!(memory.authenticate(&writer_token, now).await.unwrap(), None);
    let left = memory.tokens(None).await.unwrap();
    assert!(left.iter().all(|t| t.workspace == "a"), "{left:?}");
}
