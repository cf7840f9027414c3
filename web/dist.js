// A job's distribution view (#/job/ID/distribution): for each broadcast
// file, the plan the master made as a Gantt chart (one lane per cluster: the
// planned first copy into it, from the master or another cluster, and the
// planned spread inside it) with the copies that actually travelled laid
// over it (one bar per receiving worker, coloured by source), the bytes
// each source sent, and the link rates the master measured. Plain SVG; the
// data is GET /v1/jobs/{id}/distribution (read every 2 s, conditionally).
import { api, el } from "./app.js";

const NS = "http://www.w3.org/2000/svg";
const ROWS_MAX = 200; // actual copies drawn per file (the table counts them all)
const svg = (tag, attrs = {}, text) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const mib = (b) => (b / 1048576).toFixed(b < 10485760 ? 2 : 0) + " MiB";
const rate = (bps) => (bps * 8 / 1e6).toFixed(1) + " Mbit/s";
const s = (x) => x.toFixed(x < 10 ? 2 : 1) + " s";
const who = (id, cluster) => (id ? `volunteer ${id} (${cluster})` : "master");

// Lanes: the plan's clusters in its order, then clusters only copies name.
function lanes(f) {
  const byCluster = new Map();
  const lane = (c) => {
    if (!byCluster.has(c)) byCluster.set(c, { cluster: c, plan: null, copies: [] });
    return byCluster.get(c);
  };
  for (const p of (f.plan && f.plan.transfers) || []) lane(p.to).plan = p;
  for (const x of f.transfers.slice(0, ROWS_MAX)) lane(x.to_cluster).copies.push(x);
  return [...byCluster.values()];
}

function gantt(f, k) {
  const L = lanes(f), W = 900, LEFT = 150, RIGHT = 20, ROW = 14, HEAD = 18, TOP = 24;
  let tmax = 0.001;
  for (const l of L) {
    if (l.plan) tmax = Math.max(tmax, l.plan.done_s, l.plan.end_s);
    for (const x of l.copies) tmax = Math.max(tmax, x.end_s);
  }
  if (f.plan) tmax = Math.max(tmax, f.plan.predicted_s);
  const H = TOP + L.reduce((h, l) => h + HEAD + l.copies.length * ROW, 0) + 24;
  const X = (t) => LEFT + (W - LEFT - RIGHT) * Math.max(0, t) / tmax;
  const g = svg("svg", { class: "gantt", id: `gantt-${k}`, viewBox: `0 0 ${W} ${H}`, width: W, height: H,
    role: "img", "aria-label": `Gantt chart of ${f.name}: planned and actual copies` });
  // time axis with about 8 ticks
  const step = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600].find((d) => tmax / d <= 8) || 1200;
  for (let t = 0; t <= tmax + 1e-9; t += step) {
    g.append(svg("line", { x1: X(t), x2: X(t), y1: TOP - 4, y2: H - 20, class: "tick" }),
      svg("text", { x: X(t), y: H - 6, "text-anchor": "middle" }, +t.toFixed(2) + " s"));
  }
  if (f.plan) {
    g.append(svg("line", { x1: X(f.plan.predicted_s), x2: X(f.plan.predicted_s), y1: TOP - 6, y2: H - 20, class: "predicted" }),
      svg("text", { x: X(f.plan.predicted_s), y: TOP - 10, "text-anchor": "end", class: "predicted" }, `predicted ${s(f.plan.predicted_s)}`));
  }
  let y = TOP;
  for (const l of L) {
    g.append(svg("line", { x1: 0, x2: W, y1: y, y2: y, class: "lane" }),
      svg("text", { x: 4, y: y + 13, class: "lane-label" }, `${l.cluster}${l.plan ? ` (${l.plan.workers})` : ""}`));
    if (l.plan) {
      const p = l.plan, bar = svg("rect", { class: "planned", x: X(p.start_s), y: y + 3, width: Math.max(1, X(p.end_s) - X(p.start_s)), height: HEAD - 6 });
      bar.append(svg("title", {}, `planned: ${p.from} → ${p.to}, ${s(p.start_s)} – ${s(p.end_s)}`));
      const spread = svg("rect", { class: "planned-spread", x: X(p.end_s), y: y + 6, width: Math.max(0, X(p.done_s) - X(p.end_s)), height: HEAD - 12 });
      spread.append(svg("title", {}, `planned spread inside ${p.to}: until ${s(p.done_s)}`));
      g.append(bar, spread, svg("text", { x: X(p.end_s) + 3, y: y + 13, class: "from" }, "from " + p.from));
    }
    y += HEAD;
    for (const x of l.copies) {
      const kind = !x.from ? "master" : x.from_cluster === x.to_cluster ? "local" : "inter";
      const bar = svg("rect", { class: "actual " + kind, x: X(x.start_s), y: y + 2, width: Math.max(1.5, X(x.end_s) - X(x.start_s)), height: ROW - 4 });
      const fell = x.assigned !== null && x.assigned !== x.from ? ` (handed out: ${x.assigned ? "volunteer " + x.assigned : "master"})` : "";
      bar.append(svg("title", {}, `volunteer ${x.to} ← ${who(x.from, x.from_cluster)}: ${s(x.start_s)} – ${s(x.end_s)}, ${mib(x.bytes)}${fell}`));
      g.append(bar, svg("text", { x: LEFT - 4, y: y + ROW - 3, "text-anchor": "end", class: "copy-label" }, `v${x.to} ← ${x.from ? "v" + x.from : "master"}`));
      y += ROW;
    }
  }
  return g;
}

