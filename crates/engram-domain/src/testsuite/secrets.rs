//! Secrets kept out of memory on every write path, and the workspace brief.

use std::sync::Arc;

use super::*;
use crate::secrets::{find_secrets, ordinary_corpus, secrets_corpus};
use crate::transfer::{NodeRecord, ObservationRecord, RelationRecord};
use crate::{Error, ImportBatch, Ordinal, RenameWorkspace, SecretPolicy};

/// Every write of `secret` (each through another tool or field) and the field its refusal
/// must name; name-like fields only for texts they could hold (one line, within their limit).
async fn write_everywhere(
    memory: &Memory,
    ws: WorkspaceId,
    secret: &str,
) -> Vec<(&'static str, crate::Result<()>)> {
    let fits_name = crate::limits::name("name", secret).is_ok();
    let fits_tag = fits_name && secret.len() <= 128;
    let mut node = entity("New", "note", &[secret]);
    let mut attempts = vec![(
        "entities[0].observations[0]",
        memory
            .call(ws, CreateEntities::new(vec![node.clone()]))
            .await
            .map(drop),
    )];
    node.observations.clear();
    node.summary = Some(secret.to_owned());
    attempts.push((
        "entities[0].summary",
        memory
            .call(ws, CreateEntities::new(vec![node]))
            .await
            .map(drop),
    ));
    attempts.push((
        "observations[0].contents[1]",
        (memory
            .call(
                ws,
                AddObservations::new(&[additions("Staging", &["fine", secret])]),
            )
            .await)
            .map(drop),
    ));
    attempts.push((
        "new_content",
        (memory
            .call(ws, ReplaceObservation::new("Staging", Ordinal(1), secret))
            .await)
            .map(drop),
    ));
    attempts.push((
        "content",
        (memory.call(
            ws,
            crate::AddReflection::new(crate::ReflectionTarget::node("Staging"), secret),
        ))
        .await
        .map(drop),
    ));
    let reflection = crate::ReflectionRecord {
        target: crate::ReflectionTarget::workspace(),
        content: secret.to_owned(),
        author: None,
        mood: None,
        created_at: chrono::Utc::now(),
    };
    attempts.push((
        "reflections[0].content",
        (memory.import_reflections(ws, vec![reflection]).await).map(drop),
    ));
    attempts.push((
        "summary",
        memory
            .call(ws, SetSummary::new("Staging", secret))
            .await
            .map(drop),
    ));
    // `split_entity`: a part's summary, name and type (Staging's one fact moved to the part).
    let split = |name: &str, entity_type: &str, summary: Option<&str>| {
        let part = crate::SplitPart {
            name: name.into(),
            entity_type: Some(entity_type.into()),
            ordinals: vec![Ordinal(1)],
            summary: summary.map(str::to_owned),
        };
        crate::SplitEntity::new("Staging", vec![part])
    };
    attempts.push((
        "parts[0].summary",
        (memory.call(ws, split("Staging part", "note", Some(secret))))
            .await
            .map(drop),
    ));
    let record = NodeRecord {
        name: "Imported".into(),
        entity_type: "note".into(),
        observations: vec![ObservationRecord {
            content: secret.into(),
            ..ObservationRecord::default()
        }],
        ..NodeRecord::default()
    };
    attempts.push((
        "nodes[0].observations[0].content",
        memory
            .import(
                ws,
                ImportBatch {
                    nodes: vec![record],
                    relations: Vec::new(),
                },
            )
            .await
            .map(drop),
    ));
    if fits_name {
        attempts.push((
            "entities[0].name",
            (memory
                .call(ws, CreateEntities::new(vec![entity(secret, "note", &[])]))
                .await)
                .map(drop),
        ));
        attempts.push((
            "relations[0].relation_type",
            (memory
                .call(
                    ws,
                    CreateRelations::new(&[relation("Staging", secret, "Vault")]),
                )
                .await)
                .map(drop),
        ));
        attempts.push((
            "aliases[1]",
            (memory
                .call(
                    ws,
                    crate::SetAliases::new("Staging", &["stage".to_owned(), secret.to_owned()]),
                )
                .await)
                .map(drop),
        ));
        attempts.push((
            "parts[0].name",
            (memory.call(ws, split(secret, "note", None)))
                .await
                .map(drop),
        ));
        attempts.push((
            "parts[0].entity_type",
            (memory.call(ws, split("Staging part", secret, None)))
                .await
                .map(drop),
        ));
        let existing = relation("Staging", "uses", "Vault");
        attempts.push((
            "new_type",
            (memory
                .call(ws, RenameRelationType::new(&existing, secret))
                .await)
                .map(drop),
        ));
        let link = RelationRecord {
            from: "Staging".into(),
            to: "Vault".into(),
            relation_type: secret.into(),
            ..RelationRecord::default()
        };
        attempts.push((
            "relations[0].relation_type",
            memory
                .import(
                    ws,
                    ImportBatch {
                        nodes: Vec::new(),
                        relations: vec![link],
                    },
                )
                .await
                .map(drop),
        ));
        let aliased = NodeRecord {
            name: "Imported".into(),
            entity_type: "note".into(),
            aliases: vec!["imported".into(), secret.into()],
            ..NodeRecord::default()
        };
        attempts.push((
            "nodes[0].aliases[1]",
            memory
                .import(
                    ws,
                    ImportBatch {
                        nodes: vec![aliased],
                        relations: Vec::new(),
                    },
                )
                .await
                .map(drop),
        ));
    }
    if fits_tag {
        attempts.push((
            "tags[1]",
            (memory
                .call(ws, SetTags::new("Staging", &strings(&["env", secret])))
                .await)
                .map(drop),
        ));
    }
    attempts
}

