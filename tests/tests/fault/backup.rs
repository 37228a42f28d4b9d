//! `engram backup` of a SQLite store while a server writes to it, then `engram restore` into
//! a new file: every write acknowledged before the backup started is in the restored store,
//! which is consistent and served as any other; a restore into a store that holds data is
//! refused.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{Backend, Embedder, Figures, Graph, Server, Store, binary, bounded};

pub async fn a_backup_taken_under_writes_restores_every_acknowledged_write() {
    bounded(Duration::from_secs(180), async {
        let store = Store::fresh(Backend::Sqlite).await;
        let server = Server::start(&store, &Embedder::None, "server").await;
        let writer = server.client().await;
        // Each acknowledged node with when its acknowledgement came.
        let acknowledged: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writing = tokio::spawn({
            let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
            async move {
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    let name = format!("node-{i:05}");
                    let entity = json!({"name": name, "entity_type": "note",
                        "observations": [format!("fact {i} written under a backup")]});
                    writer
                        .ok("create_entities", json!({"entities": [entity]}))
                        .await;
                    acknowledged.lock().unwrap().push((name, Instant::now()));
                    i += 1;
                }
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        let copy = store.dir.join("backup.db");
        let copy_path = copy.display().to_string();
        let started = Instant::now();
        let backed_up = binary::run_ok(&["backup", &copy_path], &store.url).await;
        let took = started.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.store(true, std::sync::atomic::Ordering::Release);
        writing.await.unwrap();
        let said = String::from_utf8_lossy(&backed_up.stdout).into_owned();
        assert!(
            said.contains("backed up") && said.contains("backup.db"),
            "{said}"
        );
        // A backup never overwrites.
        let again = binary::run(&["backup", &copy_path], &store.url).await;
        assert!(!again.status.success());
        assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));

        let restored_path = store.dir.join("restored.db").display().to_string();
        binary::run_ok(&["restore", &copy_path], &restored_path).await;
        let restored = Store {
            url: restored_path.clone(),
            workspace: store.workspace,
            dir: store.dir.clone(),
        };
        let server = Server::start(&restored, &Embedder::None, "restored").await;
        let graph = Graph::read(&server.client().await).await;
        graph.assert_consistent();
        let acknowledged = acknowledged.lock().unwrap().clone();
        let before: Vec<&String> = (acknowledged.iter())
            .filter(|(_, at)| *at < started)
            .map(|(name, _)| name)
            .collect();
        let missing: Vec<&&String> = (before.iter())
            .filter(|name| !graph.nodes.contains_key(name.as_str()))
            .collect();
        assert!(
            before.len() > 10,
            "{} writes before the backup",
            before.len()
        );
        assert!(
            missing.is_empty(),
            "acknowledged but not restored: {missing:?}"
        );
        // Into a store a server serves: refused.
        let refused = binary::run(&["restore", &copy_path], &restored_path).await;
        assert!(!refused.status.success());
        let told = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(told.contains("an engram server is serving"), "{told}");
        // Into a store that holds data: refused, nothing changed.
        let mut server = server;
        server.kill9().await;
        let refused = binary::run(&["restore", &copy_path], &restored_path).await;
        assert!(!refused.status.success());
        let told = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert!(told.contains("restored into an empty store"), "{told}");
        Figures::new("a backup under writes")
            .add("acknowledged before it", before.len())
            .add("acknowledged in all", acknowledged.len())
            .add("restored nodes", graph.nodes.len())
            .add("backup s", format!("{:.2}", took.as_secs_f64()))
            .print();
    })
    .await;
}
