// project.mjs BIN_DIR WEB_DIR OUT_DIR — a volunteer project's public pages
// (web/project/, docs/project.md "Public pages") in Debian's chromium
// (headless, driven by playwright-core) against a real cairn-server and
// real cairn-worker processes: sign up through the page and read the
// account key off it, start a worker with that key, submit jobs with the
// admin token over HTTP and watch credit reach the own page and the
// leaderboards; make a team, have a second account join it, rename it; log
// out and in. Names of accounts, hosts, a team, a job and the project are
// hostile (markup, a closing </script>, quotes, right-to-left text, U+202E
// where the master takes it); every page is loaded with them and must show
// them as text: window.__pwned stays undefined, no <img> or extra <script>
// appears. Fails on any console error, failed request or response >= 400
// other than those the test provokes (each listed where it is provoked),
// and writes a screenshot of each page to OUT_DIR. Without chromium or
// playwright-core it FAILS saying what to install.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import { BIN, WEB, OUT, CHROMIUM, chromium, die, setup, sleep, until } from "./harness.mjs";

const { work, procs, TOKEN, env, start, stopAll } = setup("project");

// The hostile names. Account and host names may hold no bidirectional
// control (docs/protocol.md): the master refuses U+202E in them (provoked
// below) and they carry right-to-left letters instead.
const PWN_IMG = "<img src=x onerror=window.__pwned=1>";
const PWN_SCRIPT = "</script><script>window.__pwned=1</script>";
const NAME_A = `${PWN_IMG} "Ada" 'L'`;
const NAME_B = `${PWN_SCRIPT} שלום "B"`;
const NAME_RLO = "evil\u202Egnp.exe";
const HOST_A = `${PWN_IMG}-host "a" 'a'`;
const HOST_B = `${PWN_SCRIPT}-host مضيف`;
const TEAM_1 = `"><img src=x onerror=window.__pwned=1> team 'one'`;
const TEAM_2_RLO = `${PWN_SCRIPT} צוות \u202Eowt`; // taken or refused: both are checked
const TEAM_2 = `${PWN_SCRIPT} צוות "two"`;
const TEAM_DESC = `We compute. ${PWN_IMG} <b>bold?</b>`;
// (the master refuses quotes, <, > and spaces in a URL; a ' is taken)
const TEAM_URL = `https://example.org/?q='onmouseover='window.__pwned=1'&x=javascript:alert(1)`;
const PROJECT = `Cairn test project ${PWN_IMG}`;
const PROJECT_DESC = `Computes squares. ${PWN_SCRIPT}\n\nSecond paragraph with "quotes" and 'more' — עברית.`;
const IDLE_JOB = `${PWN_IMG} waiting job "q"`;

// "burn" spends some CPU (credit is CPU seconds, docs/accountability.md)
// and prints its argument squared.
const burn = path.join(work, "burn.sh");
writeFileSync(burn, "#!/bin/sh\ni=0\nwhile [ $i -lt 200000 ]; do i=$((i+1)); done\necho $(($1 * $1))\n");
chmodSync(burn, 0o755);
writeFileSync(path.join(work, "desc.txt"), PROJECT_DESC);

// Responses >= 400 the test provokes: [method, path pattern, status],
// each allowed as many times as it is listed. Everything else >= 400 fails.
const provoked = [];
const bad = []; // {method, url, status} of each response >= 400
const failures = [];
const contexts = [];
let browser;

