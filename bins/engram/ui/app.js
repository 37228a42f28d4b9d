// engram's read-only viewer: search a workspace, open a node, walk its neighbourhood, and
// read the consolidation report. Talks to the JSON API under /ui/api with the workspace in
// X-Memory-Workspace and, when the server requires one, the token as a bearer.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { workspace: null, token: sessionStorage.getItem("engram-token") || "" };
let graph = null;

function status(text) { $("status").textContent = text; }

async function api(path, params = {}) {
  const url = new URL(`/ui/api/${path}`, location.origin);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const headers = {};
  if (state.workspace) headers["X-Memory-Workspace"] = state.workspace;
  if (state.token) headers["Authorization"] = `Bearer ${state.token}`;
  const response = await fetch(url, { headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = body.error?.message || body.error || response.statusText;
    if (response.status === 401) $("token-box").open = true;
    throw new Error(message);
  }
  return body;
}

function item(list, text, onClick, extra) {
  const li = document.createElement("li");
  li.textContent = text;
  if (extra) { const span = document.createElement("span"); span.className = extra.className; span.textContent = extra.text; li.append(" ", span); }
  if (onClick) li.addEventListener("click", onClick);
  list.append(li);
  return li;
}

async function loadWorkspaces() {
  const { workspaces } = await api("workspaces");
  const select = $("workspace");
  select.replaceChildren();
  for (const w of workspaces) {
    const option = document.createElement("option");
    option.value = option.textContent = w.name;
    select.append(option);
  }
  const wanted = new URLSearchParams(location.search).get("workspace");
  state.workspace = workspaces.some((w) => w.name === wanted) ? wanted : (workspaces[0]?.name ?? null);
  select.value = state.workspace ?? "";
  status(workspaces.length ? `${workspaces.length} workspace(s)` : "no workspace yet");
}

async function search(query) {
  status(`searching ${state.workspace} …`);
  const found = await api("search", { q: query, limit: 20 });
  const list = $("results");
  list.replaceChildren();
  for (const hit of found.results) {
    const li = item(list, hit.name, () => openNode(hit.name), { className: "score", text: hit.score.toFixed(2) });
    li.dataset.name = hit.name;
    li.classList.add("result");
  }
  status(`${found.results.length} result(s), ${found.mode}${found.notice ? ` (${found.notice})` : ""}`);
}

function ensureGraph() {
  if (graph || typeof cytoscape === "undefined") return graph;
  graph = cytoscape({
    container: $("graph"),
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 10, "background-color": "#2f6db5", color: "#1d232a", "text-valign": "bottom", "text-margin-y": 4 } },
      { selector: "node.focus", style: { "background-color": "#d9822b" } },
      { selector: "edge", style: { label: "data(label)", "font-size": 8, width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#9aa7b4", "target-arrow-color": "#9aa7b4", color: "#5b6673" } },
    ],
  });
  graph.on("tap", "node", (event) => openNode(event.target.id()));
  return graph;
}

function draw(centre, around) {
  const cy = ensureGraph();
  if (!cy) return;
  for (const n of around.nodes) {
    if (cy.getElementById(n.name).empty()) cy.add({ group: "nodes", data: { id: n.name, label: n.name } });
  }
  for (const r of around.relations ?? []) {
    const id = `${r.from}\u0000${r.relation_type}\u0000${r.to}`;
    if (cy.getElementById(id).empty()) cy.add({ group: "edges", data: { id, source: r.from, target: r.to, label: r.relation_type } });
  }
  cy.nodes().removeClass("focus");
  cy.getElementById(centre).addClass("focus");
  cy.layout({ name: "cose", animate: false }).run();
}

