// home.js — the project's home page (index.html): what the project
// computes (the operator's name and description), its totals, and its
// newest jobs with their progress when the operator makes them public
// (cairn-server --public-jobs; GET /v1/public/home).
import { $, el, api, say, fmtCredit, fmtInt, table, name } from "./common.js";

// The operator's description: paragraphs split at blank lines, each a text node.
function paragraphs(text) {
  return String(text || "").split(/\n\s*\n/).map((p) => p.trim()).filter(Boolean).map((p) => el("p", {}, p));
}

function totals(t) {
  const item = (label, value, id) => el("div", {}, el("dt", {}, label), el("dd", { id }, value));
  return [
    item("Accounts", fmtInt(t.accounts), "total-accounts"),
    item("Hosts active in the last day", fmtInt(t.hosts_active_day), "total-hosts"),
    item("Tasks done", fmtInt(t.tasks_done), "total-tasks"),
    item("Credit granted in the last day", fmtCredit(t.credit_day), "total-credit"),
  ];
}

function jobs(list) {
  return table(null, ["Job", "Name", "State", "Progress", "Done"], list.map((j) => [
    String(j.id), name(j.name), String(j.state),
    el("progress", { max: Math.max(1, j.tasks), value: Math.min(j.done, j.tasks), "aria-label": `job ${j.id}: ${j.done} of ${j.tasks} tasks done` }),
    `${fmtInt(j.done)} / ${fmtInt(j.tasks)}`,
  ]), { id: "jobs-table", num: [0, 4] });
}

try {
  const h = await api("/v1/public/home");
  const p = h.project || {};
  if (p.name) {
    $("#project-name").replaceChildren(name(p.name));
    document.title = String(p.name);
  }
  $("#project-description").replaceChildren(...paragraphs(p.description));
  $("#totals").replaceChildren(...totals(h.totals || {}));
  if (Array.isArray(h.jobs)) {
    $("#jobs").replaceChildren(h.jobs.length ? jobs(h.jobs) : el("p", {}, "No jobs yet."));
    $("#jobs-section").hidden = false;
  }
} catch (e) {
  say("Could not load the project's figures: " + e.message, true);
}
