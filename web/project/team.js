// team.js — a team's page (team.html?id=N): its founder, description, web
// site, members and credit (GET /v1/teams/{id}); for a logged-in account a
// button to join or leave it (PATCH /v1/accounts/{id}), and for its founder
// a form that changes its name, description, site and country
// (PATCH /v1/teams/{id}).
import { $, el, api, say, name, intParam, session, facts, table, fmtCredit, fmtInt, fmtTime, accountLink, link } from "./common.js";

const id = intParam("id");
let me = null; // the session, when logged in

// The team's site: a link only when it is an http(s) URL, else its text.
function site(url) {
  if (!url) return "—";
  let u = null;
  try { u = new URL(url); } catch { /* not a URL: shown as text */ }
  return u && (u.protocol === "https:" || u.protocol === "http:")
    ? el("a", { href: u.href, rel: "nofollow noopener noreferrer ugc", id: "team-url" }, name(url))
    : name(url);
}

function sections(t) {
  const top = t.members_top || [];
  return [
    t.description ? el("p", { id: "team-description" }, name(t.description)) : null,
    facts("team-facts", [
      ["Founder", accountLink(t.founder), "team-founder"],
      ["Created", fmtTime(t.created)],
      ["Country", t.country ? name(t.country) : "—"],
      ["Web site", site(t.url)],
      ["Members", fmtInt(t.members), "team-members"],
      ["Credit", fmtCredit(t.credit), "team-credit"],
      ["Recent average credit (a day)", fmtCredit(t.expavg_credit)],
    ]),
    el("h2", {}, "Members"),
    top.length
      ? table(t.members > top.length ? `The ${top.length} with the most credit` : null,
        ["Name", "Credit", "Recent average (a day)"],
        top.map((m) => [link("account.html", m.id, m.name), fmtCredit(m.credit), fmtCredit(m.expavg_credit)]),
        { id: "members-table", num: [1, 2] })
      : el("p", {}, "Nobody is in this team now."),
  ];
}

// The founder's form: only the fields changed are sent.
function editForm(t) {
  const input = (key, label, attrs = {}) => [el("label", { for: "edit-" + key }, label),
    el(key === "description" ? "textarea" : "input", { id: "edit-" + key, name: key, ...attrs })];
  const form = el("form", { id: "team-edit", class: "stack", "aria-labelledby": "edit-title" },
    input("name", "Name", { required: true, maxlength: 64 }),
    input("description", "Description", { rows: 3 }),
    input("url", "Web site", { type: "url" }),
    input("country", "Country"),
    el("button", {}, "Save"));
  for (const k of ["name", "description", "url", "country"]) form.elements[k].value = t[k] || "";
  form.onsubmit = async (e) => {
    e.preventDefault();
    const change = {};
    for (const k of ["name", "description", "url", "country"])
      if (form.elements[k].value !== (t[k] || "")) change[k] = form.elements[k].value;
    if (!Object.keys(change).length) return say("Nothing changed.");
    try {
      show(await api(`/v1/teams/${id}`, { method: "PATCH", body: change }));
      say("Team saved.");
    } catch (err) { say("Not saved: " + err.message, true); }
  };
  return [el("h2", { id: "edit-title" }, "Change the team (you founded it)"), form];
}

async function move(team, done) {
  try {
    await api(`/v1/accounts/${me.account}`, { method: "PATCH", body: { team } });
    me = await session();
    show(await api(`/v1/teams/${id}`));
    say(done);
  } catch (err) { say("Could not change your team: " + err.message, true); }
}

function actions(t) {
  if (!me) return [el("p", {}, el("a", { href: "login.html" }, "Log in"), " to join this team.")];
  const inIt = me.team && me.team.id === id;
  const b = el("button", { id: inIt ? "leave" : "join" }, inIt ? "Leave this team" : "Join this team");
  b.onclick = () => move(inIt ? null : id, inIt ? "You left the team." : "You joined the team.");
  return [el("p", { class: "actions" }, b,
    inIt ? " Your credit from now on goes to no team." : " Your credit from now on counts for this team."),
  ...(t.founder && t.founder.id === me.account ? editForm(t) : [])];
}

function show(t) {
  $("#title").replaceChildren(name(t.name));
  document.title = `${t.name} — team`;
  $("#team").replaceChildren(...sections(t));
  $("#team-actions").replaceChildren(...actions(t));
}

if (!id) say("No team: the address names none (team.html?id=N).", true);
else {
  try {
    me = await session();
    show(await api(`/v1/teams/${id}`));
  } catch (e) {
    say(e.status === 404 ? `No team ${id}.` : "Could not load the team: " + e.message, true);
  }
}
