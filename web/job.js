// One job's view (#/job/ID): state counts and actions, its dag drawn by
// layers in SVG (up to SVG_MAX tasks; a canvas grid, one cell per task,
// beyond), E(t) of its policy beside fifo's (GET /v1/jobs/{id}/dag), the
// throughput seen since the view opened, its running tasks with the
// progress their workers reported, and its failures. No DOM element
// per task beyond what is drawn. Every 2 s (conditional GETs, app.js) the
// view reads the job and its tasks' states (GET /v1/jobs/{id}/states, a
// letter per task); the full task list (reasons, stderr tails) only for
// jobs of up to TASKS_MAX tasks, again every PROGRESS_MS while some run
// (their progress moves without their states); beyond, a task's details
// on a click.
// The job's categories (docs/jobs.md, "Automatic sizes") are listed when
// one is measured or sizes its tasks itself: the largest peaks of their
// successful runs and what an automatic task asks now; a task's details
// show how it is sized and, per attempt, what its worker measured (peak
// memory and disk, wall time), the size it ran under and a retry at a
// larger size.
// The dag's tasks take the keyboard focus (Tab enters the dag, arrow keys
// move, Enter or Space opens a task). "Download results" saves a ZIP of the
// result listing, each done task's output and its output files.
import { api, el, confirmAction, refresh, fetchBytes, saveBlob } from "./app.js";
import { zip } from "./zip.js";

const SVG_MAX = 2000, DAG_MAX = 20000, TASKS_MAX = 5000, ZIP_MAX_BYTES = 256 * 1048576;
const TASKS_PAGE = 10000; // the most tasks one GET /v1/jobs/{id}/tasks page holds
const PROGRESS_MS = 6000; // the running tasks' progress read again this often (heartbeats bring it)

// A fraction done (0 to 1) as a bar and its percentage.
const progressOf = (p) => {
  const b = el("div", { class: "bar", title: `${(100 * p).toFixed(1)}% done` }, el("div"));
  b.firstChild.style.width = (100 * p).toFixed(1) + "%";
  return [b, ` ${(100 * p).toFixed(1)}%`];
};

// Every task of job id: its pages, each "after" the last one's "next".
async function allTasks(id) {
  const tasks = [];
  for (let after = 0; ;) {
    const p = await api(`/v1/jobs/${id}/tasks?limit=${TASKS_PAGE}` + (after ? `&after=${after}` : ""));
    tasks.push(...p.tasks);
    if (!p.next) return { tasks };
    after = p.next;
  }
}
const STATE = { w: "waiting", e: "eligible", r: "running", d: "done", f: "failed" };
const NS = "http://www.w3.org/2000/svg";
const COLORS = { waiting: "#ccc", eligible: "#f2c14e", running: "#4a90d9", done: "#3a7d44", failed: "#c0392b" };
const mib = (bytes) => (bytes / 1048576).toFixed(1) + " MiB";
// A category's row: label, tasks (automatic ones), peaks, size asked now.
const categoryRow = (k) => el("tr", {}, el("td", {}, k.category || "(job)"), el("td", {}, `${k.tasks}${k.auto ? ` (${k.auto} auto)` : ""}`),
  el("td", {}, k.measured ? `${k.memory_mib} MiB` : "-"), el("td", {}, k.measured ? `${k.disk_mib} MiB` : "-"),
  el("td", {}, k.measured ? k.cpu_ratio.toFixed(2) : "-"),
  el("td", {}, typeof k.size === "object" ? `${k.size.cores} cores, ${k.size.memory_mib} MiB memory, ${k.size.disk_mib} MiB disk`
    : k.size === "whole" ? "a worker's whole offer" : "-"));
// How a task is sized: "auto", or its request; its category, retry_larger, growth.
const sizingOf = (t) => !t.resources ? null : el("p", { class: "sizing" }, "resources: ",
  typeof t.resources === "string" ? "auto" : `${t.resources.cores} cores, ${t.resources.memory_mib} MiB memory, ${t.resources.disk_mib} MiB disk`,
  t.category ? `, category "${t.category}"` : "", t.retry_larger ? ", retry_larger" : "",
  t.grown && t.grown.memory_mib ? `; grown to ${t.grown.memory_mib} MiB memory` : "",
  t.grown && t.grown.disk_mib ? `; grown to ${t.grown.disk_mib} MiB disk` : "");