function table(id, head, rows) {
  return el("div", { class: "scroll" }, el("table", { id }, el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c)))))));
}

function fileCard(f, k) {
  const last = f.transfers.reduce((m, x) => Math.max(m, x.end_s), 0);
  const p = f.plan;
  const summary = el("p", { class: "dist-summary" }, `${f.name} (${f.sha256.slice(0, 12)}, ${mib(f.size)}): `,
    p ? `plan ${p.algorithm} (${p.plans} built, the last at ${s(p.built_s)}) over ${p.transfers.length} clusters, predicted ${s(p.predicted_s)}, lower bound ${s(p.lower_bound_s)}; `
      : "no plan recorded (the online rule, or not handed out yet); ",
    `${f.transfers_total} copies recorded`, f.transfers.length ? `, the last held at ${s(last)}` : "",
    f.transfers_total > ROWS_MAX ? ` (the first ${ROWS_MAX} drawn)` : "", ".");
  const total = f.by_source.reduce((a, b) => a + b.bytes, 0) || 1;
  const src = table(`by-source-${k}`, ["source", "cluster", "copies", "bytes", "share"],
    f.by_source.map((b) => [b.source ? `volunteer ${b.source}` : "master", b.cluster, b.copies, mib(b.bytes), (100 * b.bytes / total).toFixed(0) + "%"]));
  const legend = el("p", { class: "legend gantt-legend" }, el("span", { class: "planned" }, "planned copy"),
    el("span", { class: "planned-spread" }, "planned spread"), el("span", { class: "master" }, "from the master"),
    el("span", { class: "inter" }, "from another cluster"), el("span", { class: "local" }, "inside the cluster"));
  return el("section", { class: "card dist-file" }, el("h3", {}, f.name), summary, legend,
    el("div", { class: "gantt-box" }, gantt(f, k)), el("h4", {}, "Bytes by source"),
    f.by_source.length ? src : el("p", {}, "No copy recorded yet."));
}

export function renderDist(main, id) {
  const out = el("div", { id: "dist" }), rates = el("div");
  main.replaceChildren(el("h2", {}, `Job ${id}: distribution`),
    el("p", {}, el("a", { href: `#/job/${id}` }, `← job ${id}`)), out, el("h3", {}, "Link rates the master measured"), rates);
  let last = null;
  return async () => {
    const d = await api(`/v1/jobs/${id}/distribution`);
    if (d === last) return;
    last = d;
    out.replaceChildren(...(d.files.length ? d.files.map(fileCard) : [el("p", {}, "This job has no broadcast input.")]));
    rates.replaceChildren(d.rates.length ? table("rates", ["from", "to", "rate", "bytes/s", "samples"],
      d.rates.map((r) => [r.from, r.to, rate(r.bytes_per_second), r.bytes_per_second, r.samples])) : el("p", {}, "None measured yet."));
  };
}