/// A workspace holding `Staging` (one observation) `-uses->` `Vault`.
async fn staging(store: Arc<dyn MemoryStore>, policy: SecretPolicy) -> (Memory, WorkspaceId) {
    let (memory, ws) = memory_with_workspace(store, "secrets").await;
    let memory = memory.with_secret_policy(policy);
    (memory.call(
        ws,
        CreateEntities::new(vec![entity("Staging", "environment", &["base fact"])]),
    ))
    .await
    .unwrap();
    create_nodes(&memory, ws, &["Vault"]).await;
    (memory.call(
        ws,
        CreateRelations::new(&[relation("Staging", "uses", "Vault")]),
    ))
    .await
    .unwrap();
    (memory, ws)
}

pub async fn every_write_path_refuses_a_secret_naming_the_field_and_kind_only(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = staging(store, SecretPolicy::Refuse).await;
    let before = counts(&memory, ws).await;
    let mut checked = 0;
    for (label, text) in secrets_corpus() {
        let core = &text[find_secrets(&text)[0].range.clone()];
        for (field, outcome) in write_everywhere(&memory, ws, &text).await {
            match outcome {
                Err(Error::InvalidArgument {
                    field: named,
                    reason,
                }) => {
                    assert_eq!(named, field, "{label}: {reason}");
                    assert!(reason.contains(label), "{field}: {reason}");
                    assert!(
                        !reason.contains(core),
                        "{field} echoes the secret: {reason}"
                    );
                }
                other => panic!("{label} via {field} was not refused: {other:?}"),
            }
            checked += 1;
        }
    }
    assert!(checked > 600, "{checked} writes checked");
    assert_eq!(
        counts(&memory, ws).await,
        before,
        "a refused write wrote something"
    );
    let staging = memory
        .call(ws, OpenNodes::new(&strings(&["Staging"])))
        .await
        .unwrap();
    let node = &staging.entities[0];
    assert_eq!((node.summary.as_deref(), node.tags.len()), (None, 0));
    assert_eq!(
        undated(&node.observations),
        observations(&[(1, "base fact")])
    );
}

