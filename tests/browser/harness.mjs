// harness.mjs — what the browser tests share (dashboard.mjs, project.mjs):
// their arguments BIN_DIR WEB_DIR OUT_DIR, Debian's chromium and
// playwright-core (the test FAILS saying what to install when either is
// missing), a work folder, and the real processes they start and stop.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";

export const [BIN, WEB, OUT] = process.argv.slice(2).map((p) => path.resolve(p));
export const CHROMIUM = process.env.CAIRN_CHROMIUM || "/usr/bin/chromium";
const here = path.dirname(new URL(import.meta.url).pathname);
export function die(msg) { console.error("browser test: FAILED: " + msg); process.exit(1); }
if (!existsSync(CHROMIUM)) die(`no ${CHROMIUM}: install Debian's chromium (apt-get install chromium, or scripts/install-deps.sh)`);
export let chromium;
try { ({ chromium } = createRequire(path.join(here, "package.json"))("playwright-core")); }
catch { die(`playwright-core is not installed: run "npm ci" in ${here} (or scripts/install-deps.sh)`); }

// The test's folder (its name starts with prefix), its processes, the
// admin token they share.
export function setup(prefix) {
  const work = mkdtempSync(path.join(tmpdir(), `cairn-${prefix}-`));
  const procs = [];
  const TOKEN = `${prefix}-test-token-` + Math.random().toString(16).slice(2);
  const env = { ...process.env, CAIRN_ADMIN_TOKEN: TOKEN };
  // Starts cmd with args in the work folder; its output is p.log().
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
  const stopAll = () => { for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM"); };
  return { work, procs, TOKEN, env, start, stopAll };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// f's first truthy answer, asked every `every` ms, or an error naming what
// after ms.
export async function until(what, f, ms = 30000, every = 250) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await sleep(every);
  }
}