async function openNode(name) {
  status(`opening ${name} …`);
  const { node, neighborhood } = await api("node", { name });
  $("node-name").textContent = node.name;
  $("node-type").textContent = node.entity_type;
  $("node-summary").textContent = node.summary ?? "";
  $("node-tags").textContent = node.tags?.length ? `tags: ${node.tags.join(", ")}` : "";
  const observations = $("observations");
  observations.replaceChildren();
  for (const o of node.observations) item(observations, o.content).value = o.ordinal;
  const neighbours = $("neighbours");
  neighbours.replaceChildren();
  for (const n of neighborhood.nodes.filter((n) => n.name !== node.name)) {
    const li = item(neighbours, n.name, () => openNode(n.name), { className: "type", text: n.entity_type });
    li.dataset.name = n.name;
  }
  draw(node.name, neighborhood);
  status(`${node.name}: ${node.observations.length} observation(s), ${neighborhood.nodes.length - 1} neighbour(s)`);
}

async function showReport() {
  status("reading the consolidation report …");
  const [report, indexer] = await Promise.all([api("report"), api("indexer")]);
  const dl = $("indexer");
  dl.replaceChildren();
  for (const [k, v] of Object.entries(indexer)) {
    if (k === "failed_texts") continue;
    const dt = document.createElement("dt"); dt.textContent = k.replaceAll("_", " ");
    const dd = document.createElement("dd"); dd.textContent = typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : String(v);
    dl.append(dt, dd);
  }
  const failed = $("failed"); failed.replaceChildren();
  for (const t of indexer.failed_texts ?? []) {
    const li = item(failed, `${t.name} #${t.ordinal} (${t.perspective})`, () => { showGraph(); openNode(t.name); });
    const p = document.createElement("div"); p.className = "draft"; p.textContent = t.reason; li.append(p);
  }
  if (!(indexer.failed_texts ?? []).length) item(failed, "none");
  const stale = $("stale"); stale.replaceChildren();
  for (const s of report.stale_summaries ?? []) {
    const li = item(stale, s.name, () => { showGraph(); openNode(s.name); });
    if (s.draft_summary) { const p = document.createElement("div"); p.className = "draft"; p.textContent = s.draft_summary; li.append(p); }
  }
  const candidates = $("candidates"); candidates.replaceChildren();
  for (const c of report.relation_candidates ?? []) {
    const li = item(candidates, `${c.node_a} ↔ ${c.node_b} (${c.similarity_score.toFixed(2)})`);
    if (c.rationale) { const p = document.createElement("div"); p.className = "draft"; p.textContent = c.rationale; li.append(p); }
  }
  const clusters = $("clusters"); clusters.replaceChildren();
  for (const c of report.cluster_summary ?? []) item(clusters, `${c.centroid_label ?? `cluster ${c.cluster_id}`}: ${c.node_names.join(", ")}`);
  const events = $("events"); events.replaceChildren();
  for (const [k, v] of Object.entries(report.event_summary ?? {})) {
    const dt = document.createElement("dt"); dt.textContent = k.replaceAll("_", " ");
    const dd = document.createElement("dd"); dd.textContent = typeof v === "object" ? JSON.stringify(v) : String(v);
    events.append(dt, dd);
  }
  status("consolidation report");
}

function showGraph() {
  $("graph-view").hidden = false; $("report-view").hidden = true;
  $("show-graph").classList.add("active"); $("show-report").classList.remove("active");
}

function fail(error) { status(`error: ${error.message}`); }

$("search-form").addEventListener("submit", (event) => { event.preventDefault(); const q = $("query").value.trim(); if (q) search(q).catch(fail); });
$("workspace").addEventListener("change", (event) => { state.workspace = event.target.value; graph?.elements().remove(); });
$("show-graph").addEventListener("click", showGraph);
$("show-report").addEventListener("click", () => {
  $("graph-view").hidden = true; $("report-view").hidden = false;
  $("show-report").classList.add("active"); $("show-graph").classList.remove("active");
  showReport().catch(fail);
});
$("save-token").addEventListener("click", () => {
  state.token = $("token").value.trim();
  sessionStorage.setItem("engram-token", state.token);
  loadWorkspaces().catch(fail);
});

loadWorkspaces().catch(fail);
