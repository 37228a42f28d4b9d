//! The viewer in a real browser: headless Chromium driven over WebDriver (chromedriver, from
//! Debian's `chromium-driver`) against a server with data. It picks a workspace (and finds it
//! remembered), reads the overview (counts, sections, "none" in an empty workspace's), searches
//! (each score on its own result's row, with the matched observation), opens a result and a
//! neighbour, does the same by keyboard, follows the address, the report's lists and the dates
//! (`browser_views`), and loads the page at phone width (no horizontal scrolling). It keeps screenshots of the main screens in `target/tmp/` (`docs/` holds copies).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::scenario::ok;
use crate::server::{Backend, TestServer};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// The W3C WebDriver key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// WebDriver's codes of the keys the viewer answers to besides characters.
const ENTER: &str = "\u{E007}";
const ESCAPE: &str = "\u{E00C}";
const ARROW_DOWN: &str = "\u{E015}";

/// A WebDriver session on a chromedriver child process.
pub(crate) struct Browser {
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
                "--disable-component-update", "--disable-sync", "--window-size=1400,1060",
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

    pub(crate) async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The elements matching `css`, waiting up to 15 s for at least one.
    pub(crate) async fn find_all(&self, css: &str) -> Vec<String> {
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

    pub(crate) async fn text(&self, element: &str) -> String {
        let text = self
            .call(
                reqwest::Method::GET,
                &format!("/element/{element}/text"),
                None,
            )
            .await;
        text.as_str().unwrap_or_default().to_owned()
    }

    pub(crate) async fn text_of(&self, css: &str) -> String {
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

    pub(crate) async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for element in self.find_all(css).await {
            texts.push(self.text(&element).await);
        }
        texts
    }

    pub(crate) async fn click(&self, css: &str) {
        let element = self.find_all(css).await.remove(0);
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let element = self.find_all(css).await.remove(0);
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Waits until the text of `css` satisfies `wanted`.
    pub(crate) async fn wait_for_text(&self, css: &str, wanted: impl Fn(&str) -> bool) -> String {
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

    /// Runs `body` (a function body, `arguments` its arguments) in the page; its result.
    pub(crate) async fn script(&self, body: &str) -> Value {
        let script = json!({"script": body, "args": []});
        (self.call(reqwest::Method::POST, "/execute/sync", Some(script))).await
    }

    /// Waits until the expression `js` is true in the page.
    pub(crate) async fn wait_until(&self, js: &str) {
        let started = Instant::now();
        while self.script(&format!("return !!({js});")).await != json!(true) {
            let status = self.text_of("#status").await;
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "never {js} (status: {status})"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Presses each key in turn (characters, or the codes above) wherever the focus is.
    pub(crate) async fn press(&self, keys: &[&str]) {
        let actions: Vec<Value> = (keys.iter())
            .flat_map(|k| {
                [
                    json!({"type": "keyDown", "value": k}),
                    json!({"type": "keyUp", "value": k}),
                ]
            })
            .collect();
        let body = json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]});
        self.call(reqwest::Method::POST, "/actions", Some(body))
            .await;
    }

    /// The `data-name` of each element matching `css`, in order.
    pub(crate) async fn names(&self, css: &str) -> Vec<String> {
        let js =
            format!("return [...document.querySelectorAll({css:?})].map((e) => e.dataset.name);");
        let names = self.script(&js).await;
        serde_json::from_value(names).unwrap()
    }

    /// Whether the element with this id is shown (its `hidden` attribute unset).
    pub(crate) async fn shown(&self, id: &str) -> bool {
        let js = format!("return !document.getElementById({id:?}).hidden;");
        self.script(&js).await == json!(true)
    }

    /// Checks that the elements matching `css` are stacked: all start at the same left.
    async fn one_column(&self, css: &str) {
        let js = format!(
            "return [...document.querySelectorAll({css:?})]
               .map((e) => Math.round(e.getBoundingClientRect().left));"
        );
        let lefts = self.script(&js).await;
        let lefts = lefts.as_array().unwrap();
        assert!(
            lefts.len() > 1 && lefts.iter().all(|l| *l == lefts[0]),
            "one column: {css} at {lefts:?}"
        );
    }

    /// Saves a screenshot of the window as `ui-{screen}-{backend}.png` in `target/tmp/`.
    async fn keep_screenshot(&self, screen: &str, backend: Backend) {
        let screenshot = self.screenshot().await;
        assert_eq!(&screenshot[1..4], b"PNG");
        let backend = match backend {
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        };
        let name = format!("ui-{screen}-{backend}.png");
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::write(&path, &screenshot).unwrap();
        println!("screenshot: {}", path.display());
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

/// A small team's memory: Alice holds the most observations, engram the most relations.
async fn fill_demo(server: &TestServer) {
    let client = server.streamable_client("demo").await;
    ok(&client, "create_entities", json!({"entities": [
        {"name": "Alice", "entity_type": "person", "summary": "Engineer on the memory team.",
         "tags": ["team"], "observations": ["moved to Lisbon in March", "works on engram's search",
         "prefers written design reviews", "runs the Thursday reading group"]},
        {"name": "Bob", "entity_type": "person",
         "observations": ["reviews Alice's changes", "maintains the PostgreSQL store"]},
        {"name": "Carol", "entity_type": "person",
         "observations": ["leads the memory team", "works from Berlin"]},
        {"name": "engram", "entity_type": "project", "observations": ["a memory server for agents",
         "ships as one binary", "keeps a knowledge graph in PostgreSQL or SQLite"]},
        {"name": "search", "entity_type": "component", "observations": [
         "ranks by embeddings and full text together", "its scores are calibrated probabilities"]},
        {"name": "viewer", "entity_type": "component", "observations": ["a read-only page at /ui"]},
        {"name": "PostgreSQL", "entity_type": "technology", "observations": ["the server-side store, with pgvector"]},
        {"name": "Portugal", "entity_type": "place", "observations": ["a country on the Atlantic"]},
        {"name": "Berlin", "entity_type": "place", "observations": ["the capital of Germany"]},
    ]})).await;
    let relations: Vec<Value> = [
        ("Alice", "engram", "works_on"),
        ("Alice", "search", "works_on"),
        ("Bob", "Alice", "knows"),
        ("Bob", "engram", "works_on"),
        ("Bob", "PostgreSQL", "maintains"),
        ("Carol", "engram", "leads"),
        ("Carol", "Alice", "manages"),
        ("Carol", "Bob", "manages"),
        ("Carol", "Berlin", "lives_in"),
        ("Alice", "Portugal", "lives_in"),
        ("engram", "search", "has_part"),
        ("engram", "viewer", "has_part"),
        ("engram", "PostgreSQL", "uses"),
    ]
    .iter()
    .map(|(from, to, kind)| json!({"from_entity": from, "to_entity": to, "relation_type": kind}))
    .collect();
    ok(&client, "create_relations", json!({"relations": relations})).await;
    client.cancel().await.unwrap();
}

/// The overview API's answer for `workspace`, once its embeddings are current (or after 30 s:
/// the screenshots look better with them, nothing below needs them).
async fn overview_when_indexed(server: &TestServer, workspace: &str) -> Value {
    let started = Instant::now();
    loop {
        let overview: Value = reqwest::Client::new()
            .get(format!("{}/ui/api/overview", server.base))
            .header("X-Memory-Workspace", workspace)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if overview["embedding_coverage"] == json!(1.0) || started.elapsed().as_secs() > 30 {
            return overview;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub async fn the_viewer_searches_opens_a_node_and_walks_to_a_neighbour(backend: Backend) {
    if !std::path::Path::new(CHROMEDRIVER).exists() || !std::path::Path::new(CHROMIUM).exists() {
        println!("skipped: no {CHROMIUM} and {CHROMEDRIVER} (Debian's chromium, chromium-driver)");
        return;
    }
    // "archive", empty, comes first by name: the page must not open on it unasked.
    let server = TestServer::start(backend, &["archive", "curation", "demo"]).await;
    fill_demo(&server).await;
    crate::browser_views::fill_curation(&server).await;
    overview_when_indexed(&server, "curation").await;
    let overview = overview_when_indexed(&server, "demo").await;
    assert_eq!(
        (
            &overview["nodes"],
            &overview["observations"],
            &overview["relations"]
        ),
        (&json!(9), &json!(17), &json!(13)),
        "{overview}"
    );
    assert_eq!(
        overview["largest"][0],
        json!({"name": "Alice", "entity_type": "person", "observations": 4})
    );
    assert_eq!(
        overview["connected"][0],
        json!({"name": "engram", "entity_type": "project", "relations": 6})
    );
    assert_eq!(overview["complete"], true);

    let browser = Browser::start().await;
    workspace_picker_and_overview(&browser, &server, backend).await;
    search_and_walk(&browser, backend).await;
    keyboard(&browser, backend).await;
    crate::browser_views::address_report_and_dates(&browser, &server).await;
    phone(&browser, &server, backend).await;
    browser.call(reqwest::Method::DELETE, "", None).await;
}

/// No workspace named and none remembered: a picker, not the first workspace by name; the
/// one picked goes into the URL and is remembered; `?workspace=` opens another; the overview
/// holds the counts and lists, and an empty workspace's sections say "none".
async fn workspace_picker_and_overview(browser: &Browser, server: &TestServer, backend: Backend) {
    browser.open(&format!("{}/", server.base)).await;
    browser
        .wait_until("document.querySelector('#picker li.pick')")
        .await;
    assert!(browser.shown("picker-view").await);
    assert!(!browser.shown("overview-view").await);
    assert_eq!(
        browser.names("#picker li.pick").await,
        ["archive", "curation", "demo"]
    );
    browser.click("#picker li[data-name='demo']").await;
    browser
        .wait_for_text("#overview-title", |t| t == "demo")
        .await;
    assert_eq!(
        browser.script("return location.search;").await,
        "?workspace=demo"
    );
    assert_eq!(
        browser
            .script("return localStorage.getItem('engram-workspace');")
            .await,
        "demo"
    );

    // Remembered: the bare address opens it again.
    browser.open(&format!("{}/ui", server.base)).await;
    browser
        .wait_for_text("#overview-title", |t| t == "demo")
        .await;
    let count = |key: &str| format!("#counts dd[data-key='{key}']");
    assert_eq!(
        browser
            .wait_for_text(&count("nodes"), |t| !t.is_empty())
            .await,
        "9"
    );
    assert_eq!(browser.text_of(&count("observations")).await, "17");
    assert_eq!(browser.text_of(&count("relations")).await, "13");
    assert!(
        browser
            .text_of(&count("embedding coverage"))
            .await
            .contains('%')
    );
    let recent = browser.names("#recent li.pick").await;
    assert_eq!(recent.len(), 8, "{recent:?}");
    assert_eq!(browser.names("#largest li.pick").await[0], "Alice");
    assert!(browser.text_of("#largest li.pick").await.contains("4 obs."));
    assert_eq!(
        browser.names("#connected li.pick").await[..2],
        ["engram", "Alice"]
    );
    browser.find_all("#overview-graph canvas").await;
    browser.keep_screenshot("overview", backend).await;

    // At 1280 px no type label wraps ("decisio/n"): each is one line box.
    let rect = json!({"width": 1280, "height": 900});
    browser
        .call(reqwest::Method::POST, "/window/rect", Some(rect))
        .await;
    let wrapped = "return [...document.querySelectorAll('.type')].filter((e) => { \
        const r = document.createRange(); r.selectNodeContents(e); \
        return r.getClientRects().length > 1; }).map((e) => e.textContent);";
    assert_eq!(browser.script(wrapped).await, json!([]), "type labels wrap");
    // However long the name beside it: the name gives way, never the type.
    let kept_whole = "return [...document.querySelectorAll('.type')].every((e) => { \
        const s = getComputedStyle(e); return s.whiteSpace === 'nowrap' && s.flexShrink === '0'; });";
    assert_eq!(browser.script(kept_whole).await, true);
    // The consolidation tab says the indexer's figures in words, coverage as a percentage.
    browser.click("#show-report").await;
    let coverage = browser
        .wait_for_text("#indexer dd[data-key='embedding coverage']", |t| {
            !t.is_empty()
        })
        .await;
    assert!(coverage.ends_with('%'), "{coverage}");
    let terms = browser.texts("#indexer dt").await;
    assert!(terms.iter().any(|t| t == "texts embedded"), "{terms:?}");
    assert!(!terms.iter().any(|t| t.contains("pairs")), "{terms:?}");
    browser.click("#show-overview").await;
    // The icon browsers ask for is there.
    let icon = reqwest::get(format!("{}/favicon.ico", server.base))
        .await
        .unwrap();
    assert_eq!(icon.status(), 200);
    assert_eq!(icon.headers()["content-type"], "image/svg+xml");

    // Named in the URL: the empty workspace, every list saying so.
    browser
        .open(&format!("{}/ui?workspace=archive", server.base))
        .await;
    browser
        .wait_for_text("#overview-title", |t| t == "archive")
        .await;
    assert_eq!(
        browser
            .wait_for_text(&count("nodes"), |t| !t.is_empty())
            .await,
        "0"
    );
    for list in ["#recent", "#largest", "#connected"] {
        assert_eq!(
            browser.texts(&format!("{list} li")).await,
            ["none"],
            "{list}"
        );
    }
    assert!(!browser.shown("overview-graph").await);
    browser
        .open(&format!("{}/ui?workspace=demo", server.base))
        .await;
    browser
        .wait_for_text("#overview-title", |t| t == "demo")
        .await;
    // The page carried that first view: no overview was asked of the API, and the lists were
    // filled from what the server put in the page.
    let asked = "return performance.getEntriesByType('resource')\
        .filter((e) => e.name.includes('/ui/api/overview')).length;";
    assert_eq!(browser.script(asked).await, json!(0));
    assert_eq!(browser.names("#largest li.pick").await[0], "Alice");
    // At 1280 px the graph's labels are as large on screen as in the lists' small print
    // (12 px names, 10 px relation types), however far the layout zoomed out to fit.
    let rendered = "const cy = document.getElementById('overview-graph')._cyreg.cy; \
        const px = (e) => e.numericStyle('font-size') * cy.zoom(); \
        return { zoom: cy.zoom(), node: Math.min(...cy.nodes().map(px)), \
                 edge: Math.min(...cy.edges().map(px)) };";
    (browser.wait_until("document.querySelector('#overview-graph canvas')")).await;
    let sizes = browser.script(rendered).await;
    let size = |key: &str| sizes[key].as_f64().unwrap_or_else(|| panic!("{sizes}"));
    let (node, edge) = (size("node"), size("edge"));
    assert!(
        node >= 11.9 && edge >= 9.9,
        "labels too small on screen: {sizes}"
    );
}

/// A search lays out each result as one row (name, type, score on the same line, the
/// matched observation under it); a result opens its node, a neighbour opens in turn.
async fn search_and_walk(browser: &Browser, backend: Backend) {
    browser.type_into("#query", "Lisbon").await;
    browser.click("#search-form button").await;
    browser.find_all("#results li.result").await;
    let rows = browser
        .script(
            "return [...document.querySelectorAll('#results li.result')].map((li) => {
               const box = (e) => e ? e.getBoundingClientRect() : null;
               const [row, name, score] = [li, li.querySelector('.name'), li.querySelector('.score')].map(box);
               return { name: li.dataset.name, score: score && li.querySelector('.score').textContent,
                 matched: li.querySelector('.matched')?.textContent ?? null,
                 inside: !!score && score.top >= row.top && score.bottom <= row.bottom
                   && score.left >= row.left && score.right <= row.right,
                 same_line: !!score && !!name && score.top < name.bottom && name.top < score.bottom };
             });",
        )
        .await;
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(
            (&row["inside"], &row["same_line"]),
            (&json!(true), &json!(true)),
            "{row}"
        );
        let score: f64 = row["score"].as_str().unwrap().parse().unwrap();
        assert!((0.0..=1.0).contains(&score), "{row}");
        assert!(!row["matched"].as_str().unwrap().is_empty(), "{row}");
    }
    let alice = rows
        .iter()
        .find(|r| r["name"] == "Alice")
        .expect("Alice is found");
    assert_eq!(alice["matched"], "moved to Lisbon in March");

    browser.click("#results li.result[data-name='Alice']").await;
    browser.wait_for_text("#node-name", |t| t == "Alice").await;
    assert_eq!(
        browser.texts("#observations li").await,
        [
            "moved to Lisbon in March",
            "works on engram's search",
            "prefers written design reviews",
            "runs the Thursday reading group"
        ]
    );
    assert_eq!(
        browser.text_of("#node-summary").await,
        "Engineer on the memory team."
    );
    assert_eq!(browser.names("#results li.open").await, ["Alice"]);
    let mut neighbours = browser.names("#neighbours li.pick").await;
    neighbours.sort();
    assert_eq!(neighbours, ["Bob", "Carol", "Portugal", "engram", "search"]);
    let engram = browser
        .text_of("#neighbours li[data-name='engram'] .relation")
        .await;
    assert_eq!(engram, "works_on →");
    // Its history, newest first, says who wrote each entry (this test's client is local).
    let history = browser.texts("#history li").await;
    assert!(
        history
            .iter()
            .any(|h| h.starts_with("created") && h.ends_with("by local")),
        "{history:?}"
    );
    assert!(
        history
            .iter()
            .any(|h| h.contains("observation added: moved to Lisbon in March")),
        "{history:?}"
    );
    browser.find_all("#graph canvas").await;
    browser.keep_screenshot("node", backend).await;

    browser.click("#neighbours li[data-name='engram']").await;
    browser.wait_for_text("#node-name", |t| t == "engram").await;
    assert_eq!(
        browser.texts("#observations li").await[0],
        "a memory server for agents"
    );
}

/// `/` focuses the search, Enter searches, the arrow keys and j/k move through the results
/// with a visible focus, Enter opens one, Escape returns to the overview.
async fn keyboard(browser: &Browser, backend: Backend) {
    browser.press(&[ESCAPE]).await;
    browser
        .wait_until("!document.getElementById('overview-view').hidden")
        .await;
    browser.press(&["/"]).await;
    assert_eq!(
        browser.script("return document.activeElement.id;").await,
        "query"
    );
    // The field holds the last query, selected: typing replaces it.
    let query: Vec<String> = "PostgreSQL".chars().map(String::from).collect();
    let mut keys: Vec<&str> = query.iter().map(String::as_str).collect();
    keys.push(ENTER);
    browser.press(&keys).await;
    browser.wait_until("!document.getElementById('explore-view').hidden && /result/.test(document.getElementById('status').textContent)").await;
    let results = browser.names("#results li.result").await;
    assert!(results.len() >= 2, "{results:?}");
    let focused = "return document.activeElement.dataset.name ?? null;";
    browser.press(&[ARROW_DOWN]).await;
    assert_eq!(browser.script(focused).await, results[0].as_str());
    let outline = browser
        .script("return getComputedStyle(document.activeElement).outlineStyle;")
        .await;
    assert_ne!(outline, "none", "the focused result shows it");
    browser.keep_screenshot("search", backend).await;
    browser.press(&["j"]).await;
    assert_eq!(browser.script(focused).await, results[1].as_str());
    browser.press(&["k"]).await;
    assert_eq!(browser.script(focused).await, results[0].as_str());
    browser.press(&[ENTER]).await;
    let first = results[0].clone();
    browser.wait_for_text("#node-name", |t| t == first).await;
    browser.press(&[ESCAPE]).await;
    browser
        .wait_until("!document.getElementById('overview-view').hidden")
        .await;
}

/// At 390 px wide: one column and nothing wider than the window, on the overview and on a node.
async fn phone(browser: &Browser, server: &TestServer, backend: Backend) {
    let rect = json!({"width": 390, "height": 844});
    browser
        .call(reqwest::Method::POST, "/window/rect", Some(rect))
        .await;
    browser
        .open(&format!("{}/ui?workspace=demo", server.base))
        .await;
    browser.find_all("#overview-graph canvas").await;
    let width = browser.script("return window.innerWidth;").await;
    assert!(width.as_u64().unwrap() <= 400, "window {width}");
    let fits =
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth;";
    assert_eq!(browser.script(fits).await, true, "no horizontal scrolling");
    browser.one_column("#overview-view > section").await;
    browser.keep_screenshot("phone", backend).await;

    browser.type_into("#query", "Lisbon").await;
    browser.click("#search-form button").await;
    browser.click("#results li.result[data-name='Alice']").await;
    browser.wait_for_text("#node-name", |t| t == "Alice").await;
    assert_eq!(
        browser.script(fits).await,
        true,
        "no horizontal scrolling on a node"
    );
    browser.one_column("#explore-view > section").await;
}
