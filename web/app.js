// The Cairn dashboard: reads the master's HTTP API with the admin token the
// user types (kept in this tab's sessionStorage only) and refreshes every 2 s.
"use strict";
const $ = (sel) => document.querySelector(sel);
let token = sessionStorage.getItem("cairn-admin-token") || "";
let openJob = null;

async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error((body && body.error && body.error.message) || r.status);
  return body;
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text;
  row.appendChild(td);
  return td;
}

function renderJobs(jobs) {
  const tbody = $("#jobs tbody");
  tbody.replaceChildren();
  for (const j of jobs) {
    const tr = document.createElement("tr");
    for (const v of [j.id, j.name, j.app, j.policy, j.state]) cell(tr, v);
    const bar = document.createElement("div");
    bar.className = "bar";
    const fill = document.createElement("div");
    fill.style.width = (100 * j.counts.done / Math.max(1, j.tasks)).toFixed(1) + "%";
    bar.appendChild(fill);
    cell(tr, "").appendChild(bar);
    for (const k of ["waiting", "eligible", "running", "done", "failed"]) cell(tr, j.counts[k]);
    tr.onclick = () => { openJob = j.id; refresh(); };
    tbody.appendChild(tr);
  }
}

function renderTasks(id, tasks) {
  $("#job").hidden = false;
  $("#job-id").textContent = id;
  const box = $("#tasks");
  box.replaceChildren();
  for (const t of tasks) {
    const s = document.createElement("span");
    s.className = t.state;
    s.title = t.id + ": " + t.state;
    s.onclick = () => {
      $("#task-info").textContent = `${t.id}: ${t.state}, attempts ${t.attempts}` +
        (t.index ? `, index ${t.index} by volunteer ${t.volunteer}` : "");
    };
    box.appendChild(s);
  }
}

function renderVolunteers(vols) {
  const tbody = $("#volunteers tbody");
  tbody.replaceChildren();
  for (const v of vols) {
    const tr = document.createElement("tr");
    for (const x of [v.id, v.name, v.cluster, v.row, v.allocations, v.valid, v.invalid,
                     v.pending, v.banned ? "yes" : "no"]) cell(tr, x);
    tbody.appendChild(tr);
  }
}

async function refresh() {
  if (!token) { $("#status").textContent = "enter the admin token"; return; }
  try {
    renderJobs((await api("/v1/jobs")).jobs);
    renderVolunteers((await api("/v1/volunteers")).volunteers);
    if (openJob) renderTasks(openJob, (await api(`/v1/jobs/${openJob}/tasks`)).tasks);
    $("#status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    $("#status").textContent = "error: " + e.message;
  }
}

$("#login").onsubmit = (e) => {
  e.preventDefault();
  token = $("#token").value.trim();
  sessionStorage.setItem("cairn-admin-token", token);
  refresh();
};

$("#audit").onsubmit = async (e) => {
  e.preventDefault();
  try {
    $("#audit-out").textContent = JSON.stringify(await api("/v1/audit/index/" + $("#index").value), null, 2);
  } catch (err) {
    $("#audit-out").textContent = "error: " + err.message;
  }
};

refresh();
setInterval(refresh, 2000);
