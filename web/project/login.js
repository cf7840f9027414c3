// login.js — log-in (login.html): POST /v1/session with the e-mail and the
// password; the master sets the session cookie and the page goes to the
// own page.
import { $, say, logIn } from "./common.js";

const form = $("#login");
form.onsubmit = async (e) => {
  e.preventDefault();
  $("#login-button").disabled = true;
  try {
    await logIn(form.elements.email.value.trim(), form.elements.password.value);
    location.href = "me.html";
  } catch (err) {
    say("Not logged in: " + err.message, true);
    $("#login-button").disabled = false;
  }
};