// One attempt's measurements, the size it ran under and its retry, as text.
const usageOf = (h) => {
  const u = h.usage || {}, parts = [];
  if (u.memory_bytes != null) parts.push(`peak memory ${mib(u.memory_bytes)}`);
  if (u.disk_bytes != null) parts.push(`disk ${mib(u.disk_bytes)}`);
  if (u.wall_seconds != null) parts.push(`${u.wall_seconds.toFixed(2)} s wall`);
  if (h.cpu_seconds != null) parts.push(`${h.cpu_seconds.toFixed(2)} s CPU`);
  if (h.sized && h.sized.memory_mib) parts.push(`sized to ${h.sized.memory_mib} MiB`);
  for (const [k, v] of Object.entries(h.retry || {})) parts.push(`retried with ${v} MiB ${k === "disk_mib" ? "disk" : "memory"} (not counted)`);
  return parts.length ? "; " + parts.join(", ") : "";
};
const svg = (tag, attrs = {}) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
};

function lineChart(series, title) {
  const W = 600, H = 200, P = 30;
  const s = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  let xmax = 1, ymax = 1;
  for (const { pts } of series) for (const [x, y] of pts) { xmax = Math.max(xmax, x); ymax = Math.max(ymax, y); }
  const X = (x) => P + (W - 2 * P) * x / xmax, Y = (y) => H - P - (H - 2 * P) * y / ymax;
  s.append(svg("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#999" }), svg("line", { x1: P, y1: P, x2: P, y2: H - P, stroke: "#999" }));
  const lab = (x, y, t, a = "start") => { const e = svg("text", { x, y, "text-anchor": a }); e.textContent = t; s.append(e); };
  lab(P - 3, P, String(+ymax.toFixed(2)), "end"); lab(W - P, H - P + 14, String(+xmax.toFixed(1)), "end"); lab(P, 12, title);
  series.forEach(({ name, pts, color }, i) => {
    const step = Math.max(1, Math.floor(pts.length / 1000)); // at most ~1,000 points drawn
    const p = pts.filter((_, k) => k % step === 0 || k === pts.length - 1).map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(" ");
    s.append(svg("polyline", { points: p, stroke: color }));
    lab(W - P - 120, P + 12 * i, "— " + name); s.lastChild.setAttribute("fill", color);
  });
  return s;
}

