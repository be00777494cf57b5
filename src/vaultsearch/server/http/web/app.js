// The Index Console page: plain DOM, no framework. Note text only ever enters the page
// through textContent (never innerHTML), so a note cannot inject markup or script.
"use strict";

const STATE_LABELS = {
  no_index: "No Index",
  needs_update: "Needs Update",
  up_to_date: "Up to Date",
  updating: "Updating",
  cancelling: "Cancelling",
};
const POLL_MS = 1000;
// What the index holds, as /status (and every other surface) counts it: store/counts.py
const COUNT_KEYS = [
  "notes", "chunks", "sentences", "notes_awaiting_sentences", "links", "resolved_links",
  "broken_links",
];
const $ = (id) => document.getElementById(id);

// A server bound beyond loopback wants its bearer token: open the page as
// http://host:port/#token=... once; the token is kept for this tab only.
const token = (() => {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem("vaultsearch-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("vaultsearch-token");
})();

let lastStatus = null;
let lastProgress = { state: "idle" };
let pollTimer = null;

async function api(path, body) {
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = {};
  try {
    data = await response.json();
  } catch (_) {
    data = { error: `${path} answered ${response.status} without JSON.` };
  }
  if (response.status === 401) {
    data.error =
      "This server wants its token: open the page once as " +
      `${location.origin}/#token=<token> (VAULTSEARCH_MCP_TOKEN, or the one it printed).`;
  }
  if (!response.ok) {
    const error = new Error(data.error || data.message || `${path} answered ${response.status}.`);
    error.status = response.status;
    throw error;
  }
  return data;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function say(text, isError) {
  const node = $("message");
  node.textContent = text || "";
  node.classList.toggle("error", Boolean(isError));
}

// --- state ------------------------------------------------------------------------
function running(progress) {
  return progress.state === "running" || progress.state === "cancelling";
}

function shownState() {
  if (lastProgress.state === "cancelling") return "cancelling";
  if (lastProgress.state === "running") return "updating";
  return lastStatus ? lastStatus.state : "";
}

function renderState() {
  const state = shownState();
  const node = $("state");
  node.dataset.state = state;
  node.textContent = STATE_LABELS[state] || "…";
  const busy = running(lastProgress);
  $("update").disabled = busy;
  $("rebuild").disabled = busy;
  $("cancel").disabled = lastProgress.state !== "running";
}

function renderProgress(p) {
  const before = lastProgress;
  lastProgress = p;
  const percent = Math.max(0, Math.min(100, Number(p.percent || 0)));
  $("bar").style.width = percent + "%";
  $("bar").parentElement.setAttribute("aria-valuenow", String(Math.round(percent)));
  $("bar").dataset.state = p.state;
  const parts = [p.kind ? `${p.kind} ${p.state}` : p.state, `${percent.toFixed(0)}%`];
  if (p.files_total !== undefined) parts.push(`files ${p.files_done || 0}/${p.files_total}`);
  if (p.chunks_total !== undefined) {
    parts.push(`texts embedded ${p.chunks_done || 0}/${p.chunks_total}`);
  }
  if (p.by) parts.push(`by ${p.by}` + (p.reason ? ` (${p.reason})` : ""));
  if (p.note) parts.push(p.note);
  $("progress-text").textContent = parts.join(" · ");
  $("current-file").textContent = p.current_file || "";
  renderState();
  if (before.state !== p.state && !running(p)) {
    if (p.state === "failed") say(p.error || "the run failed", true);
    else if (p.kind) say(`${p.kind} ${p.state}`);
    refreshStatus();
    refreshActivity();
  }
}

function renderStatus(s) {
  lastStatus = s;
  $("vault").textContent = s.vault || "";
  const f = s.files || {};
  $("files-total").textContent = f.total ?? "–";
  $("files-indexed").textContent = f.indexed ?? "–";
  $("files-not-indexed").textContent = f.not_indexed ?? "–";
  $("files-deleted").textContent = f.deleted ?? "–";
  $("files-failed").textContent =
    (f.failed ?? "–") + (f.to_retry ? ` (${f.to_retry} not the files' fault: read again by the next index run)` : "");
  $("pending").textContent = s.pending_changes ?? "–";
  for (const key of COUNT_KEYS) {
    $("count-" + key.replaceAll("_", "-")).textContent = s[key] ?? "–";
  }
  $("last-indexed").textContent = s.last_indexed || "never";
  $("reasons").replaceChildren(...(s.reasons || []).map((r) => el("li", r)));
  $("model").textContent = s.model || "–";
  $("store").textContent = storeLine(s.store);
  const failed = $("failed");
  failed.replaceChildren(
    ...(s.failed || []).map((item) => {
      const li = el("li");
      const again = item.fault === "ours" ? ` (not the file's fault: tried ${item.tries === 1 ? "once" : item.tries + " times"}, read again by the next index run)` : "";
      li.append(el("span", item.path, "mono"), el("span", " — " + item.reason + again));
      return li;
    })
  );
  renderConfig(s.config || {}, new Set(s.rebuild_keys || []));
  renderState();
}

function storeLine(store) {
  if (!store) return "–";
  if (store.backend !== "milvus") return store.backend;
  if (store.error) return "milvus: " + store.error;
  let line = `milvus ${store.uri} (collections ${store.collection}_*)`;
  const last = store.last_push;
  if (last) line += `, last push ${last.generation}: ${last.chunks} chunks`;
  return line;
}

function renderConfig(config, rebuildKeys) {
  const rows = Object.keys(config)
    .sort()
    .map((key) => {
      const tr = el("tr");
      const th = el("th", key);
      if (rebuildKeys.has(key)) th.append(" ", el("span", "rebuild", "badge"));
      tr.append(th, el("td", JSON.stringify(config[key])));
      return tr;
    });
  $("config").replaceChildren(...rows);
}

function activityItem(entry) {
  const li = el("li");
  li.append(el("time", entry.time, "muted"), el("b", " " + entry.event + " "), el("span", entry.detail || ""));
  return li;
}

function renderActivity(entries) {
  $("activity").replaceChildren(...entries.map(activityItem));
}

// --- loading ----------------------------------------------------------------------
async function refreshStatus() {
  try {
    renderStatus(await api("status"));
  } catch (e) {
    say(e.message, true);
  }
}

async function refreshActivity() {
  try {
    renderActivity((await api("activity?limit=50")).entries || []);
  } catch (e) {
    say(e.message, true);
  }
}

async function refreshProgress() {
  try {
    const p = await api("progress");
    if (JSON.stringify(p) !== JSON.stringify(lastProgress)) renderProgress(p);
  } catch (e) {
    $("connection").textContent = "disconnected";
  }
}

function startPolling() {
  if (pollTimer) return;
  $("connection").textContent = "polling";
  pollTimer = setInterval(refreshProgress, POLL_MS);
}

function listen() {
  if (token || !window.EventSource) return startPolling(); // EventSource cannot send a token
  const events = new EventSource("events");
  events.addEventListener("open", () => {
    $("connection").textContent = "live";
  });
  events.addEventListener("progress", (e) => renderProgress(JSON.parse(e.data)));
  events.addEventListener("activity", (e) => {
    $("activity").prepend(activityItem(JSON.parse(e.data)));
  });
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED) startPolling();
    else $("connection").textContent = "reconnecting…"; // the browser retries by itself
  });
}

