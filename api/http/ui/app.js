// frond's dashboard: one server-sent event stream (/ui/events) with a
// snapshot a second; rates are differences between snapshots. Actions call
// the JSON API with the admin token as an Authorization header, kept in this
// page only: no cookie, so no other site can make the browser send it.
"use strict";

const $ = (id) => document.getElementById(id);
let prev = null;
const stepHistory = {}; // tag -> steps seen, for the adaptive step's history

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function dur(s) {
  if (s < 0) return "–";
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 120) return s.toFixed(0) + " s";
  if (s < 7200) return (s / 60).toFixed(0) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(0) + " days";
}

function num(n) { return Number(n).toLocaleString("en-US"); }
// count writes n with its noun: "1 load", "2 loads".
function count(n, one, many) { return `${num(n)} ${Number(n) === 1 ? one : many}`; }

function setCard(id, state) {
  $(id).classList.remove("ok", "warn", "bad");
  $(id).classList.add(state);
}

function bar(start, pos, end, next) {
  const b = el("div", { class: next ? "bar next" : "bar" });
  const u = el("div", { class: "used" });
  const span = end - start;
  if (span > 0) u.style.width = (100 * Math.min(1, Math.max(0, (pos - start) / span))) + "%";
  b.append(u);
  return b;
}

// render shows snapshot s; again redraws the last one (a search's page
// arrived). The rates are the server's, over its last seconds (s.rates),
// so the first snapshot shows them too.
function render(s) {
  const rates = s.rates || {};
  const alerts = [];

  // The node.
  const w = s.worker;
  $("worker-id").textContent = w.held ? w.id : "none";
  let wd = w.issuing ? (w.from_cache ? "from the local record: registry unreachable" : "held, issuing") : (w.error || "not issuing");
  if (w.reserved_ahead_ns) wd += ` · registry has recorded ${dur(w.reserved_ahead_ns / 1e9)} ahead of the clock`;
  if (w.peers) wd += ` · clock ${w.peer_skew_ns >= 0 ? "+" : "−"}${dur(Math.abs(w.peer_skew_ns) / 1e9)} from ${w.peers} peers`;
  $("worker-detail").textContent = wd;
  setCard("card-worker", w.issuing ? (w.from_cache ? "warn" : "ok") : "bad");
  if (!w.issuing) alerts.push(["bad", "Snowflake IDs are not issued: " + (w.error || "no worker ID")]);

  const sf = s.snowflake;
  const sfRate = rates.snowflake || 0;
  $("snow-rate").textContent = num(Math.round(sfRate)) + "/s";
  $("snow-detail").textContent = `lead ${dur(sf.lead_seconds)} · clock behind ${dur(sf.behind_seconds)} · borrowed ${num(sf.borrows)} · waits ${num(sf.waits)} · refused ${num(sf.refusals)}`;
  setCard("card-snowflake", sf.behind_seconds > 0.005 ? "bad" : "ok");

  const left = (Date.parse(s.layout.expires) - Date.parse(s.now)) / 1000;
  $("layout-name").textContent = s.layout.name;
  $("layout-detail").textContent = "runs out " + s.layout.expires.slice(0, 10) + " (in " + dur(left) + ")";
  const layoutCheck = (s.readiness.checks || []).find((c) => c.name === "layout");
  setCard("card-layout", layoutCheck && !layoutCheck.ok ? "warn" : "ok");
  if (layoutCheck && !layoutCheck.ok) alerts.push(["warn", layoutCheck.detail]);

  const seg = s.readiness.segment;
  const store = (s.readiness.checks || []).find((c) => c.name === "store");
  $("store-state").textContent = store && store.ok ? "up" : "down";
  $("store-detail").textContent = store && store.ok ? (store.detail || "answers") : (seg.detail || (store && store.detail) || "");
  setCard("card-store", store && store.ok ? "ok" : (seg.ready ? "warn" : "bad"));
  if (store && !store.ok) alerts.push([seg.ready ? "warn" : "bad", "The segment store does not answer: tags are served from their buffers until they run dry (see each tag's horizon)."]);

  // Tags: the server sends the ones that need attention first, then the
  // busiest (at most 50); a search shows any tag, a page at a time.
  const counts = s.tag_counts;
  $("tag-count").textContent = search.q ? searchCount() : counts ?
    `${num(counts.shown)} of ${count(counts.total, "tag", "tags")} in use shown, those that need attention first, then the busiest` +
    (counts.failing ? ` · ${num(counts.failing)} failing` : "") + (counts.low ? ` · ${num(counts.low)} low` : "") : "";
  if (counts && counts.failing) alerts.push(["bad", `The last store call of ${count(counts.failing, "tag", "tags")} failed (listed first).`]);
  const tbody = $("tags").tBodies[0];
  tbody.replaceChildren();
  const tags = search.q ? (search.result ? search.result.tags : []) : (s.tags || []);
  if (s.tags_hidden) {
    tbody.append(el("tr", { class: "empty hidden-tags" }, el("td", { colspan: "8" },
      "Tags are shown to the admin: type the server's admin token below (without one, the server shows them to this machine only).")));
  } else if (search.q && tags.length === 0) {
    tbody.append(el("tr", { class: "empty" }, el("td", { colspan: "8" }, search.error || `no tag in use has "${search.q}" in its name`)));
  } else if (tags.length === 0 && (!s.sequences || s.sequences.length === 0)) {
    tbody.append(el("tr", { class: "empty" }, el("td", { colspan: "8" }, "no tag has been used on this node yet")));
  }
  for (const t of tags) {
    // The server's history of the step (since the buffer was made); the
    // page's own, from what it has seen, for a server without one.
    let hist = t.step_history;
    if (!hist || !hist.length) {
      hist = (stepHistory[t.tag] = stepHistory[t.tag] || []);
      if (hist[hist.length - 1] !== t.step) hist.push(t.step);
      if (hist.length > 8) hist.shift();
    }
    const h = t.horizon_seconds;
    // low: the buffers last less than the node's segment.runway (5 minutes by default) with the store down.
    const hclass = h < 0 ? "" : t.low ? (h < 60 ? "bad" : "warn") : "ok";
    if (h >= 0 && t.low) alerts.push([h < 60 ? "bad" : "warn", `Tag ${t.tag} runs dry in ${dur(h)} if the store stays away.`]);
    const buffers = el("td", {},
      bar(t.start, t.pos, t.end, false), el("div", { class: "range" }, `${num(t.start)} · ${num(t.pos)} · ${num(t.end)}`),
      t.next_ready ? bar(t.next_start, t.next_start, t.next_end, true) : el("div", { class: "range" }, t.loading ? "next segment loading…" : "no next segment"),
      t.next_ready ? el("div", { class: "range" }, `${num(t.next_start)} – ${num(t.next_end)}`) : "");
    tbody.append(el("tr", { "data-tag": t.tag },
      el("td", {}, el("strong", {}, t.tag)),
      buffers,
      el("td", { class: "horizon " + hclass }, h < 0 ? "no use measured" : dur(h)),
      el("td", { class: "num remaining" }, num(t.remaining)),
      el("td", { class: "num" }, num(Math.round(t.rate)) + "/s"),
      // The step now, the one before it (the whole history in the tooltip),
      // and the requests that found both buffers empty, said as such.
      el("td", { class: "num step", title: hist.length > 1 ? "the adaptive step since the buffer was made: " + hist.map(num).join(" → ") : "" },
        num(t.step),
        hist.length > 1 ? el("div", { class: "range" }, `was ${num(hist[hist.length - 2])}`) : "",
        t.waits ? el("div", { class: "range waits", title: "requests that found both buffers empty and waited for the store to load a segment" },
          `${count(t.waits, "request", "requests")} waited for a load`) : ""),
      el("td", {}, t.last_load ? `${t.last_load.slice(11, 19)} in ${dur(t.last_load_seconds)} · ${count(t.loads, "load", "loads")}` : "–"),
      el("td", { class: "err" }, t.last_error || "")));
  }

  // Sequence tags: no buffers; every ID from the store, a store call per group.
  for (const q of search.q ? [] : (s.sequences || [])) {
    const rate = (rates.sequences || {})[q.tag] || 0;
    tbody.append(el("tr", { "data-tag": q.tag, class: "sequence" },
      el("td", {}, el("strong", {}, q.tag), el("div", { class: "range" }, "sequence")),
      el("td", {}, el("div", { class: "range" }, `no buffers: ${count(q.trips, "store call", "store calls")} for ${count(q.ids, "ID", "IDs")}, up to ${count(q.max_group, "request", "requests")} a call`)),
      el("td", { class: "horizon" }, "none: the store answers each group"),
      el("td", { class: "num remaining" }, "–"),
      el("td", { class: "num" }, num(Math.round(rate)) + "/s"),
      el("td", { class: "num" }, "–"),
      el("td", {}, "–"),
      el("td", { class: "err" }, "")));
  }

  // Keyed sequence spaces: this node's view of each (docs/sequences.md).
  const spaces = s.spaces || [];
  $("spaces-section").hidden = spaces.length === 0;
  const sbody = $("spaces").tBodies[0];
  sbody.replaceChildren();
  for (const p of spaces) {
    if (p.unowned > 0) alerts.push(["warn", `Space ${p.name}: ${count(p.unowned, "section has", "sections have")} no live owner at this node's last read (answered again once a node takes them).`]);
    sbody.append(el("tr", { "data-space": p.name },
      el("td", {}, el("strong", {}, p.name)),
      el("td", { class: "num" }, `${num(p.held)} of ${num(p.sections)}`),
      el("td", { class: "num " + (p.unowned > 0 ? "warn" : "") }, num(p.unowned)),
      el("td", { class: "num" }, num(p.members)),
      el("td", { class: p.lease_left_seconds > 0 ? "" : "bad" }, p.lease_left_seconds > 0 ? dur(p.lease_left_seconds) : "none: serving nothing"),
      el("td", { class: "num" }, num(p.values)),
      el("td", { class: "num" }, num(p.forwarded)),
      el("td", { class: "num" }, num(p.raises)),
      el("td", {}, `${num(p.taken)} · ${num(p.given)} · ${num(p.lost)}`)));
  }

  // Checks.
  const checks = $("checks");
  checks.replaceChildren();
  for (const c of s.readiness.checks || []) {
    checks.append(el("li", { class: c.ok ? "pass" : "fail" }, `${c.ok ? "✓" : "✗"} ${c.name}: ${c.detail || "ok"}`));
  }

  // Requests per protocol.
  const pbody = $("protocols").tBodies[0];
  pbody.replaceChildren();
  const protos = new Set(Object.keys(s.counts.requests || {}).concat(Object.keys(s.counts.errors || {})));
  for (const p of [...protos].sort()) {
    const rate = (rates.requests || {})[p] || 0;
    const errs = []; // the codes that occurred in the server's window only
    for (const [code, r] of Object.entries((rates.errors || {})[p] || {}).sort()) {
      errs.push(`${code} ${r.toFixed(1)}`);
    }
    pbody.append(el("tr", {}, el("td", {}, p), el("td", { class: "num" }, num(Math.round(rate))), el("td", {}, errs.join(", ") || "–")));
  }

  const box = $("alerts");
  box.replaceChildren(...alerts.map(([cls, text]) => el("div", { class: cls }, text)));
  $("summary").textContent = `up since ${s.started.slice(0, 19).replace("T", " ")} UTC`;
  prev = s;
}

