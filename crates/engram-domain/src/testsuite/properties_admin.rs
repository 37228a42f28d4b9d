//! Property tests of the tools around the graph: workspaces, perspectives, access tokens and
//! import batches ([`super::properties`] has the promises every call keeps).

use std::sync::Arc;

use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;
use proptest::sample::select;

use super::properties::*;
use crate::auth::Access;
use crate::perspectives::Perspective;
use crate::transfer::{NodeRecord, ObservationRecord, RelationRecord};
use crate::{DeleteWorkspace, ImportBatch, MemoryStore, RenameWorkspace, Timestamp};

/// Cases per tool.
const CASES: u32 = 100;

pub async fn properties_of_the_admin_tools_hold_for_generated_arguments(
    store: Arc<dyn MemoryStore>,
) {
    let mut h = Harness::new(store, "properties-admin").await;
    for round in 0..CASES {
        workspaces(&mut h).await;
        set_perspective(&mut h).await;
        tokens(&mut h, round).await;
    }
    for _ in 0..2 * CASES {
        import(&mut h).await;
    }
    h.finish("admin tools");
}

/// A workspace name: well-formed, one that exists, too long, or any text.
fn workspace_name(h: &mut Harness) -> String {
    let existing: Vec<String> = (h.before.workspaces.iter())
        .map(|w| w.workspace.name.clone())
        .filter(|name| *name != h.ws_name)
        .collect();
    let pick = h.draw(0..10);
    match pick {
        0..=2 if !existing.is_empty() => h.draw(select(existing)),
        0..=4 => h.draw("[A-Za-z0-9._-]{1,64}"),
        5 => h.draw("[a-z]{65,70}"),
        _ => h.draw(text()),
    }
}

async fn workspaces(h: &mut Harness) {
    let m = h.memory.clone();
    h.case().await;
    let name = workspace_name(h);
    let mut blame = Blame::default();
    blame.unless(workspace_name_ok(&name), "workspace");
    let existed = (h.before.workspaces.iter()).any(|w| w.workspace.name == name);
    let created = h
        .run("create_workspace", &name, &blame, m.create_workspace(&name))
        .await;
    assert_eq!(
        created.is_some(),
        blame.0.is_empty() && !existed,
        "{}",
        short(&name)
    );

    h.case().await;
    let name = workspace_name(h);
    let found = h
        .run("workspace", &name, &blame_name(&name), m.workspace(&name))
        .await;
    if let Some(found) = found {
        assert_eq!(found.name, name);
    }

    h.case().await;
    let (name, new_name) = (workspace_name(h), workspace_name(h));
    if name != h.ws_name {
        let mut blame = blame_name(&name);
        blame.unless(workspace_name_ok(&new_name), "new_name");
        let input = (&name, &new_name);
        let call = m.rename_workspace(RenameWorkspace::new(&*name, &*new_name));
        if h.run("rename_workspace", &input, &blame, call)
            .await
            .is_some()
        {
            m.workspace(&new_name).await.unwrap();
        }
    }

    h.case().await;
    let (name, force) = (workspace_name(h), h.draw(any::<bool>()));
    if name != h.ws_name {
        let call = m.delete_workspace(DeleteWorkspace::new(&*name, force));
        let input = (&name, force);
        if h.run("delete_workspace", &input, &blame_name(&name), call)
            .await
            .is_some()
        {
            assert!(m.workspace(&name).await.is_err(), "{}", short(&name));
        }
    }
}

fn blame_name(name: &str) -> Blame {
    let mut blame = Blame::default();
    blame.unless(workspace_name_ok(name), "workspace");
    blame
}

/// A template that usually holds `placeholder`, sometimes a NUL or too much.
fn template(placeholder: &'static str) -> impl Strategy<Value = String> {
    let inner = prop_oneof![4 => Just(placeholder), 1 => Just("{other}")];
    let rest = prop_oneof![6 => tricky(), 2 => text(), 1 => Just("\0".to_owned())];
    (tricky(), inner, rest).prop_map(|(a, p, b)| a + p + &b)
}

