// dashboard.mjs BIN_DIR WEB_DIR OUT_DIR — the dashboard in Debian's chromium
// (headless, driven by playwright-core) against a real cairn-server and real
// cairn-worker processes: log in with the admin token, watch a running job
// progress, open its dag, set a priority, cancel a job, ban a lying volunteer
// and see its tasks recomputed, look up an allocation index, submit a job file, open a job of 10^5 tasks. Fails on any
// console error, failed request or response >= 400, and writes a screenshot
// of each view to OUT_DIR. Without chromium or playwright-core it FAILS
// saying what to install.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";

const [BIN, WEB, OUT] = process.argv.slice(2).map((p) => path.resolve(p));
const CHROMIUM = process.env.CAIRN_CHROMIUM || "/usr/bin/chromium";
const here = path.dirname(new URL(import.meta.url).pathname);
function die(msg) { console.error("browser test: FAILED: " + msg); process.exit(1); }
if (!existsSync(CHROMIUM)) die(`no ${CHROMIUM}: install Debian's chromium (apt-get install chromium, or scripts/install-deps.sh)`);
let chromium;
try { ({ chromium } = createRequire(path.join(here, "package.json"))("playwright-core")); }
catch { die(`playwright-core is not installed: run "npm ci" in ${here} (or scripts/install-deps.sh)`); }