/// Names kept outside the graph are screened too, and refused (never redacted, as they travel
/// in headers, logs and labels): a workspace's name, a token's label, a perspective's
/// templates. A refused one creates nothing.
pub async fn stored_names_refuse_a_secret(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = staging(store, SecretPolicy::Redact).await;
    let key = "AKIAQ7BXN2ZRLT4PYW3K";
    let refused_field = |outcome: Result<_, Error>| match outcome {
        Err(Error::InvalidArgument { field, reason }) => {
            assert!(
                reason.contains("aws-access-key") && !reason.contains(key),
                "{reason}"
            );
            field
        }
        other => panic!("not refused: {other:?}"),
    };
    assert_eq!(
        refused_field(memory.create_workspace(key).await.map(drop)),
        "workspace"
    );
    assert_eq!(
        refused_field(
            memory
                .rename_workspace(RenameWorkspace::new("secrets", key))
                .await
                .map(drop)
        ),
        "new_name"
    );
    let label = format!("ci {key}");
    assert_eq!(
        refused_field(
            (memory.create_token(
                crate::auth::CreateToken::new("secrets", crate::auth::Access::ReadOnly)
                    .label(Some(label.clone())),
                &[7; 40]
            ))
            .await
            .map(drop)
        ),
        "label"
    );
    // An alias is a name: refused, not redacted; a refused call leaves the aliases as they were.
    memory
        .call(ws, crate::SetAliases::new("Staging", &["stage".to_owned()]))
        .await
        .unwrap();
    let aliases = ["stage".to_owned(), format!("deploy {key}")];
    assert_eq!(
        refused_field(
            (memory.call(ws, crate::SetAliases::new("Staging", &aliases)))
                .await
                .map(drop)
        ),
        "aliases[1]"
    );
    let staging = (memory.call(ws, OpenNodes::new(&strings(&["stage"]))))
        .await
        .unwrap();
    assert_eq!(
        staging.entities[0].name, "Staging",
        "the old alias still answers"
    );
    let mut perspective = memory.perspectives(ws).await.unwrap()[0].clone();
    perspective.query_template = format!("{{query}} {key}");
    assert_eq!(
        refused_field(memory.set_perspective(ws, &perspective).await.map(drop)),
        "query_template"
    );
    let names: Vec<String> = (memory.list_workspaces().await.unwrap().into_iter())
        .map(|w| w.workspace.name)
        .collect();
    assert_eq!(names, ["secrets"]);
    assert!(memory.tokens(None).await.unwrap().is_empty());
    let kept = &memory.perspectives(ws).await.unwrap()[0];
    assert!(!kept.query_template.contains(key), "{kept:?}");
}

pub async fn ordinary_technical_text_is_stored_as_given(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = staging(store, SecretPolicy::Refuse).await;
    let lines: Vec<&str> = ordinary_corpus().collect();
    assert!(lines.len() >= 150, "{} ordinary lines", lines.len());
    let added = memory
        .call(ws, AddObservations::new(&[additions("Staging", &lines)]))
        .await
        .unwrap()
        .results;
    assert_eq!(
        added[0].added.len() + added[0].skipped_duplicates.len(),
        lines.len()
    );
    for line in &lines {
        memory
            .call(ws, SetSummary::new("Vault", *line))
            .await
            .unwrap();
        if crate::limits::name("relation_type", line).is_ok() {
            (memory.call(
                ws,
                CreateRelations::new(&[relation("Staging", line, "Vault")]),
            ))
            .await
            .unwrap();
        }
    }
}