async fn set_perspective(h: &mut Harness) {
    h.case().await;
    let name = h.draw(prop_oneof!["[a-z0-9_-]{1,64}", "[a-z]{65}", text()]);
    let (document_template, query_template, enabled) = h.draw((
        template("{observation}"),
        template("{query}"),
        any::<bool>(),
    ));
    let perspective = Perspective {
        id: crate::PerspectiveId(0),
        name,
        document_template,
        query_template,
        enabled,
    };
    let mut blame = Blame::default();
    let name_ok = (perspective.name.bytes())
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b));
    blame.unless(
        name_ok && (1..=64).contains(&perspective.name.len()),
        "name",
    );
    for (field, template, placeholder) in [
        (
            "document_template",
            &perspective.document_template,
            "{observation}",
        ),
        ("query_template", &perspective.query_template, "{query}"),
    ] {
        // NUL included: like every text PostgreSQL keeps, a template cannot hold it.
        let ok = (1..=4_096).contains(&template.len()) && !template.contains('\0');
        blame.unless(ok && template.contains(placeholder), field);
    }
    let m = h.memory.clone();
    let call = m.set_perspective(h.ws, &perspective);
    if let Some(set) = h.run("set_perspective", &perspective, &blame, call).await {
        let listed = m.perspectives(h.ws).await.unwrap();
        let stored = listed.iter().find(|p| p.name == perspective.name).unwrap();
        assert_eq!(stored, &set);
        let expected = Perspective {
            id: set.id,
            ..perspective
        };
        assert_eq!(set, expected);
    }
}

async fn tokens(h: &mut Harness, round: u32) {
    let m = h.memory.clone();
    h.case().await;
    let workspace = if h.draw(any::<bool>()) {
        h.ws_name.clone()
    } else {
        workspace_name(h)
    };
    let access = h.draw(select(&[Access::ReadWrite, Access::ReadOnly][..]));
    let (label, expires_at) = h.draw((of(text()), of(timestamp())));
    // Distinct random bytes per case: the id is the first 8.
    let mut random = [7_u8; 40];
    random[..4].copy_from_slice(&round.to_be_bytes());
    let mut blame = blame_name(&workspace);
    blame.unless(label.as_deref().is_none_or(name_ok), "label");
    blame.unless(expires_at.as_ref().is_none_or(timestamp_ok), "expires_at");
    let input = (&workspace, access, &label, expires_at);
    let request = crate::auth::CreateToken::new(&workspace, access)
        .label(label.clone())
        .expires_at(expires_at);
    let call = m.create_token(request, &random);
    if let Some((info, token)) = h.run("create_token", &input, &blame, call).await {
        assert_eq!((&info.workspace, &info.label), (&workspace, &label));
        assert!(m.tokens(None).await.unwrap().contains(&info));
        let now = expires_at.map_or_else(chrono::Utc::now, |at| at.min(chrono::Utc::now()));
        // A token works until it expires (an instant before expiry, here).
        if expires_at.is_none_or(|at| now < at) {
            let granted = m.authenticate(&token, now).await.unwrap();
            assert_eq!(granted.map(|g| g.id), Some(info.id));
        }
    }

    h.case().await;
    let ids: Vec<String> = h.before.tokens.iter().map(|t| t.id.clone()).collect();
    let presented = match h.draw(0..4) {
        0 if !ids.is_empty() => h.draw(select(ids)),
        0 | 1 => h.draw("[0-9a-f]{16}"),
        _ => h.draw(text()),
    };
    let mut blame = Blame::default();
    let shaped = presented.len() == 16 && presented.bytes().all(|b| b.is_ascii_hexdigit());
    blame.unless(shaped || crate::auth::parse(&presented).is_some(), "token");
    let call = m.revoke_token(&presented);
    if h.run("revoke_token", &presented, &blame, call)
        .await
        .is_some()
    {
        // Kept, marked revoked.
        let listed = m.tokens(None).await.unwrap();
        let id = crate::auth::parse(&presented).map_or(presented.as_str(), |(id, _)| id);
        assert!(
            (listed.iter())
                .filter(|t| t.id == id)
                .all(|t| t.revoked_at.is_some()),
            "{listed:?}"
        );
    }
    let call = m.authenticate(&presented, chrono::Utc::now());
    let none = Blame::default();
    let granted = h.run("authenticate", &presented, &none, call).await;
    assert_eq!(granted, Some(None), "{}", short(&presented));
}

/// One node record: a name that often exists, observations with ordinals at the integer
/// limits and timestamps at chrono's, everything else optional.
fn node_record(h: &mut Harness) -> NodeRecord {
    let (name, entity_type) = (h.name(), h.entity_type());
    let observation = (of(ordinal()), text(), of(timestamp()), of(timestamp())).prop_map(
        |(ordinal, content, created_at, updated_at)| ObservationRecord {
            ordinal: ordinal.map(crate::Ordinal),
            content,
            created_at,
            updated_at,
            ..ObservationRecord::default()
        },
    );
    let (summary, tags, next_ordinal) = h.draw((of(text()), vec(tricky(), 0..3), of(ordinal())));
    let times: [Option<Timestamp>; 3] = h.draw([of(timestamp()), of(timestamp()), of(timestamp())]);
    let observations = h.draw(vec(observation, 0..4));
    NodeRecord {
        name,
        entity_type,
        summary,
        summary_updated_at: times[0],
        tags,
        aliases: Vec::new(),
        next_ordinal,
        created_at: times[1],
        updated_at: times[2],
        observations,
    }
}

