// engram's read-only viewer: a workspace at a glance, search, a node with its neighbourhood,
// and the consolidation report. Talks to the JSON API under /ui/api with the workspace in
// X-Memory-Workspace and, when the server requires one, the token as a bearer. Every text
// from the store goes in through textContent (or a canvas label), never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const REMEMBERED = "engram-workspace";
const state = { workspaces: [], workspace: null, query: "", token: sessionStorage.getItem("engram-token") || "" };
const graphs = {};
// The overview the server put in the page (`/ui?workspace=…` on a server without tokens), shown
// before anything is asked of the API; `null` once shown or when there is none.
let firstView = (() => {
  const data = document.getElementById("first-view");
  return data ? JSON.parse(data.textContent) : null;
})();

function status(text) { $("status").textContent = text; }

// Each view asked for takes a ticket; an answer that arrives after a newer view was asked for
// is dropped, so a slow report never paints over the search a person went on to.
let tickets = 0;
const ticket = () => ++tickets;
const stale = (mine) => mine !== tickets;
function fail(error) { status(`error: ${error.message}`); }

async function api(path, params = {}) {
  const url = new URL(`/ui/api/${path}`, location.origin);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const headers = {};
  if (state.workspace) headers["X-Memory-Workspace"] = state.workspace;
  if (state.token) headers["Authorization"] = `Bearer ${state.token}`;
  const response = await fetch(url, { headers });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    if (response.status === 401) $("token-box").open = true;
    throw new Error(body.error?.message || body.error || response.statusText);
  }
  return body;
}

// --- building blocks -------------------------------------------------------------------

/** An element with a class and a text (as text, never HTML). */
function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

/** Fills `list` with `render(item)` for each item, or a "none" item when there is none. */
function fill(list, items, render) {
  list.replaceChildren(...(items ?? []).map(render));
  if (!list.children.length) list.append(el(list.tagName === "DL" ? "dd" : "li", "none", "none"));
}

/** A focusable list item that opens node `name` (or runs `open`) on click or Enter. */
function pick(name, open = () => openNode(name).catch(fail)) {
  const li = el("li", "pick");
  li.tabIndex = 0;
  li.dataset.name = name;
  li.addEventListener("click", open);
  return li;
}

/** One line: a node's name, its type and, at the end of the same line, a figure. */
function line(name, type, figure, figureClass = "figure") {
  const div = el("div", "line");
  div.append(el("span", "name", name), el("span", "type", type));
  if (figure !== undefined) div.append(el("span", figureClass, figure));
  return div;
}

/** Terms and their values into a <dl>, or "none". */
function terms(dl, pairs) {
  dl.replaceChildren();
  for (const [term, value] of pairs) {
    const dd = el("dd", "", value);
    dd.dataset.key = term;
    dl.append(el("dt", "", term), dd);
  }
  if (!pairs.length) dl.append(el("dd", "none", "none"));
}

/** A time as a person reads it, in the browser's language and zone: "7 Dec 2026, 11:16"; a
 * day alone ("1 Mar 2026") for a fact dated by its day (midnight UTC). */
function when(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return String(iso);
  const day = { day: "numeric", month: "short", year: "numeric" };
  if (/^\d{4}-\d\d-\d\d(T00:00(:00(\.0+)?)?Z)?$/.test(iso)) return t.toLocaleDateString(undefined, { ...day, timeZone: "UTC" });
  return t.toLocaleString(undefined, { ...day, hour: "2-digit", minute: "2-digit" });
}

/** How long ago: "just now", "5 min ago", "3 h ago", "2 d ago", past a month the day. */
function ago(iso) {
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (!(s >= 0)) return when(iso);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return s < 30 * 86400 ? `${Math.floor(s / 86400)} d ago` : when(iso);
}

const score = (x) => (x >= 0.01 || x === 0 ? x.toFixed(2) : x.toPrecision(1));

// --- views -----------------------------------------------------------------------------

function show(view) {
  for (const v of ["picker", "overview", "explore", "report"]) $(`${v}-view`).hidden = v !== view;
  $("show-overview").classList.toggle("active", view === "overview");
  $("show-report").classList.toggle("active", view === "report");
  requestAnimationFrame(() => { for (const [id, cy] of Object.entries(graphs)) if ($(id).offsetParent) cy.resize(); });
}

