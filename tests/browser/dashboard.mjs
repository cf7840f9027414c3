// dashboard.mjs BIN_DIR WEB_DIR OUT_DIR — the dashboard in Debian's chromium
// (headless, driven by playwright-core) against a real cairn-server and real
// cairn-worker processes: log in with the admin token, watch a running job
// progress, open its dag, set a priority, cancel a job, ban a lying volunteer
// and see its tasks recomputed, look up an allocation index, submit a job file, open a job of 10^5 tasks,
// move through a dag and open a task from the keyboard, see what its
// worker measured and the job's measured peaks, and download its output, open the distribution view of a broadcast input relayed by real
// workers with peer servers in two clusters, download a job's results as a
// ZIP, see a running task's progress. Fails on any
// console error, failed request or response >= 400, and writes a screenshot
// of each view to OUT_DIR. Without chromium or playwright-core it FAILS
// saying what to install.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import { BIN, WEB, OUT, CHROMIUM, chromium, die, setup, sleep, until } from "./harness.mjs";

const { work, procs, TOKEN, env, start, stopAll } = setup("browser");

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
// "bc" digests its broadcast input into its output and a file, then holds
// its worker a second (so that the tasks spread over the workers).
const bc = path.join(work, "bc.sh");
writeFileSync(bc, "#!/bin/sh\nsha256sum inputs/data | cut -c1-64 > digest.txt\ncat digest.txt\nsleep 1\n");
chmodSync(bc, 0o755);
// The entries of a ZIP (stored entries, as the dashboard makes them):
// name -> Buffer, read from its central directory.
function unzipStored(buf) {
  const end = buf.length - 22, entries = new Map();
  if (buf.readUInt32LE(end) !== 0x06054b50) throw new Error("not a ZIP: no end record");
  for (let i = 0, p = buf.readUInt32LE(end + 16); i < buf.readUInt16LE(end + 10); i++) {
    const size = buf.readUInt32LE(p + 20), nlen = buf.readUInt16LE(p + 28), local = buf.readUInt32LE(p + 42);
    const name = buf.toString("utf8", p + 46, p + 46 + nlen), data = local + 30 + buf.readUInt16LE(local + 26);
    entries.set(name, buf.subarray(data, data + size));
    p += 46 + nlen;
  }
  return entries;
}
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

  // The keyboard: the dag's first task is in the tab order; right goes to
  // a child (0.0 -> 1.0), down along the layer (1.1), Enter opens it, with
  // a visible focus ring; its output downloads from its details.
  await page.waitForSelector("#dag-svg circle");
  await page.focus(`#dag-svg circle[tabindex="0"]`);
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("ArrowDown");
  const focused = await page.evaluate(() => { const a = document.activeElement; return { i: a.dataset.i, ring: getComputedStyle(a).strokeWidth }; });
  if (focused.i !== "9") failures.push(`ArrowRight, ArrowDown from task 0.0 focused task index ${focused.i}, not 9 (1.1)`);
  if (focused.ring !== "4px") failures.push(`a focused dag task has no visible ring (stroke-width ${focused.ring})`);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#task-detail .card:has-text('task 1.1 ')");
  // what its worker measured of each attempt, and the job's measured peaks
  await page.waitForSelector("#task-detail li:has-text('peak memory')");
  await page.waitForSelector("#categories tr:has-text('(job)')");
  const peakCell = await page.textContent("#categories tr:has-text('(job)') td:nth-child(3)");
  if (!/^\d+ MiB$/.test(peakCell || "")) failures.push(`the job's measured peak memory reads "${peakCell}"`);
  const [out] = await Promise.all([page.waitForEvent("download"), page.click("#task-detail button.linkish")]);
  const square = readFileSync(await out.path(), "utf8").trim();
  if (square !== "81") failures.push(`task 1.1's downloaded output is "${square}", not 81`);

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
  const opened = Date.now();
  await go(`#/job/${bigJob}`);
  await page.waitForSelector("canvas#grid");
  await page.waitForSelector("#failures p");
  const readyMs = Date.now() - opened;
  const elements = await page.evaluate(() => document.getElementsByTagName("*").length);
  if (elements > 300) failures.push(`the 10^5-task job's view has ${elements} elements`);
  // The page's JavaScript heap, as chromium counts it (a figure, not a check).
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const heap = (metrics.find((m) => m.name === "JSHeapUsedSize") || { value: 0 }).value;
  console.log(`browser test: the 10^5-task job's view ready in ${readyMs} ms, ${elements} elements, JS heap ${(heap / 1048576).toFixed(1)} MiB`);
  await cdp.detach();
  await page.click("canvas#grid", { position: { x: 1, y: 1 } });
  await page.waitForSelector("#task-detail .card:has-text('task t0 ')");
  await page.focus("canvas#grid");
  await page.keyboard.press("ArrowRight");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#task-detail .card:has-text('task t1 ')");
  await shot("job-large");

  // A broadcast input relayed by real workers: two clusters of two, each
  // worker with a peer server on loopback. Its distribution view draws the
  // plan and the copies that travelled, and the bytes by source.
  const data = randomBytes(4 << 20), sha = createHash("sha256").update(data).digest("hex");
  const up = await fetch(url + "/v1/files/" + sha, { method: "PUT", headers: H, body: data });
  if (up.status !== 201) throw new Error(`upload: ${up.status} ${await up.text()}`);
  writeFileSync(path.join(work, "bcast.json"), JSON.stringify({ name: "bcast", app: "bc", outputs: ["digest.txt"],
    files: [{ name: "data", sha256: sha, size: data.length, broadcast: true }],
    tasks: Array.from({ length: 8 }, (_, i) => ({ id: "b" + i, inputs: ["data"] })) }));
  const bcJob = await submit("bcast.json");
  for (let i = 0; i < 4; i++)
    start(path.join(BIN, "cairn-worker"), ["--server", url, "--name", "peer" + i, "--cluster", i % 2 ? "east" : "west",
      "--app", "bc=" + bc, "--dir", path.join(work, "w-peer" + i), "--slots", "1", "--peer-listen", "127.0.0.1:0"], "peer" + i);
  await until("the broadcast job", async () => (await get(`/v1/jobs/${bcJob}`)).state === "done", 90000);
  const bcTasks = (await get(`/v1/jobs/${bcJob}/tasks`)).tasks;
  const holders = new Set(bcTasks.map((t) => t.volunteer)).size;
  if (bcTasks.some((t) => t.output.trim() !== sha)) failures.push("a broadcast task's output is not the input's digest");
  await go(`#/job/${bcJob}`);
  await page.click("#dist-link:not([hidden])");
  await page.waitForURL(`**/#/job/${bcJob}/distribution`);
  await page.waitForSelector("#gantt-0 rect.planned");
  await until(`${holders} copies on the Gantt chart`, async () => (await page.locator("#gantt-0 rect.actual").count()) >= holders, 30000);
  const planned = await page.locator("#gantt-0 rect.planned").count();
  const sources = await page.locator("#by-source-0 tbody tr").count();
  const peerCopies = await page.locator("#gantt-0 rect.actual.inter, #gantt-0 rect.actual.local").count();
  if (planned < 1 || sources < 1) failures.push(`the distribution view has ${planned} planned bars and ${sources} sources`);
  await page.waitForSelector("#rates tbody tr");
  console.log(`browser test: broadcast to ${holders} workers: ${planned} planned copies, ${await page.locator("#gantt-0 rect.actual").count()} actual (${peerCopies} from peers), ${sources} sources`);
  await shot("distribution");

  // Its results as a ZIP: the listing, each task's output, each output file.
  await go(`#/job/${bcJob}`);
  await page.waitForSelector("#download");
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  const entries = unzipStored(readFileSync(await dl.path()));
  const dir = `job-${bcJob}`;
  if (!entries.has(`${dir}/results.json`)) failures.push("the results ZIP has no results.json: " + [...entries.keys()].join(" "));
  for (const t of bcTasks) {
    const o = entries.get(`${dir}/outputs/${t.id}/digest.txt`), s = entries.get(`${dir}/stdout/${t.id}`);
    if (!o || o.toString().trim() !== sha || !s || s.toString().trim() !== sha)
      failures.push(`the results ZIP lacks task ${t.id}'s output or digest.txt: ${[...entries.keys()].join(" ")}`);
  }
  await page.waitForSelector("#job-msg:has-text('results downloaded')");

  // A running task's progress, as its worker reported it in a heartbeat:
  // in its job's list of running tasks and in the task's details.
  const reg = await fetch(url + "/v1/volunteers", { method: "POST", body: JSON.stringify({ name: "prog", apps: ["slowp"] }) });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${await reg.text()}`);
  const V = { Authorization: "Bearer " + (await reg.json()).token };
  writeFileSync(path.join(work, "progress.json"), JSON.stringify({ name: "progress", app: "slowp", tasks: [{ id: "p" }] }));
  const progJob = await submit("progress.json");
  const wr = await fetch(url + "/v1/work", { method: "POST", headers: V, body: "{}" });
  if (wr.status !== 200) throw new Error(`work: ${wr.status} ${await wr.text()}`);
  const pidx = (await wr.json()).index;
  const hb = await fetch(url + "/v1/heartbeat", { method: "POST", headers: V, body: JSON.stringify({ running: [pidx], progress: { [pidx]: 0.42 } }) });
  if (hb.status !== 200) throw new Error(`heartbeat: ${hb.status} ${await hb.text()}`);
  await go(`#/job/${progJob}`);
  await page.waitForSelector("#running li:has-text('42.0%')");
  await page.click("#running li a");
  await page.waitForSelector("#task-detail .progress:has-text('42.0%')");
  await shot("job-progress");

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