async fn import(h: &mut Harness) {
    h.case().await;
    let mut nodes: Vec<NodeRecord> = if h.draw(prop::bool::weighted(0.05)) {
        // One too many for a batch.
        let record = node_record(h);
        (0..1_001)
            .map(|i| NodeRecord {
                name: format!("n{i}"),
                ..record.clone()
            })
            .collect()
    } else {
        let len = h.draw(0..4_usize);
        (0..len).map(|_| node_record(h)).collect()
    };
    if nodes.len() > 1 && h.draw(prop::bool::weighted(0.15)) {
        nodes[1].name = nodes[0].name.clone();
    }
    let relations_len = h.draw(0..3_usize);
    let relations: Vec<RelationRecord> = (0..relations_len)
        .map(|_| RelationRecord {
            from: h.name(),
            to: h.name(),
            relation_type: h.draw(prop_oneof![Just("next".to_owned()), text()]),
            created_at: h.draw(of(timestamp())),
            ..RelationRecord::default()
        })
        .collect();

    let mut blame = Blame::default();
    blame.unless(nodes.len() <= 1_000, "import");
    for (i, node) in nodes.iter().enumerate() {
        let at = |field: &str| format!("nodes[{i}].{field}");
        blame.unless(name_ok(&node.name), at("name"));
        blame.unless(name_ok(&node.entity_type), at("entity_type"));
        let summary_ok = node.summary.as_deref().is_none_or(content_ok);
        blame.unless(summary_ok, at("summary"));
        // Ordinals a record gives are 1 to 2^53 − 1, and the counter one more.
        let counter_ok = node.next_ordinal.is_none_or(|n| (1..=1 << 53).contains(&n));
        blame.unless(counter_ok, at("next_ordinal"));
        for (field, time) in [
            ("summary_updated_at", &node.summary_updated_at),
            ("created_at", &node.created_at),
            ("updated_at", &node.updated_at),
        ] {
            blame.unless(time.as_ref().is_none_or(timestamp_ok), at(field));
        }
        for (j, o) in node.observations.iter().enumerate() {
            blame.unless(
                content_ok(&o.content),
                at(&format!("observations[{j}].content")),
            );
            let ordinal_ok = o.ordinal.is_none_or(|n| (1..1 << 53).contains(&n.0));
            blame.unless(ordinal_ok, at(&format!("observations[{j}].ordinal")));
            for (field, time) in [("created_at", &o.created_at), ("updated_at", &o.updated_at)] {
                let time_ok = time.as_ref().is_none_or(timestamp_ok);
                blame.unless(time_ok, at(&format!("observations[{j}].{field}")));
            }
        }
    }
    for (i, r) in relations.iter().enumerate() {
        blame.unless(name_ok(&r.from), format!("relations[{i}].from"));
        blame.unless(name_ok(&r.to), format!("relations[{i}].to"));
        blame.unless(
            name_ok(&r.relation_type),
            format!("relations[{i}].relation_type"),
        );
        let time_ok = r.created_at.as_ref().is_none_or(timestamp_ok);
        blame.unless(time_ok, format!("relations[{i}].created_at"));
    }
    blame.duplicates(nodes.iter().map(|n| &n.name), "nodes", ".name");

    let m = h.memory.clone();
    let input = (&nodes, &relations);
    let batch = ImportBatch {
        nodes: nodes.clone(),
        relations: relations.clone(),
    };
    let call = m.import(h.ws, batch);
    if h.run("import", &input, &blame, call).await.is_none() {
        return;
    }
    let after = h.snapshot().await;
    for record in &nodes {
        let node = after.node(&record.name).expect("imported node");
        let ordinals: Vec<i64> = node
            .observations
            .iter()
            .map(|o| o.ordinal.unwrap().0)
            .collect();
        assert!(ordinals.windows(2).all(|w| w[0] < w[1]), "{}", short(node));
        let next = node.next_ordinal.unwrap_or(i64::MAX);
        assert!(ordinals.iter().all(|&o| o < next), "{}", short(node));
        for o in &record.observations {
            let held = node.observations.iter().any(|n| n.content == o.content);
            assert!(held, "not imported: {}", short(o));
        }
    }
    let links = after.relations();
    for r in &relations {
        if after.node(&r.from).is_some() && after.node(&r.to).is_some() {
            let link = (r.from.clone(), r.relation_type.clone(), r.to.clone());
            assert!(links.contains(&link), "not imported: {}", short(r));
        }
    }
    if after.nodes().count() > 200 {
        h.reseed().await;
    }
}
