// The Cairn dashboard (docs/dashboard.md): hash routes #/jobs, #/job/ID,
// #/job/ID/distribution, #/volunteers, #/volunteer/ID, #/audit[/N]. Reads and acts through the
// master's /v1 API with the admin token the user types once (kept in this
// tab's sessionStorage, sent as a Bearer token). The open view is polled
// every 2 s (a job's task list less often when the job is large).
import { renderJob } from "./job.js";
import { renderDist } from "./dist.js";

const $ = (sel, root = document) => root.querySelector(sel);
const TOKEN_KEY = "cairn-admin-token";
let token = sessionStorage.getItem(TOKEN_KEY) || "";
let timer = null;
let poll = null; // the open view's refresh function

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e[k] = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

// A request with the token. GETs are conditional: the browser revalidates
// its copy with the master's ETag (If-None-Match, 304 when unchanged), and
// an answer with the ETag seen last time gives the body kept from before
// (the same object, so that a view can skip redrawing).
const cached = new Map(); // path -> { etag, body }
export async function api(path, opts = {}) {
  const headers = { Authorization: "Bearer " + token, ...(opts.headers || {}) };
  const get = !opts.method || opts.method === "GET";
  const r = await fetch(path, { ...opts, headers, cache: get ? "no-cache" : "no-store" });
  const etag = get && r.ok && r.headers.get("etag");
  const old = etag && cached.get(path);
  if (old && old.etag === etag) return old.body;
  const body = (r.headers.get("content-type") || "").includes("json") ? await r.json().catch(() => null) : null;
  if (!r.ok) {
    const e = new Error((body && body.error && body.error.message) || "HTTP " + r.status);
    e.status = r.status;
    throw e;
  }
  if (etag) {
    if (cached.size > 64) cached.clear();
    cached.set(path, { etag, body });
  }
  return body;
}

// The raw bytes of path (an output), with the token: a Uint8Array, or an
// Error naming the status.
export async function fetchBytes(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// Saves blob as a file called name (the browser's download).
export function saveBlob(blob, name) {
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}

export function status(text, isError = false) {
  const s = $("#status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

// Asks before a destructive action: resolves true when confirmed.
export function confirmAction(title, body) {
  const d = $("#confirm");
  $("#confirm-title").textContent = title;
  $("#confirm-body").replaceChildren(...(Array.isArray(body) ? body : [el("p", {}, body)]));
  d.returnValue = "";
  d.showModal();
  return new Promise((res) => d.addEventListener("close", () => res(d.returnValue === "ok"), { once: true }));
}

function table(headers, rows, onRow) {
  const tbody = el("tbody");
  for (const r of rows) {
    const tr = el("tr", onRow ? { class: "link", tabindex: 0 } : {}, ...r.cells.map((c) => el("td", {}, c)));
    if (onRow) {
      tr.onclick = () => onRow(r);
      tr.onkeydown = (e) => { if (e.key === "Enter") onRow(r); };
    }
    tbody.append(tr);
  }
  return el("div", { class: "scroll" }, el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), tbody));
}

function bar(done, total) {
  const b = el("div", { class: "bar", title: `${done}/${total}` }, el("div"));
  b.firstChild.style.width = (100 * done / Math.max(1, total)).toFixed(1) + "%";
  return b;
}

// ---- Jobs ----
async function sha256hex(buf) {
  const h = await crypto.subtle.digest("SHA-256", buf);
  return [...new Uint8Array(h)].map((x) => x.toString(16).padStart(2, "0")).join("");
}

// Submits the chosen job file; each "files" entry with a "path" is matched
// by its base name to one of the other chosen files, uploaded and named by
// its digest (what `cairn submit` does).
async function submitJob(files) {
  const jf = files.find((f) => f.name.endsWith(".json"));
  if (!jf) throw new Error("choose a job file (.json) and the files it names");
  const job = JSON.parse(await jf.text());
  for (const entry of job.files || []) {
    if (!entry.path) continue;
    const base = entry.path.split("/").pop();
    const f = files.find((x) => x !== jf && x.name === base);
    if (!f) throw new Error(`the job names "${entry.path}": choose that file too`);
    const buf = await f.arrayBuffer();
    const sha = await sha256hex(buf);
    await api("/v1/files/" + sha, { method: "PUT", body: buf });
    delete entry.path;
    entry.sha256 = sha;
    entry.size = buf.byteLength;
  }
  return api("/v1/jobs", { method: "POST", body: JSON.stringify(job), headers: { "Content-Type": "application/json" } });
}

function jobsView(main) {
  const out = el("div");
  const input = el("input", { type: "file", id: "jobfile", multiple: true, accept: ".json,*/*" });
  const msg = el("span", { id: "submit-msg" });
  const form = el("form", { class: "actions", id: "submit" }, el("label", { for: "jobfile" }, "Submit a job file (and the files it names): "),
    input, el("button", {}, "Submit"), msg);
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const r = await submitJob([...input.files]);
      msg.textContent = `job ${r.id} submitted (${r.tasks} tasks)`;
      msg.className = "";
      input.value = "";
      refresh();
    } catch (err) {
      msg.textContent = "error: " + err.message;
      msg.className = "error";
    }
  };
  main.replaceChildren(el("h2", {}, "Jobs"), form, out);
  let last = null;
  return async () => {
    const got = await api("/v1/jobs");
    if (got === last) return;
    last = got;
    const { jobs } = got;
    const rows = jobs.map((j) => ({ j, cells: [j.id, j.name, j.app, j.policy, j.state, j.priority,
      bar(j.counts.done, j.tasks), `${j.counts.done}/${j.tasks}`, j.counts.waiting, j.counts.eligible,
      j.counts.running, j.counts.failed] }));
    const t = table(["id", "name", "app", "policy", "state", "priority", "progress", "done", "waiting",
      "eligible", "running", "failed"], rows, (r) => { location.hash = "#/job/" + r.j.id; });
    out.replaceChildren(jobs.length ? t : el("p", {}, "No jobs."));
  };
}

