// account-view.js — an account's public record (GET /v1/public/accounts/{id})
// as the account page (account.html) and the own page (me.html) show it:
// its figures, its hosts and its hosts' newest results. A result's
// accountable index is shown as text: looking one up (who computed it,
// GET /v1/audit/index/{n}) is the operator's, with the admin token.
import { el, fmtCredit, fmtTime, facts, table, name, teamLink } from "./common.js";

export function accountFacts(a) {
  return facts("account-facts", [
    ["Credit", fmtCredit(a.credit), "account-credit"],
    ["Recent average credit (a day)", fmtCredit(a.expavg_credit), "account-recent"],
    ["Team", teamLink(a.team), "account-team"],
    ["Country", a.country ? name(a.country) : "—"],
    ["Member since", fmtTime(a.created)],
  ]);
}

export function hostsTable(hosts) {
  if (!hosts.length) return el("p", { id: "hosts-empty" }, "No computer is attached yet.");
  return table(null, ["Host", "Name", "Platform", "Credit", "Recent average (a day)", "Last seen"],
    hosts.map((h) => [String(h.id), name(h.name), h.platform ? name(h.platform) : "—",
      fmtCredit(h.credit), fmtCredit(h.expavg_credit), fmtTime(h.last_seen)]), { id: "hosts-table", num: [0, 3, 4] });
}

export function resultsTable(results) {
  if (!results.length) return el("p", { id: "results-empty" }, "No result yet.");
  return table(el("span", {}, "Newest first ",
    el("span", { class: "caption-note" }, "(the index names the allocation in the project's audit)")),
  ["Index", "Job", "Task", "Outcome", "Credit", "Received"],
  results.map((r) => [String(r.idx), String(r.job), name(r.task), name(r.outcome), fmtCredit(r.credit), fmtTime(r.received)]),
  { id: "results-table", num: [0, 1, 4] });
}

// The three sections, under headings of level h.
export function accountSections(a, h = "h2") {
  return [el(h, {}, "Figures"), accountFacts(a), ...activity(a, h)];
}

// Its computers and recent results.
export function activity(a, h = "h2") {
  return [el(h, {}, "Computers"), hostsTable(a.hosts || []),
    el(h, {}, "Recent results"), resultsTable(a.results || [])];
}