// The dag by layers: x = depth, y = position in its layer. One task at a
// time is in the tab order (a roving tabindex): arrow keys move it (right:
// a child, left: a parent, up and down: the layer), Enter or Space calls
// open(v); the task under the pointer or the focus has its parents and
// children lit.
function drawDag(box, dag, nodes, open) {
  const n = dag.keys.length, layers = [];
  dag.depth.forEach((d, i) => (layers[d] = layers[d] || []).push(i));
  const children = Array.from({ length: n }, () => []);
  dag.parents.forEach((ps, c) => ps.forEach((p) => children[p].push(c)));
  const maxw = Math.max(...layers.map((l) => l.length)), DX = 40, DY = 16;
  const pos = new Array(n);
  layers.forEach((l, d) => l.forEach((v, k) => { pos[v] = [20 + d * DX, 12 + (k + (maxw - l.length) / 2) * DY]; }));
  const s = svg("svg", { width: 40 + layers.length * DX, height: 24 + maxw * DY, id: "dag-svg" });
  const eg = svg("g"), ng = svg("g"), edges = [];
  dag.parents.forEach((ps, c) => ps.forEach((p) => {
    const [x1, y1] = pos[p], [x2, y2] = pos[c];
    const e = svg("path", { d: `M${x1},${y1}C${x1 + DX / 2},${y1} ${x2 - DX / 2},${y2} ${x2},${y2}` });
    edges.push([p, c, e]); eg.append(e);
  }));
  const place = new Array(n); // index of each task in its layer
  layers.forEach((l) => l.forEach((v, k) => { place[v] = k; }));
  for (let v = 0; v < n; v++) {
    const c = svg("circle", { cx: pos[v][0], cy: pos[v][1], r: 6, class: "n", "data-i": v, fill: COLORS.waiting,
      tabindex: v === layers[0][0] ? 0 : -1, role: "button", "aria-label": `task key ${dag.keys[v]}` });
    nodes[v] = c; ng.append(c);
  }
  const target = (e) => { const v = Number(e.target.dataset && e.target.dataset.i); return Number.isNaN(v) ? -1 : v; };
  ng.onclick = (e) => { const v = target(e); if (v >= 0) open(v); };
  ng.onkeydown = (e) => {
    const v = target(e);
    if (v < 0) return;
    const l = layers[dag.depth[v]];
    const to = e.key === "Enter" || e.key === " " ? (open(v), -1)
      : e.key === "ArrowRight" ? (children[v][0] ?? -1)
      : e.key === "ArrowLeft" ? (dag.parents[v][0] ?? -1)
      : e.key === "ArrowDown" ? (l[place[v] + 1] ?? -1)
      : e.key === "ArrowUp" ? (l[place[v] - 1] ?? -1) : -2;
    if (to === -2) return;
    e.preventDefault();
    if (to < 0) return;
    nodes[v].setAttribute("tabindex", -1);
    nodes[to].setAttribute("tabindex", 0);
    nodes[to].focus();
  };
  let lit = [];
  const light = (e) => {
    const v = target(e); if (v < 0) return;
    for (const x of lit) x.classList.remove("hl", "par", "chi");
    lit = [nodes[v]]; nodes[v].classList.add("hl");
    for (const p of dag.parents[v]) { nodes[p].classList.add("par"); lit.push(nodes[p]); }
    for (const c of children[v]) { nodes[c].classList.add("chi"); lit.push(nodes[c]); }
    for (const [p, c, ed] of edges) if (p === v || c === v) { ed.classList.add("hl"); lit.push(ed); }
  };
  ng.addEventListener("mouseover", light);
  ng.addEventListener("focusin", light);
  s.append(eg, ng);
  box.replaceChildren(s);
  return ng;
}

async function sha256hex(buf) {
  const h = await crypto.subtle.digest("SHA-256", buf);
  return [...new Uint8Array(h)].map((x) => x.toString(16).padStart(2, "0")).join("");
}