// ---- Volunteers ----
const volCells = (v) => [v.id, v.name, v.team || "", v.row, v.allocations, v.valid, v.invalid, v.pending,
  v.trust, v.trusted ? "yes" : "", Number(v.credit || 0).toFixed(1),
  v.banned ? "banned" : v.quarantined ? "quarantined" : "active"];
const VOL_HEAD = ["id", "name", "team", "row", "allocations", "valid", "invalid", "pending", "trust", "trusted", "credit", "state"];

function volunteersView(main) {
  const out = el("div");
  main.replaceChildren(el("h2", {}, "Volunteers"), out);
  let last = null;
  return async () => {
    const got = await api("/v1/volunteers");
    if (got === last) return;
    last = got;
    const { volunteers } = got;
    out.replaceChildren(volunteers.length ? table(VOL_HEAD, volunteers.map((v) => ({ v, cells: volCells(v) })),
      (r) => { location.hash = "#/volunteer/" + r.v.id; }) : el("p", {}, "No volunteers."));
  };
}

function volunteerView(main, id) {
  const info = el("div"), acts = el("div", { class: "actions" }), msg = el("p", { id: "vol-msg" }), allocs = el("div");
  main.replaceChildren(el("h2", {}, "Volunteer " + id), info, acts, msg, el("h3", {}, "Its allocations (audit)"), allocs);
  let vol = null;
  const ban = el("button", { class: "danger", id: "ban" }, "Ban…");
  const release = el("button", { id: "release" }, "Release from quarantine");
  const reason = el("input", { id: "ban-reason", placeholder: "reason (optional)", "aria-label": "ban reason" });
  ban.onclick = async () => {
    const ok = await confirmAction(`Ban volunteer ${id} (${vol.name})?`, [
      el("p", {}, "In one transaction the master will:"),
      el("ul", {}, el("li", {}, "refuse its token from now on (its worker stops);"),
        el("li", {}, `revoke its leases and mark every result it returned invalid (${vol.valid + vol.invalid + vol.pending} results: ${vol.valid} valid, ${vol.pending} pending);`),
        el("li", {}, "re-queue each task that no longer has a quorum without its results, and every descendant of those that was allocated or done;"),
        el("li", {}, "reopen jobs that were done.")),
      el("p", {}, "A ban cannot be undone.")]);
    if (!ok) return;
    try {
      const r = await api(`/v1/volunteers/${id}/ban`, { method: "POST", body: JSON.stringify({ reason: reason.value }) });
      msg.textContent = "banned: " + Object.entries(r).map(([k, v]) => `${k} ${v}`).join(", ");
      refresh();
    } catch (e) { msg.textContent = "error: " + e.message; }
  };
  release.onclick = async () => {
    try {
      await api(`/v1/volunteers/${id}/release`, { method: "POST", body: "{}" });
      msg.textContent = "released from quarantine";
      refresh();
    } catch (e) { msg.textContent = "error: " + e.message; }
  };
  return async () => {
    const { volunteers } = await api("/v1/volunteers");
    vol = volunteers.find((v) => v.id === id);
    if (!vol) { info.replaceChildren(el("p", { class: "error" }, "no volunteer " + id)); return; }
    info.replaceChildren(table(VOL_HEAD, [{ cells: volCells(vol) }]));
    acts.replaceChildren(...(vol.banned ? [el("span", {}, "banned")] : [reason, ban]), ...(vol.quarantined ? [release] : []));
    const a = await api("/v1/audit/volunteers/" + id);
    const list = a.allocations || [];
    allocs.replaceChildren(table(["t", "index", "job", "task", "lease", "outcome"], list.slice(-200).reverse().map((x) => ({ x,
      cells: [x.t, x.index, x.job, x.task, x.lease_state, x.result ? x.result.outcome : ""] })), (r) => { location.hash = "#/audit/" + r.x.index; }));
  };
}