const work = mkdtempSync(path.join(tmpdir(), "cairn-browser-"));
const procs = [];
const TOKEN = "browser-test-token-" + Math.random().toString(16).slice(2);
const env = { ...process.env, CAIRN_ADMIN_TOKEN: TOKEN };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function start(cmd, args, name) {
  const p = spawn(cmd, args, { cwd: work, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (out += d));
  p.log = () => out;
  p.name = name;
  procs.push(p);
  return p;
}
function stopAll() { for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM"); }
async function until(what, f, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(200);
  }
}

// Apps: "sq" prints its argument squared after 0.15 s; the liar prints 0.
const sq = path.join(work, "sq.sh"), liar = path.join(work, "liar.sh");
writeFileSync(sq, "#!/bin/sh\nsleep 0.15\necho $(($1 * $1))\n");
writeFileSync(liar, "#!/bin/sh\nsleep 0.15\necho 0\n");
chmodSync(sq, 0o755); chmodSync(liar, 0o755);
// A layered dag: 8 sources, 8 x 3 tasks each after two of the layer before.
function layered(name) {
  const tasks = [];
  for (let l = 0; l < 4; l++)
    for (let i = 0; i < 8; i++)
      tasks.push({ id: `${l}.${i}`, args: [String(l * 8 + i)], ...(l ? { after: [`${l - 1}.${i}`, `${l - 1}.${(i + 1) % 8}`] } : {}) });
  return { name, app: "sq", tasks };
}
writeFileSync(path.join(work, "work.json"), JSON.stringify(layered("work")));
writeFileSync(path.join(work, "idle.json"), JSON.stringify({ name: "idle", app: "nobody-runs-this", tasks: [{ id: "a" }, { id: "b", after: ["a"] }] }));

const failures = [];
let browser, page;
try {
  const server = start(path.join(BIN, "cairn-server"), ["--db", path.join(work, "m.db"), "--listen", "127.0.0.1:0", "--web", WEB], "server");
  const url = await until("the server", () => (server.log().match(/listening on (\S+)/) || [])[1], 10000);
  const H = { Authorization: "Bearer " + TOKEN };
  const get = async (p) => (await fetch(url + p, { headers: H })).json();
  const submit = async (f) => {
    const r = await fetch(url + "/v1/jobs", { method: "POST", headers: H, body: readFileSync(path.join(work, f)) });
    if (r.status !== 201) throw new Error(`submit ${f}: ${r.status} ${await r.text()}`);
    return (await r.json()).id;
  };
  const workJob = await submit("work.json"), idleJob = await submit("idle.json");
  // The liar works alone first, so that some results are its own.
  start(path.join(BIN, "cairn-worker"), ["--server", url, "--name", "liar", "--app", "sq=" + liar, "--dir", path.join(work, "w-liar"), "--slots", "1"], "liar");

  mkdirSync(OUT, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (m) => { if (m.type() === "error") failures.push("console error: " + m.text()); });
  page.on("pageerror", (e) => failures.push("page error: " + e.message));
  page.on("requestfailed", (r) => { if (!/download|blob:/.test(r.url())) failures.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`); });
  page.on("response", (r) => { if (r.status() >= 400) failures.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`); });
  // Moves within the page as its links do (a new page load would abort the
  // polls in flight).
  const go = (hash) => page.evaluate((h) => { location.hash = h; }, hash);
  const shot = (n) => page.screenshot({ path: path.join(OUT, `dashboard-${n}.png`), fullPage: true });

  // Log in; the jobs view lists both jobs.
  await page.goto(url + "/#/jobs");
  await page.fill("#token", TOKEN);
  await page.press("#token", "Enter");
  await page.waitForSelector(`tr:has-text("work")`);
  await page.waitForSelector(`tr:has-text("idle")`);
  await shot("jobs");

  // A running job progresses in its view, its dag drawn by layers.
  await page.click(`tr:has-text("work")`);
  await page.waitForURL(`**/#/job/${workJob}`);
  await page.waitForSelector("#dag-svg circle");
  const circles = await page.locator("#dag-svg circle").count();
  if (circles !== 32) failures.push(`the dag has ${circles} circles, not 32`);
  const doneOf = async () => Number(((await page.textContent("#job-summary")) || "").match(/(\d+)\/32 done/)?.[1] ?? -1);
  const first = await doneOf();
  await until("the job to progress on the page", async () => (await doneOf()) > first + 3, 30000);
  await page.hover(`#dag-svg circle[data-i="9"]`);
  const lit = await page.locator("#dag-svg circle.par").count();
  if (lit !== 2) failures.push(`hovering task 1.1 lit ${lit} parents, not 2`);
  await page.waitForSelector("svg.chart >> nth=0");
  await page.fill("#priority", "5");
  await page.click("#set-priority");
  await page.waitForSelector("#job-msg:has-text('priority set')");
  await shot("job");

  // An honest worker joins; the job finishes.
  start(path.join(BIN, "cairn-worker"), ["--server", url, "--name", "honest", "--app", "sq=" + sq, "--dir", path.join(work, "w-honest"), "--slots", "2"], "honest");
  await until("the job to finish", async () => (await page.textContent("#job-state")) === "done", 60000);

  // Ban the liar from its page: the dialog says what it will do; its tasks are recomputed.
  await page.click("nav a[data-view=volunteers]");
  await page.waitForSelector(`tr:has-text("liar")`);
  await shot("volunteers");
  await page.click(`tr:has-text("liar")`);
  await page.waitForSelector("#ban");
  await page.click("#ban");
  await page.waitForSelector("#confirm[open] li:has-text('re-queue')");
  await shot("ban-confirm");
  await page.click("#confirm-ok");
  await page.waitForSelector("#vol-msg:has-text('banned')");
  const banMsg = await page.textContent("#vol-msg");
  if (!/requeued\D*[1-9]/.test(banMsg)) failures.push("the ban re-queued nothing: " + banMsg);
  await shot("volunteer");
  await go(`#/job/${workJob}`);
  await until("the recomputed job to finish", async () => (await page.textContent("#job-state").catch(() => "")) === "done", 60000);
  const tasks = (await get(`/v1/jobs/${workJob}/tasks`)).tasks;
  const wrong = tasks.filter((t, i) => (t.output || "").trim() !== String(i * i));
  if (wrong.length) failures.push(`${wrong.length} tasks keep a wrong result after the ban, e.g. ${JSON.stringify(wrong[0])}`);

  // Cancel the job nobody runs, confirming.
  await go(`#/job/${idleJob}`);
  await page.waitForSelector("#cancel:not([disabled])");
  await page.click("#cancel");
  await page.click("#confirm-ok");
  await until("the cancelled state", async () => (await page.textContent("#job-state")) === "cancelled", 10000);

  // Look up an index: who computed task 0.0.
  const hist = await get(`/v1/jobs/${workJob}/tasks/${tasks[0].key}`);
  const idx = hist.history[hist.history.length - 1].index;
  await page.click("nav a[data-view=audit]");
  await page.fill("#index", String(idx));
  await page.press("#index", "Enter");
  await page.waitForSelector("#audit-summary:has-text('honest')");
  await shot("audit");

  // Submit a job file and the file it names from the jobs view (uploaded
  // by its digest first).
  writeFileSync(path.join(work, "up.json"), JSON.stringify({ name: "uploaded", app: "nobody-runs-this",
    files: [{ name: "data", path: "in/data.txt" }], tasks: [{ id: "a", inputs: ["data"] }] }));
  writeFileSync(path.join(work, "data.txt"), "some input\n");
  await go("#/jobs");
  await page.setInputFiles("#jobfile", [path.join(work, "up.json"), path.join(work, "data.txt")]);
  await page.click("#submit button");
  await page.waitForSelector("#submit-msg:has-text('submitted (1 tasks)')");
  await page.waitForSelector(`tr:has-text("uploaded")`);

  // A job of 10^5 tasks: drawn as one canvas, no element per task; a
  // click on a cell opens that task.
  writeFileSync(path.join(work, "big.json"), JSON.stringify({ name: "big", app: "nobody-runs-this",
    tasks: Array.from({ length: 100000 }, (_, i) => (i < 50000 ? { id: "t" + i } : { id: "t" + i, after: ["t" + (i - 50000)] })) }));
  const bigJob = await submit("big.json");
  await go(`#/job/${bigJob}`);
  await page.waitForSelector("canvas#grid");
  await page.waitForSelector("#failures p");
  const elements = await page.evaluate(() => document.getElementsByTagName("*").length);
  if (elements > 300) failures.push(`the 10^5-task job's view has ${elements} elements`);
  await page.click("canvas#grid", { position: { x: 1, y: 1 } });
  await page.waitForSelector("#task-detail .card:has-text('task t0 ')");
  await shot("job-large");

  // A phone's width.
  await page.setViewportSize({ width: 390, height: 800 });
  await go("#/jobs");
  await page.waitForSelector(`tr:has-text("work")`);
  await shot("jobs-phone");
} catch (e) {
  failures.push(e.stack || String(e));
  if (page) await page.screenshot({ path: path.join(OUT, "dashboard-failure.png"), fullPage: true }).catch(() => {});
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
