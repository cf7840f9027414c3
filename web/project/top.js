// top.js — the leaderboards (top.html?kind=accounts|teams|hosts
// &by=total|recent&page=P): 50 rows a page of GET /v1/public/top/{kind},
// ranked by total credit or by recent average credit (a day, half-life a
// week), with links to each account's and team's page.
import { $, el, api, say, fmtCredit, fmtInt, table, name, accountLink, teamLink, intParam, link } from "./common.js";

const KINDS = { accounts: "Accounts", teams: "Teams", hosts: "Hosts" };
const BYS = { total: "Total credit", recent: "Recent average credit" };
const q = new URLSearchParams(location.search);
const kind = q.get("kind") || "accounts";
const by = q.get("by") || "total";
const page = intParam("page") || 1;
const href = (k, b, p) => `top.html?kind=${k}&by=${b}` + (p > 1 ? `&page=${p}` : "");

function tabs(box, entries, current, make) {
  box.replaceChildren(...Object.entries(entries).map(([k, label]) =>
    el("a", { href: make(k), "aria-current": k === current ? "page" : null, "data-key": k }, label)));
}

// The columns of a kind: headers and a row's cells.
const COLUMNS = {
  accounts: [["Team"], (r) => [link("account.html", r.id, r.name), teamLink(r.team)]],
  teams: [["Members"], (r) => [link("team.html", r.id, r.name), fmtInt(r.members)]],
  hosts: [["Account", "Team"], (r) => [name(r.name), accountLink(r.account), teamLink(r.team)]],
};

function board(t) {
  const [extra, cells] = COLUMNS[kind];
  const rows = t.rows.map((r) => {
    const [first, ...rest] = cells(r);
    return [String(r.rank), first, fmtCredit(r.credit), fmtCredit(r.expavg_credit), ...rest];
  });
  const caption = el("span", {}, `${KINDS[kind]} by ${BYS[by].toLowerCase()}`,
    el("span", { class: "caption-note" }, ` — page ${t.page} of ${Math.max(1, t.pages)}`));
  return rows.length
    ? table(caption, ["Rank", "Name", "Credit", "Recent average (a day)", ...extra], rows,
      { id: "board-table", num: kind === "teams" ? [0, 2, 3, 4] : [0, 2, 3] })
    : el("p", { id: "board-empty" }, page > 1 ? "No rows on this page." : "Nobody has credit yet.");
}

function pager(t) {
  const kids = [];
  if (t.page > 1) kids.push(el("a", { href: href(kind, by, t.page - 1), rel: "prev", id: "prev" }, "Previous page"));
  kids.push(el("span", {}, `Page ${t.page} of ${Math.max(1, t.pages)}`));
  if (t.page < t.pages) kids.push(el("a", { href: href(kind, by, t.page + 1), rel: "next", id: "next" }, "Next page"));
  $("#pager").replaceChildren(...kids);
}

if (!KINDS[kind] || !BYS[by]) {
  say(`No such leaderboard: kind must be accounts, teams or hosts, by total or recent.`, true);
} else {
  document.title = `${KINDS[kind]} — leaderboard`;
  $("#title").textContent = `Leaderboard of ${KINDS[kind].toLowerCase()}`;
  for (const a of document.querySelectorAll("header nav a"))
    if (a.dataset.kind === kind) a.setAttribute("aria-current", "page");
  tabs($("#kinds"), KINDS, kind, (k) => href(k, by, 1));
  tabs($("#bys"), BYS, by, (b) => href(kind, b, 1));
  try {
    const t = await api(`/v1/public/top/${kind}?by=${by}&page=${page}`);
    $("#board").replaceChildren(board(t));
    pager(t);
  } catch (e) {
    say("Could not load the leaderboard: " + e.message, true);
  }
}
