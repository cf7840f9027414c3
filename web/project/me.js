// me.js — the own page (me.html), for the logged-in account: its figures,
// its team (leave it, join one by its number, make one), its computers and
// recent results (GET /v1/public/accounts/{id}), a new account key, and
// log-out. Every change is a request with the session cookie and its CSRF
// token (common.js, api).
import { $, el, api, say, name, session, logOut, keyPanel, teamLink } from "./common.js";
import { accountFacts, activity } from "./account-view.js";

let me = null; // the session: {account, name, csrf, team}

const field = (id, label, attrs = {}) => [el("label", { for: id }, label),
  el(attrs.rows ? "textarea" : "input", { id, name: id, ...attrs })];

async function setTeam(team, done) {
  try {
    await api(`/v1/accounts/${me.account}`, { method: "PATCH", body: { team } });
    say(done);
    await render();
  } catch (e) { say("Could not change your team: " + e.message, true); }
}

function teamSection() {
  const kids = [el("h2", { id: "team-title" }, "Your team")];
  if (me.team) {
    const leave = el("button", { id: "leave" }, "Leave it");
    leave.onclick = () => setTeam(null, "You left your team.");
    kids.push(el("p", { class: "actions", id: "my-team" }, "You are in ", teamLink(me.team), ". ", leave));
  } else kids.push(el("p", { id: "my-team" }, "You are in no team."));
  const join = el("form", { id: "join-team", class: "stack" },
    ...field("join-id", "Team number", { type: "number", min: 1, required: true }),
    el("p", { class: "hint" }, "Its number is in its page's address (team.html?id=N); ",
      el("a", { href: "top.html?kind=teams" }, "find a team"), ". Your credit from now on counts for it."),
    el("button", {}, "Join"));
  join.onsubmit = (e) => { e.preventDefault(); setTeam(Number(join.elements["join-id"].value), "You joined the team."); };
  const make = el("form", { id: "create-team", class: "stack" },
    ...field("team-name", "Name", { required: true, maxlength: 64 }),
    ...field("team-description", "Description", { rows: 3 }),
    ...field("team-url", "Web site", { type: "url" }),
    ...field("team-country", "Country"),
    el("button", {}, "Make the team"));
  make.onsubmit = async (e) => {
    e.preventDefault();
    const v = (k) => make.elements["team-" + k].value;
    const body = { name: v("name") };
    for (const k of ["description", "url", "country"]) if (v(k)) body[k] = v(k);
    try {
      const t = await api("/v1/teams", { method: "POST", body });
      say(["You made ", el("a", { href: `team.html?id=${Number(t.id)}` }, name(body.name)), " and joined it."]);
      await render();
    } catch (err) { say("Team not made: " + err.message, true); }
  };
  kids.push(el("h3", {}, "Join a team"), join, el("h3", {}, "Make a team"),
    el("p", {}, "You will be its founder, the only one who can change it, and its first member."), make);
  return kids;
}

function keySection() {
  const out = el("div");
  const form = el("form", { id: "new-key", class: "stack" },
    ...field("key-email", "E-mail", { type: "email", required: true, autocomplete: "username" }),
    ...field("key-password", "Password", { type: "password", required: true, autocomplete: "current-password" }),
    el("button", {}, "Make a new account key"));
  form.onsubmit = async (e) => {
    e.preventDefault();
    try {
      const r = await api("/v1/accounts/login", { method: "POST",
        body: { email: form.elements["key-email"].value.trim(), password: form.elements["key-password"].value } });
      form.reset();
      out.replaceChildren(await keyPanel(r.account_key));
      say("A new account key is made; the old one no longer opens your account.");
    } catch (err) { say("No new key: " + err.message, true); }
  };
  return [el("h2", {}, "Account key"),
    el("p", {}, "Your account key was shown once, at sign-up. A new one replaces it: the old key stops " +
      "working, computers already attached stay attached."), form, out];
}

async function render() {
  me = await session();
  if (!me) {
    $("#title").textContent = "Your page";
    $("#me").replaceChildren(el("p", { id: "not-logged-in" }, "You are not logged in. ",
      el("a", { href: "login.html" }, "Log in"), " or ", el("a", { href: "signup.html" }, "sign up"), "."));
    return;
  }
  const a = await api(`/v1/public/accounts/${me.account}`);
  $("#title").replaceChildren(name(me.name));
  document.title = `${me.name} — your page`;
  const out = el("button", { id: "logout" }, "Log out");
  out.onclick = async () => {
    try { await logOut(); location.href = "index.html"; } catch (e) { say("Not logged out: " + e.message, true); }
  };
  $("#me").replaceChildren(
    el("p", { class: "actions" }, `Account ${me.account}. `,
      el("a", { href: `account.html?id=${Number(me.account)}`, id: "public-page" }, "Your public page"), out),
    el("h2", {}, "Figures"), accountFacts(a), ...teamSection(), ...activity(a), ...keySection());
}

try { await render(); } catch (e) { say("Could not load your page: " + e.message, true); }