pub async fn redacted_and_allowed_secrets_are_stored_as_the_policy_says(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = staging(store.clone(), SecretPolicy::Redact).await;
    let corpus: Vec<(&str, String)> = secrets_corpus().collect();
    // A node a secret, so that two texts redacted alike are both kept.
    let names: Vec<String> = (0..corpus.len()).map(|i| format!("note {i}")).collect();
    let nodes = (corpus.iter().zip(&names))
        .map(|((_, text), name)| entity(name, "note", &[text.as_str()]))
        .collect();
    memory.call(ws, CreateEntities::new(nodes)).await.unwrap();
    let opened = memory.call(ws, OpenNodes::new(&names)).await.unwrap();
    assert_eq!(opened.entities.len(), corpus.len());
    for ((label, text), node) in corpus.iter().zip(&opened.entities) {
        let stored = &node.observations[0].content;
        let core = &text[find_secrets(text)[0].range.clone()];
        assert!(!stored.contains(core), "{label}: {stored}");
        let marker = format!("[redacted: {label}]");
        assert!(stored.contains(&marker), "{stored}");
    }
    (memory.call(ws, SetSummary::new("Vault", &corpus[0].1)))
        .await
        .unwrap();
    let vault = memory
        .call(ws, OpenNodes::new(&strings(&["Vault"])))
        .await
        .unwrap();
    let summary = vault.entities[0].summary.clone().unwrap_or_default();
    assert!(summary.contains("[redacted: "), "{summary}");

    // A name holding a credential is refused even when redacting: a redacted name would not
    // name what was meant, and two secrets would redact to one node.
    let named = entity(&format!("key {}", "AKIAZ7QW4RTY2UIOPL3M"), "note", &[]);
    let refused = memory
        .call(ws, CreateEntities::new(vec![named]))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument { field, .. } if field == "entities[0].name"),
        "{refused}"
    );
    // A redacted tag is held to the tag limit again.
    let tag = format!("{} {}", "t".repeat(105), "AKIAZ7QW4RTY2UIOPL3M");
    let long = memory
        .call(ws, SetTags::new("Vault", &[tag]))
        .await
        .unwrap_err();
    assert!(
        matches!(&long, Error::InvalidArgument { field, .. } if field == "tags[0]"),
        "{long}"
    );

    let allowing = Memory::new(store).with_secret_policy(SecretPolicy::Allow);
    let open = allowing.create_workspace("open").await.unwrap().id;
    (allowing.call(
        open,
        CreateEntities::new(vec![entity("Staging", "environment", &[&corpus[0].1])]),
    ))
    .await
    .unwrap();
    let kept = allowing
        .call(open, OpenNodes::new(&strings(&["Staging"])))
        .await
        .unwrap();
    assert_eq!(kept.entities[0].observations[0].content, corpus[0].1);
}

pub async fn brief_lists_the_most_connected_then_the_newest_nodes(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "brief").await;
    let empty = memory.brief(ws, 5).await.unwrap();
    assert_eq!(
        (empty.node_count, empty.connected.len(), empty.recent.len()),
        (0, 0, 0)
    );
    let mut hub = entity("engram", "project", &["a memory server"]);
    hub.summary = Some("The memory server.".into());
    memory
        .call(ws, CreateEntities::new(vec![hub]))
        .await
        .unwrap();
    create_nodes(&memory, ws, &["Alice", "Bob", "Carol", "Dave"]).await;
    let links = [
        relation("Alice", "works_on", "engram"),
        relation("Bob", "works_on", "engram"),
        relation("engram", "used_by", "Bob"),
        relation("Carol", "uses", "engram"),
        relation("Alice", "knows", "Bob"),
    ];
    memory.call(ws, CreateRelations::new(&links)).await.unwrap();
    memory
        .call(ws, SetSummary::new("Dave", "Newest of all."))
        .await
        .unwrap();
    let brief = memory.brief(ws, 2).await.unwrap();
    assert_eq!(
        (
            brief.node_count,
            brief.observation_count,
            brief.relation_count
        ),
        (5, 1, 5)
    );
    let connected: Vec<(&str, usize)> = (brief.connected.iter())
        .map(|node| (node.name.as_str(), node.related_nodes))
        .collect();
    assert_eq!(connected, [("engram", 3), ("Alice", 2)]);
    assert_eq!(
        brief.connected[0].summary.as_deref(),
        Some("The memory server.")
    );
    assert_eq!(brief.recent.len(), 2);
    assert_eq!(brief.recent[0].name, "Dave");
    assert!(
        brief
            .recent
            .iter()
            .all(|node| node.name != "engram" && node.name != "Alice")
    );
}
