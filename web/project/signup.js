// signup.js — sign-up (signup.html): makes the account (POST /v1/accounts),
// logs in with it (POST /v1/session) and shows its account key, this once,
// with the command that joins a computer to the project under it.
import { $, el, api, say, session, logIn, keyPanel, name } from "./common.js";

const form = $("#signup");
const me = await session().catch(() => null);
if (me) say(["You are logged in as ", name(me.name), ": signing up makes another account."]);

form.onsubmit = async (e) => {
  e.preventDefault();
  const v = (k) => form.elements[k].value;
  const body = { name: v("name"), email: v("email").trim(), password: v("password") };
  if (v("invitation").trim()) body.invitation = v("invitation").trim();
  $("#signup-button").disabled = true;
  say("Making your account…");
  let made;
  try {
    made = await api("/v1/accounts", { method: "POST", body });
  } catch (err) {
    say("Not signed up: " + err.message, true);
    $("#signup-button").disabled = false;
    return;
  }
  form.reset();
  form.hidden = true;
  let logged = true;
  try { await logIn(body.email, body.password); } catch { logged = false; }
  $("#result").replaceChildren(await keyPanel(made.account_key),
    el("p", {}, logged
      ? [el("a", { href: "me.html", id: "to-me" }, "Go to your page"), " (your computers, your team)."]
      : ["Your account is made; ", el("a", { href: "login.html" }, "log in"), " to see your page."]));
  say(["Welcome, ", name(body.name), `: account ${made.id} is made.`]);
};