export function renderJob(main, id) {
  const head = el("div"), acts = el("div", { class: "actions" }), msg = el("p", { id: "job-msg" });
  const dagBox = el("div", { id: "dag" }), charts = el("div", { class: "grid2" }), prof = el("div"), thr = el("div");
  const fails = el("div", { id: "failures" }), detail = el("div", { id: "task-detail" }), running = el("div", { id: "running" });
  const cats = el("div", { id: "categories" });
  const legend = el("p", { class: "legend" }, Object.keys(COLORS).map((k) => el("span", { class: k }, k)));
  charts.append(prof, thr);
  main.replaceChildren(el("h2", {}, "Job " + id), head, acts, msg, cats, el("h3", {}, "Tasks"), legend, dagBox, detail, charts,
    el("h3", {}, "Running"), running, el("h3", {}, "Failures"), fails);
  const samples = []; // [seconds since open, done]
  const t0 = performance.now();
  let job = null, dag = null, nodes = [], grid = null, states = null, painted = "", first = 0, tasks = null, dagAsked = false, tasksAt = 0;

  const prio = el("input", { type: "number", id: "priority", "aria-label": "priority" });
  const prioBtn = el("button", { id: "set-priority" }, "Set priority");
  prioBtn.onclick = () => act(() => api(`/v1/jobs/${id}/priority`, { method: "POST", body: JSON.stringify({ priority: Number(prio.value) }) }), "priority set");
  const cancel = el("button", { class: "danger", id: "cancel" }, "Cancel job…");
  cancel.onclick = async () => {
    if (await confirmAction(`Cancel job ${id}?`, `No task of "${job.name}" will be allocated any more (${job.tasks - job.counts.done} tasks not done); its leases end at the workers' next heartbeats. This cannot be undone.`))
      act(() => api(`/v1/jobs/${id}/cancel`, { method: "POST", body: "{}" }), "cancelled");
  };
  const del = el("button", { class: "danger", id: "delete" }, "Delete job…");
  del.onclick = async () => {
    if (await confirmAction(`Delete job ${id}?`, `Job "${job.name}", its ${job.tasks} tasks' results and the files only it names are deleted (a running job is cancelled first). This cannot be undone.`))
      act(async () => { const r = await api(`/v1/jobs/${id}`, { method: "DELETE" }); location.hash = "#/jobs"; return r; }, "deleted");
  };
  const dl = el("button", { id: "download", title: "a ZIP: results.json, each done task's output and its output files" }, "Download results");
  dl.onclick = () => act(downloadResults, "");
  const distLink = el("a", { href: `#/job/${id}/distribution`, id: "dist-link", hidden: true }, "Distribution of its broadcast inputs");
  async function act(f, done) {
    try { const said = await f(); msg.textContent = typeof said === "string" ? said : done; msg.className = ""; refresh(); }
    catch (e) { msg.textContent = "error: " + e.message; msg.className = "error"; }
  }

  // The ZIP of job-ID/results.json (GET /v1/jobs/{id}/tasks), job-ID/stdout/TASK
  // (a done task's output) and job-ID/outputs/TASK/NAME (its output files,
  // each SHA-256 checked when the browser can), TASK percent-encoded; jobs
  // beyond TASKS_MAX tasks or ZIP_MAX_BYTES of outputs get the listing alone.
  async function downloadResults() {
    const list = await allTasks(id), enc = new TextEncoder(), dir = `job-${id}`;
    const entries = [{ name: `${dir}/results.json`, data: enc.encode(JSON.stringify(list, null, 1)) }];
    const bytes = list.tasks.reduce((a, t) => a + (t.outputs || []).reduce((b, o) => b + o.size, 0), 0);
    if (list.tasks.length > TASKS_MAX || bytes > ZIP_MAX_BYTES) {
      saveBlob(new Blob([entries[0].data], { type: "application/json" }), `job-${id}-results.json`);
      return `results.json only: the ZIP holds jobs of up to ${TASKS_MAX} tasks and ${ZIP_MAX_BYTES >> 20} MiB of output files (cairn results ${id} --dir OUT fetches them all)`;
    }
    let files = 0, kept = 0;
    for (const t of list.tasks) {
      const td = encodeURIComponent(t.id);
      if (t.state === "done" && typeof t.output === "string")
        entries.push({ name: `${dir}/stdout/${td}`, data: t.encoding === "base64" ? Uint8Array.from(atob(t.output), (ch) => ch.charCodeAt(0)) : enc.encode(t.output) });
      for (const o of t.state === "done" ? t.outputs || [] : []) {
        if (o.kept) { kept++; continue; } // on workers only: the master has no bytes to give
        if (o.name.startsWith("/") || o.name.split("/").includes("..")) throw new Error(`task ${t.id}: unsafe output name ${o.name}`);
        msg.textContent = `downloading output file ${++files}…`;
        const data = await fetchBytes(outputPath(t.id, o.name));
        if (crypto.subtle && await sha256hex(data) !== o.sha256) throw new Error(`task ${t.id}: ${o.name} does not match its SHA-256`);
        entries.push({ name: `${dir}/outputs/${td}/${o.name}`, data });
      }
    }
    saveBlob(zip(entries), `job-${id}-results.zip`);
    return `results downloaded: job-${id}-results.zip (${list.tasks.length} tasks, ${files} output files` +
      (kept ? `; ${kept} kept on workers, not at the master` : "") + ")";
  }
  const outputPath = (task, name) => `/v1/jobs/${id}/output?task=${encodeURIComponent(task)}&name=${encodeURIComponent(name)}`;
  const getFile = (path, name) => el("button", { type: "button", class: "linkish", onclick: async () => {
    try { saveBlob(new Blob([await fetchBytes(path)]), name); } catch (e) { detail.append(el("p", { class: "error" }, e.message)); }
  } }, name);

  async function showTask(key) {
    try {
      const t = await api(`/v1/jobs/${id}/tasks/${key}`);
      const brief = tasks && tasks[key - first];
      detail.replaceChildren(el("div", { class: "card" }, el("strong", {}, `task ${t.id} (key ${t.key}): ${t.state}, attempts ${t.attempts}/${t.max_attempts}`),
        t.progress != null ? el("p", { class: "progress" }, "progress: ", ...progressOf(t.progress), " done, as its worker last reported") : null,
        sizingOf(t),
        brief && brief.reason ? el("p", {}, "reason: " + brief.reason) : null,
        brief && brief.stderr ? el("pre", {}, brief.stderr) : null,
        t.state === "done" ? el("p", { class: "outputs" }, "Output: ", getFile(`/v1/tasks/${t.key}/output`, `${t.id}.stdout`),
          ...((brief && brief.outputs) || []).map((o) => [" ", o.kept ? el("span", { title: "kept on workers; the master holds no copy" }, o.name.split("/").pop() + " (on workers)")
            : getFile(outputPath(t.id, o.name), o.name.split("/").pop())]),
          !brief && job.tasks > TASKS_MAX ? " (output files: Download results or cairn results --dir)" : "") : null,
        el("ul", {}, t.history.map((h) => el("li", {}, `index `, el("a", { href: "#/audit/" + h.index }, h.index),
          ` volunteer `, el("a", { href: "#/volunteer/" + h.volunteer }, h.volunteer), `: ${h.lease}${h.outcome ? ", " + h.outcome : ""}${h.reason ? ", " + h.reason : ""}${usageOf(h)}`)))));
    } catch (e) { detail.replaceChildren(el("p", { class: "error" }, e.message)); }
  }

  // Colours what changed since the last paint: O(tasks) string compares,
  // no DOM work for unchanged tasks.
  function paint() {
    const ctx = grid && grid.getContext("2d"), cols = grid && Number(grid.dataset.cols), S = grid && Number(grid.dataset.s);
    for (let i = 0; i < states.length; i++) {
      if (painted[i] === states[i]) continue;
      const color = COLORS[STATE[states[i]]];
      if (nodes.length) { if (nodes[i]) nodes[i].setAttribute("fill", color); }
      else if (ctx) { ctx.fillStyle = color; ctx.fillRect((i % cols) * S, Math.floor(i / cols) * S, S - (S > 2), S - (S > 2)); }
    }
    painted = states;
  }

  function paintFailures() {
    const link = (i, label) => el("a", { href: "#", onclick: (e) => { e.preventDefault(); showTask(first + i); } }, label);
    let items = [];
    if (tasks) items = tasks.map((t, i) => [t, i]).filter(([t]) => t.state === "failed" || t.reason).slice(0, 100)
      .map(([t, i]) => el("li", {}, link(i, t.id), `: ${t.state}, ${t.reason || "exit " + t.exit_status}`, t.stderr ? el("pre", {}, t.stderr.slice(-400)) : null));
    else for (let i = states.indexOf("f"); i >= 0 && items.length < 100; i = states.indexOf("f", i + 1))
      items.push(el("li", {}, link(i, "task key " + (first + i)), ": failed (click for its reasons)"));
    fails.replaceChildren(items.length ? el("ul", {}, items) : el("p", {}, "None."));
  }

  // The running tasks (the first 100), each with its progress when its
  // worker reported it.
  function paintRunning() {
    const link = (i, label) => el("a", { href: "#", onclick: (e) => { e.preventDefault(); showTask(first + i); } }, label);
    if (!tasks) {
      running.replaceChildren(el("p", {}, `${job.counts.running} running; progress is listed for jobs of up to ${TASKS_MAX} tasks (a task's own shows it).`));
      return;
    }
    const items = tasks.map((t, i) => [t, i]).filter(([t]) => t.state === "running").slice(0, 100)
      .map(([t, i]) => el("li", {}, link(i, t.id), ": ", ...(t.progress != null ? progressOf(t.progress) : ["no progress reported"])));
    running.replaceChildren(items.length ? el("ul", {}, items) : el("p", {}, "None."));
  }

  function makeGrid(n) {
    const cols = Math.min(400, Math.ceil(Math.sqrt(n * 2))), S = n > 40000 ? 2 : 4;
    grid = el("canvas", { id: "grid", width: cols * S, height: Math.ceil(n / cols) * S, "data-cols": cols, "data-s": S, tabindex: 0 });
    grid.onclick = (e) => {
      const sc = grid.width / grid.clientWidth; // offsetX/Y: inside the border
      const i = Math.floor(e.offsetY * sc / S) * cols + Math.floor(e.offsetX * sc / S);
      if (states && i < states.length) showTask(first + i);
    };
    // The keyboard: a cursor cell (black) moved by the arrow keys; Enter or
    // Space opens its task.
    let cur = 0;
    const cell = (i, color) => {
      const ctx = grid.getContext("2d"), x = (i % cols) * S, y = Math.floor(i / cols) * S;
      ctx.clearRect(x, y, S, S);
      ctx.fillStyle = color;
      ctx.fillRect(x, y, S - (S > 2), S - (S > 2));
    };
    grid.onkeydown = (e) => {
      if (!states) return;
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); showTask(first + cur); return; }
      const d = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols }[e.key];
      if (!d) return;
      e.preventDefault();
      if (cur + d < 0 || cur + d >= states.length) return;
      cell(cur, COLORS[STATE[states[cur]]]);
      cur += d;
      cell(cur, "#000");
      grid.setAttribute("aria-label", `task key ${first + cur}, ${STATE[states[cur]]}: Enter opens it`);
    };
    grid.setAttribute("aria-label", "tasks by state, one cell each: arrow keys move, Enter opens a task");
    dagBox.replaceChildren(grid);
  }

  async function loadDag() {
    dagAsked = true;
    if (job.tasks > DAG_MAX) { prof.replaceChildren(el("p", {}, `E(t) is drawn for jobs up to ${DAG_MAX} tasks.`)); makeGrid(job.tasks); return; }
    dag = await api(`/v1/jobs/${id}/dag`);
    if (job.tasks <= SVG_MAX) drawDag(dagBox, dag, nodes, (v) => showTask(dag.keys[v]));
    else makeGrid(job.tasks);
    const cols = ["#c0392b", "#2c7fb8", "#7b3294"];
    prof.replaceChildren(lineChart(Object.entries(dag.profiles).map(([name, p], i) => ({ name, color: cols[i % 3], pts: p.map((y, x) => [x, y]) })),
      "E(t): eligible tasks after t executions"));
  }

  return async () => {
    job = await api(`/v1/jobs/${id}`);
    const c = job.counts;
    head.replaceChildren(el("p", { id: "job-summary" }, `${job.name} (${job.app}, policy ${job.policy}): `, el("strong", { id: "job-state" }, job.state),
      ` — ${c.done}/${job.tasks} done, ${c.running} running, ${c.eligible} eligible, ${c.waiting} waiting, ${c.failed} failed; priority ${job.priority}`));
    if (!acts.childElementCount) { prio.value = job.priority; acts.append(prio, prioBtn, cancel, del, dl, distLink); }
    distLink.hidden = !(job.broadcast_files && job.broadcast_files.length);
    const sized = (job.categories || []).filter((k) => k.measured || k.auto);
    cats.replaceChildren(...(sized.length ? [el("h3", {}, "Sizes"), el("table", {}, el("tr", {}, ["category", "tasks", "peak memory", "peak disk",
      "CPU / wall", "asks now"].map((h) => el("th", {}, h))), ...sized.map(categoryRow))] : []));
    cancel.disabled = job.state !== "running";
    const now = (performance.now() - t0) / 1000;
    samples.push([now, c.done]);
    if (samples.length > 1800) samples.shift(); // the last hour
    if (samples.length > 1) {
      const pts = samples.slice(1).map(([t, d], k) => [t, Math.max(0, (d - samples[k][1]) / Math.max(0.001, t - samples[k][0]))]);
      thr.replaceChildren(lineChart([{ name: "tasks done / s", color: "#3a7d44", pts }], "throughput since this view opened"));
    }
    if (!dagAsked) await loadDag();
    const st = await api(`/v1/jobs/${id}/states`);
    first = st.first_key;
    const moved = st.states !== states;
    const due = c.running > 0 && job.tasks <= TASKS_MAX && performance.now() - tasksAt > PROGRESS_MS;
    if (!moved && !due) return;
    states = st.states;
    if (job.tasks <= TASKS_MAX) { tasks = (await allTasks(id)).tasks; tasksAt = performance.now(); }
    paint();
    paintFailures();
    paintRunning();
  };
}