// The tag search: /ui/tags?q= a page at a time, asked again with each
// snapshot while a search is on.
const search = { q: "", offset: 0, result: null, error: "" };
const SEARCH_PAGE = 50;

function searchCount() {
  const r = search.result;
  if (!r) return "searching…";
  if (!r.matched) return `no match among ${count(r.total, "tag", "tags")} in use`;
  return `${num(r.offset + 1)} to ${num(r.offset + r.tags.length)} of ${count(r.matched, "tag", "tags")} with "${search.q}" (of ${num(r.total)} in use)`;
}

async function runSearch() {
  if (!search.q) { search.result = null; search.error = ""; }
  else {
    try {
      search.result = await call("GET", `/ui/tags?q=${encodeURIComponent(search.q)}&offset=${search.offset}&limit=${SEARCH_PAGE}`);
      search.error = "";
    } catch (err) {
      search.result = null;
      search.error = err.message;
    }
  }
  const r = search.result;
  $("tag-prev").disabled = !search.q || search.offset === 0;
  $("tag-next").disabled = !r || r.offset + r.tags.length >= r.matched;
  if (prev) render(prev);
}

let es = null;

// connect opens the stream of snapshots, with the admin token if one was
// typed (EventSource cannot send a header): tag details are shown to the
// admin only. A new token reconnects.
function connect() {
  if (es) es.close();
  const token = $("token").value;
  es = new EventSource("/ui/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
  es.addEventListener("snapshot", (e) => {
    $("live").textContent = "live";
    $("live").className = "pill on";
    const snap = JSON.parse(e.data);
    render(snap);
    fillTagChoice(snap);
    if (search.q) runSearch();
  });
  es.onerror = () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "pill off";
  };
}