// Labels keep their size on screen whatever the zoom (the layout fits the graph to its box,
// which shrinks a large graph): node names at 12 px, cut with an ellipsis past 14 em, relation
// types at 10 px, on a white band.
const NODE_LABEL_PX = 12;
const EDGE_LABEL_PX = 10;
/** The graphs' style at `zoom`: labels divided by it, so that they keep their size on screen. */
function graphStyle(zoom) {
  return [
    { selector: "node", style: { label: "data(label)", "font-size": NODE_LABEL_PX / zoom, "text-wrap": "ellipsis", "text-max-width": (14 * NODE_LABEL_PX) / zoom, width: "mapData(weight, 1, 8, 14, 34)", height: "mapData(weight, 1, 8, 14, 34)", "background-color": "#2f6db5", color: "#1d232a", "text-valign": "bottom", "text-margin-y": 4 / zoom, "text-background-color": "#fff", "text-background-opacity": 0.8, "text-background-padding": 1 } },
    { selector: "node.focus", style: { "background-color": "#d9822b" } },
    { selector: "edge", style: { label: "data(label)", "font-size": EDGE_LABEL_PX / zoom, width: 1.5, "curve-style": "bezier", "target-arrow-shape": "triangle", "line-color": "#9aa7b4", "target-arrow-color": "#9aa7b4", color: "#5b6673", "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.85, "text-background-padding": 1 } },
  ];
}

/** Re-sets the labels of `cy` for its zoom (the stylesheet replaced, not added to). */
function keepLabelsReadable(cy) {
  cy.style().fromJson(graphStyle(cy.zoom())).update();
}

/** Draws `nodes` ({name, relations?}) and the relations among them in container `id`. */
function draw(id, nodes, relations, focus) {
  if (typeof cytoscape === "undefined") return;
  if (!graphs[id]) {
    graphs[id] = cytoscape({ container: $(id), style: graphStyle(1), minZoom: 0.2, maxZoom: 1.6 });
    graphs[id].on("tap", "node", (event) => openNode(event.target.id()).catch(fail));
    graphs[id].on("zoom", () => keepLabelsReadable(graphs[id]));
  }
  const cy = graphs[id];
  cy.elements().remove();
  const names = new Set(nodes.map((n) => n.name));
  cy.add(nodes.map((n) => ({ group: "nodes", data: { id: n.name, label: n.name, weight: n.relations ?? 1 } })));
  cy.add(relations.filter((r) => names.has(r.from) && names.has(r.to))
    .map((r, i) => ({ group: "edges", data: { id: `e${i}`, source: r.from, target: r.to, label: r.relation_type } })));
  if (focus) cy.getElementById(focus).addClass("focus");
  cy.resize();
  cy.layout({ name: "cose", animate: false, padding: 24, idealEdgeLength: () => 90, nodeRepulsion: () => 200000 }).run();
  keepLabelsReadable(cy);
}

// --- workspaces ------------------------------------------------------------------------

/** The workspace from the token (the only one listed), the URL, or this browser's last. */
async function loadWorkspaces() {
  const { workspaces } = await api("workspaces");
  state.workspaces = workspaces;
  const names = workspaces.map((w) => w.name);
  $("workspace").replaceChildren(new Option("choose …", ""), ...names.map((n) => new Option(n, n)));
  const wanted = new URLSearchParams(location.search).get("workspace");
  const remembered = localStorage.getItem(REMEMBERED);
  // A workspace the address names but that is not there (or not this token's) is said so,
  // never swapped for another.
  if (wanted !== null && !names.includes(wanted)) {
    return showPicker(workspaces, `no workspace named “${wanted}”: choose one`);
  }
  if (wanted !== null) return choose(wanted, true);
  const chosen = names.length === 1 ? names[0] : names.includes(remembered) ? remembered : null;
  if (chosen) return choose(chosen);
  showPicker(workspaces, "");
}

function showPicker(workspaces, note) {
  state.workspace = null;
  $("workspace").value = "";
  fill($("picker"), workspaces, (w) => {
    const li = pick(w.name, () => choose(w.name).catch(fail));
    li.append(line(w.name, "", w.node_count === undefined ? undefined : `${w.node_count} nodes`));
    return li;
  });
  show("picker");
  status(note || (workspaces.length ? "choose a workspace" : "no workspace yet"));
}

/** Opens workspace `name`, remembered in this browser: on what the address names when
 * `fromAddress`, else on its overview, put in the address. */
async function choose(name, fromAddress = false) {
  // The first view the page carried is this workspace's: keep it as it is.
  const carried = state.overview?.workspace === name && state.overview.first;
  state.workspace = name;
  state.query = "";
  $("workspace").value = name;
  localStorage.setItem(REMEMBERED, name);
  if (!fromAddress) {
    const url = new URL(location.pathname, location.origin);
    url.searchParams.set("workspace", name);
    history.replaceState(null, "", url);
  }
  if (!carried) {
    for (const cy of Object.values(graphs)) cy.elements().remove();
    $("results").replaceChildren();
  }
  await follow(carried);
}

// --- the address -----------------------------------------------------------------------
// `?workspace=W`, then `q` (and `min_score`) for a search, `node` for an open node, or
// `view=report`: each view a person reaches is an entry in the browser's history, so a link
// opens it and back and forward walk through them.

/** Puts the view `params` names in the address, as a new history entry. */
function record(params) {
  const url = new URL(location.pathname, location.origin);
  url.searchParams.set("workspace", state.workspace);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  if (url.search !== location.search) history.pushState(null, "", url);
}

/** Shows what the address names: a search, a node (over its search), the report, or the
 * overview (read again unless `cached`). */
async function follow(cached = true) {
  const params = new URLSearchParams(location.search);
  const q = params.get("q") ?? "";
  const node = params.get("node");
  $("query").value = q;
  $("min-score").value = params.get("min_score") ?? "";
  if (params.get("view") === "report") return showReport(false);
  if (q) await search(q, false);
  else { state.query = ""; $("results").replaceChildren(); }
  if (node) return openNode(node, false);
  if (!q) return showOverview(cached, false);
}

window.addEventListener("popstate", () => {
  const named = new URLSearchParams(location.search).get("workspace");
  if (named && named !== state.workspace && state.workspaces.some((w) => w.name === named)) choose(named, true).catch(fail);
  else if (state.workspace) follow().catch(fail);
});

// --- overview, search, node ------------------------------------------------------------

/** The overview, read again unless `cached` and already read for this workspace; put in the
 * address when `recorded`. */
async function showOverview(cached = false, recorded = true) {
  if (recorded) record({});
  const mine = ticket();
  show("overview");
  if (cached && state.overview?.workspace === state.workspace) return status(state.overview.status);
  status(`reading ${state.workspace} …`);
  const overview = await api("overview");
  if (!stale(mine)) renderOverview(overview);
}

/** Fills the overview with `o`, the API's (or the page's first) overview. */
function renderOverview(o) {
  $("overview-title").textContent = o.workspace;
  const coverage = `${Math.floor(o.embedding_coverage * 100)} %${o.embedding_model ? ` (${o.embedding_model})` : ""}`;
  terms($("counts"), [["nodes", String(o.nodes)], ["observations", String(o.observations)],
    ["relations", String(o.relations)], ["embedding coverage", coverage]]);
  fill($("recent"), o.recent, (n) => {
    const li = pick(n.name);
    li.append(line(n.name, n.entity_type, ago(n.updated_at), "when"));
    li.title = n.updated_at;
    return li;
  });
  fill($("largest"), o.largest, (n) => { const li = pick(n.name); li.append(line(n.name, n.entity_type, `${n.observations} obs.`)); return li; });
  fill($("connected"), o.connected, (n) => { const li = pick(n.name); li.append(line(n.name, n.entity_type, `${n.relations} rel.`)); return li; });
  $("overview-graph").hidden = !o.connected.length;
  if (o.connected.length) draw("overview-graph", o.connected, o.connected_relations);
  const partial = o.complete ? "" : " (largest and most connected among the first nodes by name)";
  state.overview = { workspace: o.workspace, first: o === firstView, status: `${o.workspace}: ${o.nodes} nodes, ${o.observations} observations, ${o.relations} relations${partial}` };
  status(state.overview.status);
}

/** Searches for `query` at the min score of the field beside it; put in the address when
 * `recorded`. */
async function search(query, recorded = true) {
  const minScore = $("min-score").value.trim();
  if (recorded) record({ q: query, min_score: minScore });
  state.query = query;
  show("explore");
  $("explore-view").classList.remove("no-results");
  $("explore-view").classList.add("no-node");
  status(`searching ${state.workspace} …`);
  const mine = ticket();
  const found = await api("search", { q: query, limit: 20, ...(minScore ? { min_score: minScore } : {}) });
  if (stale(mine)) return;
  $("results-title").textContent = `results for “${query}”`;
  fill($("results"), found.results, (hit) => {
    const li = pick(hit.name);
    li.classList.add("result");
    li.append(line(hit.name, hit.entity_type, score(hit.score), "score"), el("div", "matched", hit.matched_observation));
    li.querySelector(".score").title = "how likely it is relevant (0 to 1)";
    return li;
  });
  const notice = found.notice ? ` (${found.notice})` : "";
  if (!found.results.length && !minScore) {
    return status(`no result at the default min score, ${found.mode}${notice}: a lower “min score” beside the search box shows weaker ones`);
  }
  status(`${found.results.length} result(s), ${found.mode}${notice}`);
}

/** How `other` is linked to `name`: "works_on →", "← knows". */
function links(relations, name, other) {
  return relations.flatMap((r) => (r.from === name && r.to === other ? [`${r.relation_type} →`]
    : r.from === other && r.to === name ? [`← ${r.relation_type}`] : [])).join(", ");
}

/** Opens node `name` (beside the search's results, when there are some); put in the address
 * when `recorded`. */
async function openNode(name, recorded = true) {
  status(`opening ${name} …`);
  const mine = ticket();
  const { node, neighborhood, history } = await api("node", { name });
  if (stale(mine)) return;
  if (recorded) record({ q: state.query, min_score: state.query && $("min-score").value.trim(), node: node.name });
  show("explore");
  $("explore-view").classList.toggle("no-results", !state.query);
  $("explore-view").classList.remove("no-node");
  for (const li of $("results").children) li.classList.toggle("open", li.dataset.name === node.name);
  $("node-name").textContent = node.name;
  $("node-type").textContent = node.entity_type;
  $("node-summary").textContent = node.summary ?? "";
  $("node-tags").textContent = node.tags?.length ? `tags: ${node.tags.join(", ")}` : "";
  $("node-aliases").textContent = node.aliases?.length ? `also called: ${node.aliases.join(", ")}` : "";
  // Ended facts stay in their place, struck through, with when they held.
  fill($("observations"), node.observations, (o) => {
    const li = el("li", o.valid_to ? "ended" : "");
    li.value = o.ordinal;
    li.append(el("span", "fact", o.content));
    if (o.valid_to) li.append(el("span", "when", ` ended ${when(o.valid_to)}${o.valid_from ? `, held from ${when(o.valid_from)}` : ""}`));
    return li;
  });
  // Its newest reflections, with who wrote them and in what mood; how many more there are.
  const reflections = node.reflections ?? [];
  $("reflections-part").hidden = !reflections.length;
  fill($("reflections"), reflections, (r) => {
    const li = el("li", "", r.content);
    const by = [r.author && `by ${r.author}`, r.mood].filter(Boolean).join(", ");
    li.append(el("span", "type", ` ${ago(r.created_at)}${by ? ` · ${by}` : ""}`));
    li.title = when(r.created_at);
    return li;
  });
  if (node.more_reflections) $("reflections").append(el("li", "none", `and ${node.more_reflections} more (search_reflections)`));
  const relations = neighborhood.relations ?? [];
  const around = neighborhood.nodes.filter((n) => n.name !== node.name);
  fill($("neighbours"), around, (n) => { const li = pick(n.name); li.append(line(n.name, n.entity_type, links(relations, node.name, n.name), "relation")); return li; });
  fill($("history"), history ?? [], (h) => {
    const what = h.operation.replaceAll("_", " ");
    const subject = h.content ?? (h.relation ? `${h.relation.from} ${h.relation.relation_type} ${h.relation.to}` : "");
    const li = el("li", "", subject ? `${what}: ${subject}` : what);
    li.append(el("span", "type", ` ${ago(h.at)}${h.author ? ` · by ${h.author}` : ""}`));
    li.title = when(h.at);
    return li;
  });
  draw("graph", neighborhood.nodes, relations, node.name);
  if (matchMedia("(max-width: 700px)").matches) $("node-pane").scrollIntoView({ block: "start" });
  const current = node.observations.filter((o) => !o.valid_to).length;
  const ended = node.observations.length - current;
  status(`${node.name}: ${current} observation(s)${ended ? ` and ${ended} ended` : ""}, ${around.length} neighbour(s)`);
}

// --- consolidation report ---------------------------------------------------------------

/** The consolidation report and the indexer's state; put in the address when `recorded`. */
async function showReport(recorded = true) {
  if (recorded) record({ view: "report" });
  show("report");
  status("reading the consolidation report …");
  const mine = ticket();
  const [report, indexer] = await Promise.all([api("report"), api("indexer")]);
  if (stale(mine)) return;
  // The indexer's figures in words a person reads, coverage as on the overview.
  const words = {
    model: "embedding model", embedding_coverage: "embedding coverage",
    pairs: "texts to embed (observation × perspective)", pairs_embedded: "texts embedded",
    backlog: "texts still to embed", nodes: "nodes", observations: "observations", relations: "relations",
  };
  const figure = (k, v) => (k === "embedding_coverage" ? `${Math.floor(v * 100)} %` : String(v ?? "none"));
  terms($("indexer"), Object.entries(indexer).filter(([k]) => k !== "failed_texts")
    .map(([k, v]) => [words[k] ?? k.replaceAll("_", " "), figure(k, v)]));
  fill($("failed"), indexer.failed_texts, (t) => {
    const li = pick(t.name);
    li.append(line(t.name, `#${t.ordinal} (${t.perspective})`), el("div", "draft", t.reason));
    return li;
  });
  fill($("stale"), report.stale_summaries, (s) => {
    const li = pick(s.name);
    li.append(line(s.name, ""));
    if (s.draft_summary) li.append(el("div", "draft", s.draft_summary));
    return li;
  });
  // What to act on: merge_entities, end_observations, delete_observations, split_entity.
  fill($("merges"), report.merge_candidates, (m) => {
    const li = pick(m.node_a);
    const figure = m.similarity_score === null || m.similarity_score === undefined ? undefined : score(m.similarity_score);
    li.append(line(`${m.node_a} ↔ ${m.node_b}`, m.entity_type, figure), el("div", "draft", m.reason));
    return li;
  });
  const factPairs = (list, pairs) => fill($(list), pairs, (p) => {
    const li = pick(p.name);
    li.append(line(p.name, `#${p.ordinals[0]} · #${p.ordinals[1]}`),
      ...p.contents.map((text, i) => el("div", "pair", `#${p.ordinals[i]} ${text}`)));
    return li;
  });
  factPairs("superseded", report.possibly_superseded);
  factPairs("duplicates", report.duplicate_observations);
  fill($("splits"), report.split_candidates, (c) => {
    const li = pick(c.name);
    li.append(line(c.name, c.entity_type, `${c.observation_count} obs.`),
      el("div", "pair", c.groups.map((g) => `${g.label} (${g.size})`).join(" · ")));
    return li;
  });
  fill($("candidates"), report.relation_candidates, (c) => {
    const li = el("li", "", `${c.node_a} ↔ ${c.node_b} (${c.similarity_score.toFixed(2)})`);
    if (c.rationale) li.append(el("div", "draft", c.rationale));
    return li;
  });
  fill($("clusters"), report.cluster_summary, (c) => el("li", "", `${c.centroid_label ?? `cluster ${c.cluster_id}`}: ${c.node_names.join(", ")}`));
  terms($("events"), Object.entries(report.event_summary ?? {})
    .map(([k, v]) => [k.replaceAll("_", " "), k === "since" ? when(v) : typeof v === "object" ? JSON.stringify(v) : String(v)]));
  status("consolidation report");
}

// --- keyboard --------------------------------------------------------------------------

/** Moves the focus `step` items through the visible view's items. */
function move(step) {
  const picks = [...document.querySelectorAll("main:not([hidden]) .pick")].filter((p) => p.offsetParent);
  if (!picks.length) return;
  const at = picks.indexOf(document.activeElement);
  const next = at < 0 ? (step > 0 ? 0 : picks.length - 1) : Math.min(Math.max(at + step, 0), picks.length - 1);
  picks[next].focus();
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (event.key === "Escape") {
    target.blur?.();
    if (state.workspace) showOverview(true).catch(fail);
    return;
  }
  if (target.matches?.("input, select, textarea")) {
    if (event.key === "ArrowDown" && target.id === "query") { event.preventDefault(); move(1); }
    return;
  }
  const step = { ArrowDown: 1, j: 1, ArrowUp: -1, k: -1 }[event.key];
  if (event.key === "/") { event.preventDefault(); $("query").focus(); $("query").select(); }
  else if (step) { event.preventDefault(); move(step); }
  else if (event.key === "Enter" && target.classList?.contains("pick")) { event.preventDefault(); target.click(); }
});

// --- wiring ----------------------------------------------------------------------------

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const q = $("query").value.trim();
  if (q && state.workspace) search(q).catch(fail);
});
$("workspace").addEventListener("change", (event) => {
  if (event.target.value) choose(event.target.value).catch(fail);
  else showPicker(state.workspaces, "");
});
$("show-overview").addEventListener("click", () => { if (state.workspace) showOverview().catch(fail); });
$("show-report").addEventListener("click", () => { if (state.workspace) showReport().catch(fail); });
$("save-token").addEventListener("click", () => {
  state.token = $("token").value.trim();
  sessionStorage.setItem("engram-token", state.token);
  loadWorkspaces().catch(fail);
});

if (firstView) {
  state.workspace = firstView.workspace;
  show("overview");
  renderOverview(firstView);
  firstView = null;
}
loadWorkspaces().catch(fail);
