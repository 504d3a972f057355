import fs from "node:fs";
const f = fs.readdirSync("/tmp/prof").filter(f => f.endsWith(".cpuprofile"))[0];
const p = JSON.parse(fs.readFileSync("/tmp/prof/" + f));
const byId = new Map(p.nodes.map(n => [n.id, n]));
const dt = new Map();
for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
const parent = new Map(); for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
let total = 0; for (const v of dt.values()) total += v;
const names = process.argv.slice(2);
const incl = new Map(names.map(n => [n, 0]));
for (const [id, t] of dt) { const seen = new Set(); let cur = id; while (cur !== undefined) { const fn = byId.get(cur).callFrame.functionName; if (incl.has(fn) && !seen.has(fn)) { incl.set(fn, incl.get(fn) + t); seen.add(fn); } cur = parent.get(cur); } }
for (const [n, t] of incl) console.log((100 * t / total).toFixed(1).padStart(5), n);