async function call(method, path, body) {
  const headers = {};
  const token = $("token").value;
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "omit" });
  const text = await res.text();
  let data = text;
  try { data = JSON.parse(text); } catch (e) { /* plain text */ }
  if (!res.ok) {
    const err = data && data.error ? `${data.error.code}: ${data.error.message}` : `${res.status} ${text}`;
    throw new Error(err);
  }
  return data;
}

// show writes a form's answer, or its error, under the form.
function show(id, data, isError) {
  const r = $(id + "-result");
  r.className = isError ? "result err" : "result";
  r.textContent = typeof data === "string" ? data : JSON.stringify(data, null, 2);
}

function onSubmit(id, run) {
  $(id).addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    try { show(id, await run(f)); } catch (err) { show(id, err.message, true); }
  });
}

onSubmit("create-tag", (f) => {
  const body = { name: f.get("name"), step: Number(f.get("step")), mode: f.get("mode") || "segment" };
  if (f.get("description")) body.description = f.get("description");
  return call("POST", "/v1/tags", body);
});
onSubmit("update-tag", (f) => {
  const body = {};
  if (f.get("step")) body.step = Number(f.get("step"));
  if (f.get("description")) body.description = f.get("description");
  return call("PATCH", "/v1/tags/" + encodeURIComponent(f.get("name")), body);
});
// Take IDs: every kind and form the service has; the fields a kind does
// not use are left out, so the server judges what is sent.
onSubmit("take", (f) => {
  const kind = f.get("kind"), name = f.get("name") || "", q = new URLSearchParams();
  const set = (k, v) => { if (v) q.set(k, v); };
  let path;
  if (kind === "segment" || kind === "serial") {
    path = `/v1/${kind}/${encodeURIComponent(name)}`;
    set("n", f.get("n"));
    if (kind === "segment") { set("form", f.get("form")); set("prefix", f.get("prefix")); }
  } else if (kind === "snowflake") {
    path = "/v1/snowflake";
    set("n", f.get("n")); set("form", f.get("form")); set("prefix", f.get("prefix"));
  } else {
    path = "/v1/uuid";
    const version = kind === "typeid" ? "7" : kind.slice(5);
    q.set("version", version);
    if (version === "3" || version === "5") {
      q.set("namespace", f.get("namespace") || "dns"); q.set("name", name);
    } else {
      set("n", f.get("n"));
    }
    if (kind === "typeid") { q.set("form", "typeid"); set("prefix", f.get("prefix")); }
  }
  const qs = q.toString();
  return call("GET", qs ? `${path}?${qs}` : path);
});
onSubmit("decode", (f) => call("GET", "/v1/decode/" + encodeURIComponent(f.get("id"))));

