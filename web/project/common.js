// common.js — what the project's public pages share (docs/project.md,
// "Public pages"): building elements, calling the master's /v1 API with the
// session cookie, the session itself, numbers and times.
//
// Every string a volunteer or the operator chose (names, descriptions,
// URLs, error messages that quote them) reaches the page as a text node
// (el's children, textContent), never as markup; a name goes in a <bdi>
// so that right-to-left text in it does not reorder what surrounds it.

export const $ = (sel, root = document) => root.querySelector(sel);

// An element: attrs are attributes (on... ones are event handlers), kids
// nodes or text (appended as text nodes, never parsed).
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) e[k] = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

// A name someone chose, isolated from the text around it.
export const name = (text) => el("bdi", {}, text == null ? "" : String(text));

// A link to a page of this site: href is built from a fixed page and an
// integer id, never from text a volunteer chose.
export const link = (page, id, text) => el("a", { href: `${page}?id=${Number(id)}` }, name(text));

export function accountLink(a) { return a ? link("account.html", a.id, a.name) : "—"; }
export function teamLink(t) { return t ? link("team.html", t.id, t.name) : "—"; }

// The integer query parameter key, or null when absent or not a positive integer.
export function intParam(key) {
  const v = new URLSearchParams(location.search).get(key);
  return v && /^[1-9][0-9]{0,15}$/.test(v) ? Number(v) : null;
}

// ---- the master's API ----

// An error from the master: the message of its {"error": {...}} body.
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let csrf = null; // the session's CSRF token, once GET /v1/session or a log-in gave it

// A JSON request to the master with this site's cookies; body (an object)
// is sent as JSON; a state-changing request carries the session's CSRF
// token when the page has one. Resolves to the parsed body (null for 204),
// rejects with an ApiError.
export async function api(path, { method = "GET", body } = {}) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrf) headers["X-CSRF-Token"] = csrf;
  const r = await fetch(path, {
    method, headers, credentials: "same-origin", cache: "no-store",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // The body is read to its end whatever it is (so that the request is
  // over before a page that goes elsewhere next unloads).
  const text = await r.text().catch(() => "");
  let json = null;
  if ((r.headers.get("content-type") || "").includes("json")) try { json = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) {
    const err = json && json.error;
    throw new ApiError(r.status, (err && err.message) || `the master answered HTTP ${r.status}`, err && err.code);
  }
  return json;
}

// ---- the session ----
// The session cookie is HttpOnly: a page cannot see it. So that a visitor
// who never logged in makes no request that must fail (GET /v1/session is
// 401 without a session), the pages remember in localStorage that this
// browser logged in (the account's id only: no key, no token) and ask for
// the session only then.
const HINT = "cairn-project-session";
export const hasSessionHint = () => localStorage.getItem(HINT) !== null;
function setHint(id) { localStorage.setItem(HINT, String(id)); header(); }
function clearHint() { localStorage.removeItem(HINT); header(); }

// The session ({account, name, csrf, team}) or null when there is none.
export async function session() {
  if (!hasSessionHint()) return null;
  try {
    const s = await api("/v1/session");
    csrf = s.csrf;
    return s;
  } catch (e) {
    if (e.status !== 401) throw e;
    clearHint();
    csrf = null;
    return null;
  }
}

// Logs in: POST /v1/session; resolves to {account, name, csrf}.
export async function logIn(email, password) {
  const s = await api("/v1/session", { method: "POST", body: { email, password } });
  csrf = s.csrf;
  setHint(s.account);
  return s;
}

export async function logOut() {
  await api("/v1/session", { method: "DELETE" });
  csrf = null;
  clearHint();
}

// ---- what every page shows ----

// The header's right side: the own page and log-out when this browser
// logged in, else log-in and sign-up.
export function header() {
  const who = $("#who");
  if (!who) return;
  who.replaceChildren(...(hasSessionHint()
    ? [el("a", { href: "me.html", id: "nav-me" }, "Your page")]
    : [el("a", { href: "login.html", id: "nav-login" }, "Log in"), " ",
       el("a", { href: "signup.html", id: "nav-signup" }, "Sign up")]));
}

// Shows a message in the page's message line (#msg, a live region): text,
// or an array of text and nodes (names in <bdi>).
export function say(content, isError = false) {
  const m = $("#msg");
  m.replaceChildren(...[content].flat());
  m.className = isError ? "error" : "";
}

// ---- numbers and times ----
const credits = new Intl.NumberFormat("en", { maximumFractionDigits: 2, minimumFractionDigits: 2 });
const ints = new Intl.NumberFormat("en");
export const fmtCredit = (x) => credits.format(Number(x) || 0);
export const fmtInt = (n) => ints.format(Number(n) || 0);
// A Unix time as a <time> element ("—" for 0 or none).
export function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t * 1000);
  return el("time", { datetime: d.toISOString() }, d.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" }));
}

// A table: caption, column headers, rows of cells (nodes or text); the
// columns whose index is in num hold numbers (aligned right).
export function table(caption, heads, rows, { id, num = [] } = {}) {
  const cls = (i) => (num.includes(i) ? { class: "num" } : {});
  const tbody = el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c, i) => el("td", cls(i), c)))));
  return el("div", { class: "scroll" }, el("table", { id, class: "data" },
    caption ? el("caption", {}, caption) : null,
    el("thead", {}, el("tr", {}, heads.map((h, i) => el("th", { scope: "col", ...cls(i) }, h)))), tbody));
}

// Facts as a two-column table of row headers and values: [label, value,
// the value cell's id].
export function facts(id, rows) {
  return el("table", { id, class: "facts" }, el("tbody", {},
    rows.map(([k, v, vid]) => el("tr", {}, el("th", { scope: "row" }, k), el("td", { id: vid }, v)))));
}

// The command that makes a computer a volunteer of this project for the
// account with this key (docs/join.md), with the project's public key when
// the master has one (GET /v1/public/home: project.public_key; cairn-server
// --app-key), else the word PUBKEY for the volunteer to fill in.
export function joinCommand(key, pubkey) {
  return `cairn-worker --server ${location.origin} --project-key ${pubkey || "PUBKEY"} --dir ~/.cairn --account-key ${key}`;
}

// The account key, once, with the command to join (sign-up and a new key);
// resolves to the panel once the project's public key is read.
export async function keyPanel(key) {
  let pubkey = null;
  try { pubkey = (await api("/v1/public/home")).project.public_key; } catch { pubkey = null; }
  return el("section", { id: "key-panel", class: "card", "aria-labelledby": "key-title" },
    el("h2", { id: "key-title" }, "Your account key"),
    el("p", {}, "This is the only time it is shown: keep it private, in a file of mode 0600. " +
      "Log-in on this site does not show it again; a new key (on your page) replaces it."),
    el("p", {}, el("code", { id: "account-key" }, key)),
    el("h3", {}, "Join with a computer"),
    el("p", {}, pubkey ? "Run this on each computer you want to give:"
      : "Run this on each computer you want to give (PUBKEY is the project's public key, " +
        "as the project publishes it):"),
    el("pre", { id: "join-command" }, joinCommand(key, pubkey)),
    el("p", {}, "On a computer others use, put the key in a file and give ",
      el("code", {}, "--account-key-file PATH"), " instead: they can see a command line."));
}

header();