// --- actions ----------------------------------------------------------------------
async function startRun(reindexAll) {
  say("");
  try {
    const r = await api("rebuild-index", { reindex_all: reindexAll });
    say(`${r.kind} started`);
    lastProgress = { ...lastProgress, state: "running", kind: r.kind };
    renderState();
    if (pollTimer) refreshProgress();
  } catch (e) {
    say(e.message, true);
  }
}

async function cancelRun() {
  try {
    const r = await api("cancel-indexing", {});
    say(r.cancelling ? "cancelling…" : r.reason || "nothing to cancel", !r.cancelling);
  } catch (e) {
    say(e.message, true);
  }
}

// Python counts code points, JavaScript UTF-16 units: split into code points first.
function highlighted(snippet, ranges) {
  const chars = Array.from(snippet || "");
  const frag = document.createDocumentFragment();
  let pos = 0;
  for (const [start, end] of ranges || []) {
    if (start < pos || end > chars.length) continue;
    frag.append(chars.slice(pos, start).join(""), el("mark", chars.slice(start, end).join("")));
    pos = end;
  }
  frag.append(chars.slice(pos).join(""));
  return frag;
}

function hitItem(hit) {
  const li = el("li", undefined, "hit");
  const head = el("div", undefined, "hit-head");
  head.append(el("span", `${hit.path}:${hit.start_line}-${hit.end_line}`, "mono path"));
  head.append(el("span", ` score ${hit.score} · confidence ${hit.confidence}`, "muted"));
  li.append(head);
  if (hit.heading_path) li.append(el("div", hit.heading_path, "muted"));
  const snippet = el("p", undefined, "snippet");
  snippet.append(highlighted(hit.snippet, hit.highlights));
  li.append(snippet);
  if (hit.explain) {
    const details = el("details", undefined, "explain");
    details.append(el("summary", "explain"), el("pre", JSON.stringify(hit.explain, null, 2)));
    li.append(details);
  }
  return li;
}

async function search(event) {
  event.preventDefault();
  const query = $("query").value.trim();
  if (!query) return;
  const topK = Math.max(1, Number($("top-k").value) || 5);
  $("hits").replaceChildren(el("li", "searching…", "muted"));
  $("answer").hidden = true;
  try {
    const r = await api("query_documents", {
      query,
      top_k: topK,
      filters: { mode: $("mode").value },
    });
    const hits = r.hits || [];
    $("hits").replaceChildren(...(hits.length ? hits.map(hitItem) : [el("li", "no hits", "muted")]));
    renderAnswer(r.answer, r.citations || []);
  } catch (e) {
    $("hits").replaceChildren(el("li", e.message, "error"));
  }
}

function renderAnswer(answer, citations) {
  const node = $("answer");
  if (!answer) return;
  const list = el("ol", undefined, "citations");
  for (const c of citations) {
    const li = el("li", `${c.path}:${c.start_line}-${c.end_line}`, "mono");
    li.value = c.n;
    list.append(li);
  }
  node.replaceChildren(el("p", answer), list);
  node.hidden = false;
}

function main() {
  $("update").addEventListener("click", () => startRun(false));
  $("rebuild").addEventListener("click", () => startRun(true));
  $("cancel").addEventListener("click", cancelRun);
  $("search-form").addEventListener("submit", search);
  refreshStatus();
  refreshActivity();
  refreshProgress();
  listen();
  setInterval(refreshStatus, 15000); // files change outside the page too
}

document.addEventListener("DOMContentLoaded", main);