// The last hour: /ui/history, one point a minute kept by the server, drawn
// as SVG (no library). Red lines: the store was down; orange dots: the step
// changed.
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// plot draws points (value < 0: not measured that minute, not drawn); empty
// is what an empty plot says.
function plot(id, points, value, step, fmt, empty) {
  const box = $(id);
  box.replaceChildren();
  const W = 600, H = 120, top = 14, bottom = H - 4;
  const end = points.length ? Date.parse(points[points.length - 1].at) : Date.now();
  const start = end - 3600 * 1000;
  const xs = (t) => ((Date.parse(t) - start) / (3600 * 1000)) * W;
  const vals = points.map(value).filter((v) => v >= 0);
  const max = Math.max(1, ...vals);
  const ys = (v) => bottom - (Math.max(0, v) / max) * (bottom - top);
  for (const p of points) {
    if (p.store_down) box.append(svg("line", { x1: xs(p.at), x2: xs(p.at), y1: top, y2: bottom, stroke: "#c0392b", "stroke-width": 2, class: "store-down" }));
  }
  const drawn = points.filter((p) => value(p) >= 0);
  if (drawn.length) {
    box.append(svg("polyline", { points: drawn.map((p) => `${xs(p.at).toFixed(1)},${ys(value(p)).toFixed(1)}`).join(" "),
      fill: "none", stroke: "#2c7be5", "stroke-width": 2, class: "line" }));
    for (const p of drawn) box.append(svg("circle", { cx: xs(p.at), cy: ys(value(p)), r: drawn.length === 1 ? 3 : 1.5, fill: "#2c7be5" }));
    if (drawn.length === 1) { // a level, not a lone dot: a short line through it
      const x = xs(drawn[0].at), y = ys(value(drawn[0]));
      box.append(svg("line", { x1: Math.max(0, x - 12), x2: Math.min(W, x + 12), y1: y, y2: y, stroke: "#2c7be5", "stroke-width": 2, class: "level" }));
    }
  }
  for (let i = 1; i < points.length; i++) {
    if (step(points[i], points[i - 1])) box.append(svg("circle", { cx: xs(points[i].at), cy: top - 6, r: 4, fill: "#e67e22", class: "step-change" }));
  }
  const label = svg("text", { x: 4, y: 11, "font-size": 11, fill: "#555" });
  if (!points.length) label.textContent = empty;
  else if (!drawn.length) label.textContent = `not measured in the ${count(points.length, "minute", "minutes")} shown (a horizon needs IDs used in the minute)`;
  else if (drawn.length < points.length) label.textContent = `max ${fmt(max)} · measured in ${drawn.length} of ${points.length} minutes (a horizon needs IDs used in the minute)`;
  else label.textContent = `max ${fmt(max)} · ${count(points.length, "minute", "minutes")}`;
  box.append(label);
}