// ---- Audit ----
function auditView(main, n) {
  const input = el("input", { id: "index", type: "number", min: 1, value: n || "", "aria-label": "allocation index" });
  const out = el("div", { id: "audit-out" });
  const form = el("form", { class: "actions", id: "audit" }, el("label", { for: "index" }, "Allocation index n:"), input, el("button", {}, "Who computed it?"));
  form.onsubmit = (e) => { e.preventDefault(); location.hash = "#/audit/" + input.value; };
  const vol = el("input", { id: "audit-vol", type: "number", min: 1, "aria-label": "volunteer id" });
  const vform = el("form", { class: "actions", id: "audit-volunteer" }, el("label", { for: "audit-vol" }, "A volunteer's indices, volunteer id:"), vol, el("button", {}, "List"));
  vform.onsubmit = (e) => { e.preventDefault(); location.hash = "#/volunteer/" + vol.value; };
  main.replaceChildren(el("h2", {}, "Audit"), form, vform, out);
  if (!n) return null;
  return async () => {
    try {
      const a = await api("/v1/audit/index/" + n);
      const rows = Object.entries(a).filter(([, v]) => typeof v !== "object" || v === null)
        .map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", { class: "left" }, String(v))));
      const vid = a.volunteer && a.volunteer.id;
      out.replaceChildren(el("p", { id: "audit-summary" }, `φ⁻¹(${n}) = (row ${a.row}, t ${a.t})`,
        vid ? [" → ", el("a", { href: "#/volunteer/" + vid }, `volunteer ${vid} (${a.volunteer.name})`)] : " → no volunteer",
        a.allocated ? [" → ", el("a", { href: "#/job/" + a.job }, `job ${a.job}`), ` task ${a.task}, result: ${a.result ? a.result.outcome : "none"}`] : " (not allocated)"),
        el("table", { id: "audit-table" }, rows), el("pre", {}, JSON.stringify(a, null, 2)));
    } catch (e) { out.replaceChildren(el("p", { class: "error" }, e.message)); }
  };
}

// ---- router ----
function route() {
  const h = location.hash || "#/jobs";
  const m = h.match(/^#\/(\w+)(?:\/(\d+)(?:\/(\w+))?)?/) || [];
  const view = m[1] === "jobs" && m[2] ? "job" : m[1] || "jobs", id = m[2] ? Number(m[2]) : null;
  for (const a of document.querySelectorAll("nav a"))
    a.classList.toggle("on", view.startsWith(a.dataset.view.replace(/s$/, "")));
  const main = $("#view");
  if (!token) { main.replaceChildren(el("p", {}, "Enter the admin token above.")); poll = null; return; }
  poll = view === "job" && id && m[3] === "distribution" ? renderDist(main, id)
    : view === "job" && id ? renderJob(main, id)
    : view === "volunteers" ? volunteersView(main)
    : view === "volunteer" && id ? volunteerView(main, id)
    : view === "audit" ? auditView(main, id)
    : jobsView(main);
  refresh();
}

let busy = false; // one poll at a time: a slow answer is not asked for twice
export async function refresh() {
  if (!poll || busy) return;
  busy = true;
  const f = poll;
  try {
    await f();
    status("updated " + new Date().toLocaleTimeString());
  } catch (e) {
    status("error: " + e.message, true);
  } finally {
    busy = false;
    if (f !== poll) refresh(); // the view changed meanwhile
  }
}

$("#login").onsubmit = (e) => {
  e.preventDefault();
  token = $("#token").value.trim();
  sessionStorage.setItem(TOKEN_KEY, token);
  $("#token").value = "";
  showLogin();
  route();
};
$("#logout").onclick = () => { sessionStorage.removeItem(TOKEN_KEY); token = ""; showLogin(); route(); };
function showLogin() {
  $("#token").hidden = !!token;
  $("#login button").hidden = !!token;
  $("#logout").hidden = !token;
}
window.addEventListener("hashchange", route);
showLogin();
route();
clearInterval(timer);
timer = setInterval(() => { if (!document.hidden) refresh(); }, 2000);
