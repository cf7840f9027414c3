// account.js — an account's public page (account.html?id=N).
import { $, el, api, say, name, intParam } from "./common.js";
import { accountSections } from "./account-view.js";

const id = intParam("id");
if (!id) say("No account: the address names none (account.html?id=N).", true);
else {
  try {
    const a = await api(`/v1/public/accounts/${id}`);
    $("#title").replaceChildren(name(a.name));
    document.title = `${a.name} — account`;
    $("#account").replaceChildren(...accountSections(a));
  } catch (e) {
    say(e.status === 404 ? `No account ${id}.` : "Could not load the account: " + e.message, true);
    if (e.status === 404) $("#account").replaceChildren(el("p", {}, el("a", { href: "top.html?kind=accounts" }, "The accounts' leaderboard")));
  }
}
