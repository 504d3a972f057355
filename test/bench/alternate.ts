// Alternates bench:e2e's burst between builds (each a directory with `dist/` built, natively too), so that a change is
// compared with the build before it on the same host in the same minutes: one line per run, then per build the medians
// of the wall time, the CPU per CSR of each part and that CPU over the load generator's (whose code a change to the
// product leaves alone, so it tracks the host's speed). A worktree of the build before:
//   git worktree add /tmp/before REV && cd /tmp/before && ln -s "$OLDPWD/node_modules" && npm run build && npm run build:native
// Run: `node dist/test/bench/alternate.js ROUNDS DIR_A DIR_B [DIR ...]` after `npm run build`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

interface Run {
  readonly wall: number;
  readonly server: number;
  readonly controllers: number;
  readonly other: number;
  readonly loadGenerator: number;
  readonly peerRatio: number;
}

/** The figures of one burst from e2e.js's report; undefined when a line is missing (the run failed). */
export function parseBurst(text: string): Run | undefined {
  const wall = /all work finished \(every Event written\) after ([\d.]+) s/.exec(text);
  const cpu = /server ([\d.]+) ms, controllers ([\d.]+) ms, other threads ([\d.]+) ms, load generator \(clients \+ watch\) ([\d.]+) ms/.exec(text);
  const peer = /in ([\d.]+)× the peer's time/.exec(text);
  if (!wall || !cpu) return undefined;
  return { wall: Number(wall[1]), server: Number(cpu[1]), controllers: Number(cpu[2]), other: Number(cpu[3]), loadGenerator: Number(cpu[4]), peerRatio: peer ? Number(peer[1]) : NaN };
}

/** One run's line; the peer's ratio only when the run measured its peer (not under BENCH_PEER=0). */
export function runLine(at: string, label: string, run: Run): string {
  const peer = Number.isNaN(run.peerRatio) ? "" : ` (${run.peerRatio}× the peer)`;
  return `${at} ${label}: all work ${run.wall} s${peer} | per CSR: server ${run.server}, controllers ${run.controllers}, other ${run.other}, load generator ${run.loadGenerator} ms`;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function main(): void {
  const [roundsArg, ...dirs] = process.argv.slice(2);
  const rounds = Number(roundsArg);
  if (!Number.isSafeInteger(rounds) || rounds < 1 || dirs.length < 2) {
    console.error("usage: node dist/test/bench/alternate.js ROUNDS DIR_A DIR_B [DIR ...]");
    process.exit(2);
  }
  const builds = dirs.map((d) => resolve(d));
  for (const dir of builds) {
    if (!existsSync(join(dir, "dist/test/bench/e2e.js"))) {
      console.error(`alternate: ${dir} has no dist/test/bench/e2e.js (run npm run build there)`);
      process.exit(2);
    }
  }
  // Labelled A, B, …: a build given twice (an A/A run, the host's own noise) keeps two columns of figures.
  const labels = builds.map((d, i) => `${String.fromCharCode(65 + i)} ${d}`);
  const runs = new Map<string, Run[]>(labels.map((l) => [l, []]));
  for (let r = 1; r <= rounds; r++) {
    for (const [i, dir] of builds.entries()) {
      const label = labels[i]!;
      const out = spawnSync(process.execPath, [join(dir, "dist/test/bench/e2e.js")], { cwd: dir, env: { ...process.env, BENCH_PHASES: "burst" }, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
      const run = parseBurst(`${out.stdout}${out.stderr}`);
      const at = new Date().toISOString().slice(11, 19);
      if (!run) {
        console.log(`${at} ${label}: no figures (exit ${out.status}); skipped`);
        continue;
      }
      runs.get(label)!.push(run);
      console.log(runLine(at, label, run));
    }
  }
  console.log("\n| build | runs | all work (median) | server ms/CSR | controllers ms/CSR | server / load generator | controllers / load generator |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const [label, rs] of runs) {
    if (rs.length === 0) continue;
    const m = (f: (r: Run) => number) => median(rs.map(f));
    console.log(
      `| ${label} | ${rs.length} | ${m((r) => r.wall).toFixed(1)} s | ${m((r) => r.server).toFixed(2)} | ${m((r) => r.controllers).toFixed(2)} | ${m((r) => r.server / r.loadGenerator).toFixed(2)} | ${m((r) => r.controllers / r.loadGenerator).toFixed(2)} |`,
    );
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]).endsWith(join("bench", "alternate.js"))) main();
