//! The viewer in a real browser: headless Chromium driven over WebDriver (chromedriver, from
//! Debian's `chromium-driver`) loads `/ui`, searches, opens a node, checks its observations
//! and neighbours, walks to a neighbour, and keeps a screenshot in `target/`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::scenario::ok;
use crate::server::{Backend, TestServer};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A WebDriver session on a chromedriver child process.
struct Browser {
    http: reqwest::Client,
    session: String,
    _driver: tokio::process::Child,
}

impl Browser {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = tokio::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting chromedriver");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap().keep();
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                format!("--user-data-dir={}", profile.display()),
            ]},
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"));
        Self {
            session: format!("{base}/session/{session}"),
            http,
            _driver: driver,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        answer["value"].clone()
    }

    async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The elements matching `css`, waiting up to 15 s for at least one.
    async fn find_all(&self, css: &str) -> Vec<String> {
        let started = Instant::now();
        loop {
            let found = self
                .call(
                    reqwest::Method::POST,
                    "/elements",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            let ids: Vec<String> = (found.as_array().into_iter().flatten())
                .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
                .collect();
            if !ids.is_empty() {
                return ids;
            }
            let status = self.text_of("#status").await;
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "no {css} (status: {status})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn text(&self, element: &str) -> String {
        let text = self
            .call(
                reqwest::Method::GET,
                &format!("/element/{element}/text"),
                None,
            )
            .await;
        text.as_str().unwrap_or_default().to_owned()
    }

    async fn text_of(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        match found[ELEMENT].as_str() {
            Some(element) => self.text(element).await,
            None => String::new(),
        }
    }

    async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.find_all(css).await {
            texts.push(self.text(&element).await);
        }
        texts
    }

    async fn click(&self, css: &str) {
        let element = self.find_all(css).await.remove(0);
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    async fn type_into(&self, css: &str, text: &str) {
        let element = self.find_all(css).await.remove(0);
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Waits until the text of `css` satisfies `wanted`.
    async fn wait_for_text(&self, css: &str, wanted: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let text = self.text_of(css).await;
            if wanted(&text) {
                return text;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{css} stayed {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn screenshot(&self) -> Vec<u8> {
        use std::io::Read;
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let encoded = encoded.as_str().expect("a base64 PNG");
        let mut decoded = Vec::new();
        base64_decode(encoded.as_bytes())
            .read_to_end(&mut decoded)
            .unwrap();
        decoded
    }
}

/// Standard base64 (the screenshot), without a crate for one test.
fn base64_decode(text: &[u8]) -> std::io::Cursor<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> = text
        .iter()
        .copied()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let n = chunk
            .iter()
            .fold(0u32, |n, c| (n << 6) | u32::from(value(*c)))
            << (6 * (4 - chunk.len()));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    std::io::Cursor::new(out)
}

pub async fn the_viewer_searches_opens_a_node_and_walks_to_a_neighbour(backend: Backend) {
    if !std::path::Path::new(CHROMEDRIVER).exists() || !std::path::Path::new(CHROMIUM).exists() {
        println!("skipped: no {CHROMIUM} and {CHROMEDRIVER} (Debian's chromium, chromium-driver)");
        return;
    }
    let server = TestServer::start(backend, &["demo"]).await;
    let client = server.streamable_client("demo").await;
    ok(&client, "create_entities", json!({"entities": [
        {"name": "Alice", "entity_type": "person", "summary": "Engineer on the memory team.",
         "tags": ["team"], "observations": ["moved to Lisbon in March", "works on engram's search"]},
        {"name": "engram", "entity_type": "project", "observations": ["a memory server for agents"]},
        {"name": "Bob", "entity_type": "person", "observations": ["reviews Alice's changes"]},
    ]})).await;
    ok(
        &client,
        "create_relations",
        json!({"relations": [
            {"from_entity": "Alice", "to_entity": "engram", "relation_type": "works_on"},
            {"from_entity": "Bob", "to_entity": "Alice", "relation_type": "knows"},
        ]}),
    )
    .await;
    client.cancel().await.unwrap();

    let browser = Browser::start().await;
    browser.open(&format!("{}/ui", server.base)).await;
    browser.find_all("#workspace option").await;
    browser.type_into("#query", "Lisbon").await;
    browser.click("#search-form button").await;
    let first = browser
        .wait_for_text("#results li.result", |t| !t.is_empty())
        .await;
    assert!(first.starts_with("Alice"), "{first}");
    browser.click("#results li.result").await;
    browser.wait_for_text("#node-name", |t| t == "Alice").await;
    let observations = browser.texts("#observations li").await;
    assert_eq!(
        observations,
        ["moved to Lisbon in March", "works on engram's search"]
    );
    assert_eq!(
        browser.text_of("#node-summary").await,
        "Engineer on the memory team."
    );
    let neighbours = browser.texts("#neighbours li").await;
    assert!(
        neighbours.iter().any(|n| n.starts_with("engram")),
        "{neighbours:?}"
    );
    assert!(
        neighbours.iter().any(|n| n.starts_with("Bob")),
        "{neighbours:?}"
    );
    // The graph is drawn (a canvas inside the container).
    browser.find_all("#graph canvas").await;
    let screenshot = browser.screenshot().await;
    assert_eq!(&screenshot[1..4], b"PNG");
    let name = format!(
        "ui-{}.png",
        if backend == Backend::Postgres {
            "postgres"
        } else {
            "sqlite"
        }
    );
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, &screenshot).unwrap();
    println!("screenshot: {}", path.display());

    // Walk on: a neighbour opens in turn.
    browser.click("#neighbours li[data-name='engram']").await;
    browser.wait_for_text("#node-name", |t| t == "engram").await;
    assert_eq!(
        browser.texts("#observations li").await,
        ["a memory server for agents"]
    );
    browser.call(reqwest::Method::DELETE, "", None).await;
}