const histState = { tag: "", data: null };

async function loadHistory() {
  const sel = $("history-tag");
  histState.tag = sel.value;
  try {
    histState.data = await call("GET", "/ui/history" + (histState.tag ? "?tag=" + encodeURIComponent(histState.tag) : ""));
  } catch (err) {
    histState.data = { node: [], error: err.message };
  }
  drawHistory();
}

function drawHistory() {
  const d = histState.data || { node: [] };
  const rate = (p) => p.rate, horizon = (p) => p.horizon_seconds;
  const perSec = (v) => num(Math.round(v)) + "/s";
  const nodeEmpty = "no point yet: the server keeps one a minute, the first a minute after it started";
  plot("plot-node-rate", d.node, rate, (p) => p.step_changes > 0, perSec, nodeEmpty);
  plot("plot-node-horizon", d.node, horizon, (p) => p.step_changes > 0, dur, nodeEmpty);
  const t = d.tag ? d.tag.points : [];
  $("plot-tag-rate-caption").textContent = d.tag ? `IDs/s of ${d.tag.name}` : (d.error || "IDs/s of the tag (pick one)");
  const tagEmpty = d.tag ? `no point yet for ${d.tag.name}: its first comes a minute after this node first served it` : "pick a tag above";
  plot("plot-tag-rate", t, rate, (p, q) => p.step !== q.step, perSec, tagEmpty);
  plot("plot-tag-horizon", t, horizon, (p, q) => p.step !== q.step, dur, tagEmpty);
}

// The tags to pick from: those the snapshot lists, the picked one kept.
function fillTagChoice(s) {
  const sel = $("history-tag");
  const names = (s.tags || []).map((t) => t.tag);
  if (histState.tag && !names.includes(histState.tag)) names.unshift(histState.tag);
  const have = [...sel.options].map((o) => o.value);
  if (have.join() === names.join()) return;
  sel.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
  if (histState.tag) sel.value = histState.tag;
  if (!histState.tag && names.length) loadHistory();
}

connect();
$("token").addEventListener("change", connect);
$("history-tag").addEventListener("change", loadHistory);
loadHistory();
setInterval(loadHistory, 60 * 1000);
let searchTimer = null;
$("tag-search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => { search.q = $("tag-search").value.trim(); search.offset = 0; runSearch(); }, 200);
});
$("tag-prev").addEventListener("click", () => { search.offset = Math.max(0, search.offset - SEARCH_PAGE); runSearch(); });
$("tag-next").addEventListener("click", () => { search.offset += SEARCH_PAGE; runSearch(); });