function watch(page, who) {
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    // A provoked answer is also a console error, on the request's URL.
    const u = (m.location() || {}).url || "";
    const st = Number((m.text().match(/status of (\d+)/) || [])[1]);
    if (st && provoked.some(([, re, s]) => s === st && re.test(new URL(u, "http://x").pathname))) return;
    failures.push(`${who}: console error: ${m.text()} ${u}`);
  });
  page.on("pageerror", (e) => failures.push(`${who}: page error: ${e.message}`));
  page.on("requestfailed", (r) => failures.push(`${who}: request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => { if (r.status() >= 400) bad.push({ method: r.request().method(), url: r.url(), status: r.status(), who }); });
}

// Each response >= 400 must be one provoked, each provoked at most as often as listed.
function checkBad() {
  const left = provoked.map((p) => [...p]);
  for (const b of bad) {
    const p = new URL(b.url).pathname;
    const i = left.findIndex(([m, re, s]) => m === b.method && re.test(p) && s === b.status);
    if (i < 0) failures.push(`${b.who}: HTTP ${b.status}: ${b.method} ${b.url}`);
    else left.splice(i, 1);
  }
}

// The text of each element matching sel.
const texts = (page, sel) => page.$$eval(sel, (es) => es.map((e) => e.textContent));
// The rows of a table as arrays of cell texts.
const rows = (page, sel) => page.$$eval(`${sel} tbody tr`, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
const num = (s) => Number(String(s).replace(/,/g, ""));

// What every page must be after loading with hostile names around: no
// script ran, nothing became markup, and each expected text is shown as is.
async function clean(page, label, shown = []) {
  const r = await page.evaluate(() => ({
    pwned: typeof window.__pwned, imgs: document.querySelectorAll("img, svg, iframe, object").length,
    scripts: [...document.scripts].map((s) => s.getAttribute("src")), text: document.body.innerText,
    // (a screenshot leaves style="" on inputs: only a style that says something counts)
    styled: document.querySelectorAll('[style]:not([style=""])').length,
  }));
  if (r.styled) failures.push(`${label}: ${r.styled} elements with a style attribute`);
  if (r.pwned !== "undefined") failures.push(`${label}: window.__pwned is set: a name ran as script`);
  if (r.imgs) failures.push(`${label}: ${r.imgs} img/svg/iframe/object elements: a name became markup`);
  if (r.scripts.length !== 1 || !r.scripts[0]) failures.push(`${label}: scripts ${JSON.stringify(r.scripts)}, not the page's one module`);
  for (const s of shown) if (!r.text.includes(s)) failures.push(`${label}: does not show ${JSON.stringify(s)} as text`);
}

try {
  // the project's key pair: the sign-up page's join command names its public key
  const kg = spawnSync(path.join(BIN, "cairn"), ["app", "keygen", "--out", path.join(work, "app.key")], { encoding: "utf8" });
  if (kg.status !== 0) throw new Error("cairn app keygen: " + kg.stderr);
  const PUBKEY = readFileSync(path.join(work, "app.key.pub"), "utf8").trim();
  const server = start(path.join(BIN, "cairn-server"), ["--db", path.join(work, "m.db"), "--listen", "127.0.0.1:0",
    "--web", WEB, "--app-key", PUBKEY, "--project-name", PROJECT, "--project-description-file", path.join(work, "desc.txt"), "--public-jobs",
    // every request of the test comes from one address: its sign-ups and
    // page loads must not meet the per-address limit (tested elsewhere)
    "--address-rate", "-1"], "server");
  const url = await until("the server", () => (server.log().match(/listening on (\S+)/) || [])[1], 10000);
  const H = { Authorization: "Bearer " + TOKEN };
  const submit = async (job) => {
    const r = await fetch(url + "/v1/jobs", { method: "POST", headers: H, body: JSON.stringify(job) });
    if (r.status !== 201) throw new Error(`submit ${job.name}: ${r.status} ${await r.text()}`);
    return (await r.json()).id;
  };
  const jobDone = async (id) => (await (await fetch(`${url}/v1/jobs/${id}`, { headers: H })).json()).state === "done";
  const squares = (name, n, from) => ({ name, app: "burn", tasks: Array.from({ length: n }, (_, i) => ({ id: `t${i}`, args: [String(from + i)] })) });
  const worker = (name, key, dir) => start(path.join(BIN, "cairn-worker"), ["--server", url, "--name", name,
    "--app", "burn=" + burn, "--dir", path.join(work, dir), "--slots", "1", "--account-key", key], dir);

  // The pages' policy: no inline script or style, nothing from elsewhere.
  const csp = (await fetch(url + "/project/index.html")).headers.get("content-security-policy") || "";
  if (!/script-src 'self'/.test(csp) || !/style-src 'self'/.test(csp) || /unsafe-inline/.test(csp))
    failures.push("/project/index.html's Content-Security-Policy: " + JSON.stringify(csp));
  // A job no worker runs stays in progress on the home page.
  await submit({ name: IDLE_JOB, app: "nobody-runs-this", tasks: [{ id: "a" }] });

  mkdirSync(OUT, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  const newPage = async (who) => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(ctx);
    const page = await ctx.newPage();
    watch(page, who);
    return page;
  };
  const a = await newPage("account A"), b = await newPage("account B");
  const open = (page, p) => page.goto(url + "/project/" + p, { waitUntil: "networkidle" });
  const shot = (page, n) => page.screenshot({ path: path.join(OUT, `project-${n}.png`), fullPage: true });

  // The home page, not logged in: the operator's text as text, the totals,
  // the job in progress.
  await open(a, "index.html");
  await a.waitForSelector("#totals dd");
  if ((await a.textContent("#project-name")) !== PROJECT) failures.push("home: the project's name is not shown as text");
  const paras = await texts(a, "#project-description p");
  if (paras.length !== 2 || paras[0] !== PROJECT_DESC.split("\n\n")[0]) failures.push("home: the description's paragraphs: " + JSON.stringify(paras));
  await a.waitForSelector("#jobs-table");
  if (!(await rows(a, "#jobs-table")).some((r) => r[1] === IDLE_JOB)) failures.push("home: the job in progress is not listed");
  if (!(await a.isVisible("#nav-login")) || !(await a.isVisible("#nav-signup"))) failures.push("home: no log-in and sign-up links before logging in");
  await clean(a, "home", [PROJECT, IDLE_JOB]);
  await shot(a, "home");

  // Sign-up: a name with U+202E is refused, the page says why (provoked: 400).
  provoked.push(["POST", /^\/v1\/accounts$/, 400]);
  await a.click("#nav-signup");
  await a.waitForSelector("#signup");
  const signUp = async (page, name, email) => {
    await page.fill("#name", name);
    await page.fill("#email", email);
    await page.fill("#password", "correct horse battery");
    await page.click("#signup-button");
  };
  await signUp(a, NAME_RLO, "rlo@example.org");
  await a.waitForSelector("#msg.error");
  if (!/name/i.test(await a.textContent("#msg"))) failures.push("sign-up: the refusal does not name the field: " + (await a.textContent("#msg")));
  await shot(a, "signup-refused");
  // The account key, read off the page, and the one command to join.
  await signUp(a, NAME_A, "ada@example.org");
  await a.waitForSelector("#account-key");
  const keyA = (await a.textContent("#account-key")).trim();
  if (!/^[0-9a-f]{64}$/.test(keyA)) throw new Error("sign-up shows no account key: " + keyA);
  const cmd = await a.textContent("#join-command");
  if (cmd !== `cairn-worker --server ${url} --project-key ${PUBKEY} --dir ~/.cairn --account-key ${keyA}`)
    failures.push("sign-up: the join command is " + cmd);
  if (await a.isVisible("#signup")) failures.push("sign-up: the form is still shown with the key");
  if (!(await a.isVisible("#nav-me"))) failures.push("sign-up: the header does not link to the own page once logged in");
  await clean(a, "sign-up", [NAME_A]);
  await shot(a, "signup");

  // A real worker with that key; a job; credit on the own page.
  worker(HOST_A, keyA, "w-a");
  const job1 = await submit(squares("squares-1", 6, 1));
  await a.click("#to-me");
  await a.waitForSelector("#account-facts");
  if ((await a.textContent("#title")) !== NAME_A) failures.push("own page: the title is not the account's name as text");
  await until("job 1", () => jobDone(job1), 60000);
  await until("credit on the own page", async () => {
    await a.reload({ waitUntil: "networkidle" });
    return num(await a.textContent("#account-credit")) > 0;
  }, 60000);
  const hostsA = await rows(a, "#hosts-table");
  if (hostsA.length !== 1 || hostsA[0][1] !== HOST_A) failures.push("own page: hosts " + JSON.stringify(hostsA));
  const resA = await rows(a, "#results-table");
  if (resA.length !== 6 || resA.some((r) => !/^\d+$/.test(r[0]) || r[1] !== String(job1) || !r[3]))
    failures.push("own page: results " + JSON.stringify(resA));
  await clean(a, "own page", [NAME_A, HOST_A]);
  await shot(a, "me");

  // The leaderboards (rebuilt from time to time: reload until it shows).
  const onBoard = async (page, kind, by, name) => until(`${name} on the ${kind} leaderboard by ${by}`, async () => {
    await open(page, `top.html?kind=${kind}&by=${by}`);
    const r = (await rows(page, "#board-table")).find((x) => x[1] === name);
    return r && num(r[2]) > 0 && r;
  }, 90000);
  const rowA = await onBoard(a, "accounts", "total", NAME_A);
  if (rowA[0] !== "1") failures.push("accounts leaderboard: account A is ranked " + rowA[0]);
  await clean(a, "accounts leaderboard", [NAME_A]);
  await shot(a, "top-accounts");
  await onBoard(a, "hosts", "recent", HOST_A);
  if (!(await rows(a, "#board-table")).some((r) => r[1] === HOST_A && r[4] === NAME_A)) failures.push("hosts leaderboard: host A's account is not shown");
  await shot(a, "top-hosts");

  // A team, made on the own page.
  await open(a, "me.html");
  await a.fill("#team-name", TEAM_1);
  await a.fill("#team-description", TEAM_DESC);
  await a.fill("#team-url", TEAM_URL);
  await a.click("#create-team button");
  await a.waitForSelector("#my-team a");
  if ((await a.textContent("#my-team a")) !== TEAM_1) failures.push("own page: the team made is not shown as text");
  const team = Number(new URL(await a.getAttribute("#my-team a", "href"), url + "/project/").searchParams.get("id"));
  await clean(a, "own page with a team", [TEAM_1]);
  // The founder's change without the CSRF token is refused and changes
  // nothing (provoked: 403).
  provoked.push(["PATCH", new RegExp(`^/v1/teams/${team}$`), 403]);
  const noCsrf = await a.evaluate((t) => fetch(`/v1/teams/${t}`, { method: "PATCH", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "renamed without a token" }) })
    .then(async (r) => [r.status, await r.text()]), team);
  if (noCsrf[0] !== 403 || !/CSRF/.test(noCsrf[1])) failures.push(`a PATCH with the session cookie and no X-CSRF-Token answered ${noCsrf.join(" ")}, not 403 naming CSRF`);

  // Account B, with a hostile name and a worker of its own, joins it.
  await open(b, "signup.html");
  await signUp(b, NAME_B, "b@example.org");
  await b.waitForSelector("#account-key");
  const keyB = (await b.textContent("#account-key")).trim();
  worker(HOST_B, keyB, "w-b");
  await until("worker B's registration", async () =>
    (await (await fetch(url + "/v1/volunteers", { headers: H })).json()).volunteers.length === 2, 30000);
  await open(b, `team.html?id=${team}`);
  if ((await b.textContent("#title")) !== TEAM_1) failures.push("team page: the team's name is " + (await b.textContent("#title")));
  await b.click("#join");
  await b.waitForSelector("#leave");
  if ((await b.textContent("#team-members")) !== "2") failures.push("team page: members after B joined: " + (await b.textContent("#team-members")));
  if (await b.$("#team-edit")) failures.push("team page: a member who did not found the team is offered its form");
  // Credit earned in the team from now on counts for it.
  const job2 = await submit(squares("squares-2", 12, 10));
  await until("job 2", () => jobDone(job2), 60000);
  await until("the team's credit", async () => {
    await open(b, `team.html?id=${team}`);
    return num(await b.textContent("#team-credit")) > 0;
  }, 60000);

  // The founder renames it: with U+202E when the master takes it (shown as
  // text, isolated), else the page says why (provoked: 400) and a name
  // without it is taken.
  await open(a, `team.html?id=${team}`);
  await a.waitForSelector("#team-edit");
  provoked.push(["PATCH", new RegExp(`^/v1/teams/${team}$`), 400]);
  await a.fill("#edit-name", TEAM_2_RLO);
  await a.click("#team-edit button");
  await a.waitForSelector("#msg:not(:empty):not(:has-text('…'))");
  let teamName = TEAM_2_RLO;
  if (await a.$("#msg.error")) {
    console.log("browser test: the master refuses U+202E in a team name: " + (await a.textContent("#msg")));
    teamName = TEAM_2;
    await a.fill("#edit-name", TEAM_2);
    await a.click("#team-edit button");
    await a.waitForSelector("#msg:not(.error):has-text('saved')");
  }
  if ((await a.textContent("#title")) !== teamName) failures.push("team page: the new name is not the title");
  await shot(a, "team-renamed");

  // Every page, in both browsers, with every hostile name on it.
  const allNames = [NAME_A, NAME_B, teamName];
  await open(b, `team.html?id=${team}`);
  await b.waitForSelector("#members-table");
  const members = (await rows(b, "#members-table")).map((r) => r[0]);
  if (!members.includes(NAME_A) || !members.includes(NAME_B)) failures.push("team page: members " + JSON.stringify(members));
  if ((await b.textContent("#team-description")) !== TEAM_DESC) failures.push("team page: the description is not shown as text");
  if ((await b.getAttribute("#team-url", "href")) !== new URL(TEAM_URL).href) failures.push("team page: the site's link is not the team's URL");
  await clean(b, "team page", allNames.concat(TEAM_URL));
  await shot(b, "team");
  await onBoard(b, "teams", "total", teamName);
  await clean(b, "teams leaderboard", [teamName]);
  await shot(b, "top-teams");
  await onBoard(b, "hosts", "total", HOST_B);
  await clean(b, "hosts leaderboard", [HOST_A, HOST_B, NAME_A, NAME_B]);
  await onBoard(b, "accounts", "recent", NAME_B);
  await clean(b, "accounts leaderboard by recent credit", [NAME_A, NAME_B, teamName]);
  await shot(b, "top-accounts-recent");
  for (const [who, page] of [["A", a], ["B", b]]) {
    await open(page, "me.html");
    await page.waitForSelector("#hosts-table");
    const id = Number(new URL(await page.getAttribute("#public-page", "href"), url + "/project/").searchParams.get("id"));
    await clean(page, `own page of ${who}`, [who === "A" ? NAME_A : NAME_B, who === "A" ? HOST_A : HOST_B, teamName]);
    await shot(page, "me-" + who);
    await open(page, `account.html?id=${id}`);
    await page.waitForSelector("#account-facts");
    if ((await page.textContent("#account-team")) !== teamName) failures.push(`account ${who}'s page: team ${await page.textContent("#account-team")}`);
    await clean(page, `account ${who}'s page`, [who === "A" ? NAME_A : NAME_B, who === "A" ? HOST_A : HOST_B, teamName]);
    await shot(page, "account-" + who);
  }
  await until("2 accounts in the home page's totals", async () => {
    await open(b, "index.html");
    return num(await b.textContent("#total-accounts")) === 2;
  }, 60000);
  if (!(await b.isVisible("#nav-me"))) failures.push("home: no link to the own page when logged in");
  await clean(b, "home logged in", [PROJECT]);

  // A new account key from the own page: shown once, not the old one.
  await open(a, "me.html");
  await a.fill("#key-email", "ada@example.org");
  await a.fill("#key-password", "correct horse battery");
  await a.click("#new-key button");
  await a.waitForSelector("#account-key");
  const newKey = (await a.textContent("#account-key")).trim();
  if (!/^[0-9a-f]{64}$/.test(newKey) || newKey === keyA) failures.push("own page: the new account key is " + newKey);
  await shot(a, "me-new-key");

  // B leaves the team from the own page.
  await open(b, "me.html");
  await b.click("#leave");
  await b.waitForSelector("#my-team:has-text('no team')");

  // Log out, then in: a wrong password is refused (provoked: 401), the right one opens the own page.
  await b.click("#logout");
  await b.waitForURL("**/project/index.html");
  await b.waitForSelector("#nav-login");
  await open(b, "me.html");
  await b.waitForSelector("#not-logged-in");
  await open(b, "login.html");
  provoked.push(["POST", /^\/v1\/session$/, 401]);
  await b.fill("#email", "b@example.org");
  await b.fill("#password", "wrong password!");
  await b.click("#login-button");
  await b.waitForSelector("#msg.error");
  await shot(b, "login-refused");
  await b.fill("#password", "correct horse battery");
  await b.click("#login-button");
  await b.waitForURL("**/project/me.html");
  await b.waitForSelector("#account-facts");
  if ((await b.textContent("#title")) !== NAME_B) failures.push("log-in: the own page is not B's");
  await clean(b, "own page after log-in", [NAME_B]);

  // A phone's width.
  await b.setViewportSize({ width: 390, height: 800 });
  await open(b, "top.html?kind=accounts");
  await b.waitForSelector("#board-table");
  await shot(b, "top-phone");
  await open(b, `team.html?id=${team}`);
  await b.waitForSelector("#team-facts");
  await shot(b, "team-phone");
  checkBad();
} catch (e) {
  failures.push(e.stack || String(e));
  for (const [i, c] of contexts.entries())
    for (const p of c.pages()) await p.screenshot({ path: path.join(OUT, `project-failure-${i}.png`), fullPage: true }).catch(() => {});
} finally {
  if (browser) await browser.close();
  stopAll();
  await sleep(300);
  for (const p of procs) if (/Sanitizer|runtime error:/.test(p.log())) failures.push(`${p.name} reported:\n${p.log()}`);
  if (failures.length) for (const p of procs) console.error(`--- ${p.name}\n${p.log().slice(-3000)}`);
  rmSync(work, { recursive: true, force: true });
}
if (failures.length) die(failures.join("\n"));
console.log(`browser test: OK (screenshots in ${OUT})`);
