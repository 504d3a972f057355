// bench:encryption — the cost of encryption at rest in one run: CSR creates/s and a LIST of every CSR through the real
// server process, with no encryption configuration, with aesgcm and with KMS v2 (the test plugin on a unix socket) over
// every resource, rounds interleaved; then a storage-level LIST of 10,000 stored CSRs from a text store and from the
// same file under aesgcm and under KMS v2: the first list after opening the store (every value decrypted) and the next.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { csr, csrObject } from "../fixtures/csr.js";
import { percentile, envNumber } from "./measure.js";
import { openSqliteByteStorage, openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { encryptedStorage } from "../../src/apiserver/encryption/encrypted-storage.js";
import { parseEncryptionConfig } from "../../src/apiserver/encryption/config.js";
import type { Storage } from "../../src/apiserver/storage/types.js";
import { httpCall, startServer, stopServer } from "./insecure-server.js";
import { MockKms } from "../fixtures/mock-kms.js";
import { inParallel, times } from "../fixtures/parallel.js";

const CREATES = envNumber("BENCH_CREATES", 3000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 5);
const STORE_SIZE = envNumber("BENCH_STORE_SIZE", 10_000);
const CSR_PATH = "/apis/certificates.platform.io/v1/certificatesigningrequests";

const AESGCM = `apiVersion: apiserver.config.platform.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["*.*"]
    providers:
      - aesgcm:
          keys: [{ name: key1, secret: ${Buffer.alloc(32, 3).toString("base64")} }]
`;

const kmsYaml = (endpoint: string) => `apiVersion: apiserver.config.platform.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["*.*"]
    providers:
      - kms: { apiVersion: v2, name: bench, endpoint: "${endpoint}" }
`;

type Mode = "off" | "aesgcm" | "kms";
const MODES: readonly Mode[] = ["off", "aesgcm", "kms"];

async function round(mode: Mode, body: (name: string) => string, kms: MockKms): Promise<{ createsPerSecond: number; listMs: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-encryption-"));
  const config = join(dataDir, "..", `${dataDir.split("/").pop()}.yaml`);
  writeFileSync(config, mode === "kms" ? kmsYaml(kms.endpoint) : AESGCM);
  const { child, base } = await startServer(dataDir, mode === "off" ? [] : ["--encryption-provider-config", config]);
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    const t = performance.now();
    await inParallel(times(CREATES), CONCURRENCY, async (i) => {
      const r = await httpCall(agent, base, "POST", CSR_PATH, body(`csr-${String(i).padStart(7, "0")}`));
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text}`);
    });
    const createsPerSecond = CREATES / ((performance.now() - t) / 1000);
    const lists: number[] = [];
    for (let i = 0; i < LIST_RUNS; i++) {
      const start = performance.now();
      // As kubectl lists: no resourceVersion, every object in one response.
      const r = await httpCall(agent, base, "GET", CSR_PATH);
      lists.push(performance.now() - start);
      if ((JSON.parse(r.text) as { items: unknown[] }).items.length !== CREATES) throw new Error("list is short");
    }
    return { createsPerSecond, listMs: percentile(lists, 50) };
  } finally {
    agent.destroy();
    await stopServer(child);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(config, { force: true });
  }
}

/**
 * Ms of the first list of `prefix` from a store just opened (every value read from the file and decrypted), then the
 * median of LIST_RUNS × 4 more (the values kept as text since the first).
 */
async function listMs(storage: Storage, prefix: string, expected: number): Promise<{ cold: number; warm: number }> {
  const runs: number[] = [];
  for (let i = 0; i <= LIST_RUNS * 4; i++) {
    const t = performance.now();
    const page = await storage.list(prefix);
    runs.push(performance.now() - t);
    if (page.items.length !== expected) throw new Error("list is short");
  }
  return { cold: runs[0]!, warm: percentile(runs.slice(1), 50) };
}

/** 10,000 CSR texts written once per store kind; each listed from storage, without HTTP. */
async function storageLists(body: (name: string) => string, kms: MockKms): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), "bench-encryption-store-"));
  const prefix = "/certificates.platform.io/certificatesigningrequests/";
  const fill = async (s: Storage) => {
    await Promise.all(Array.from({ length: STORE_SIZE }, (_, i) => s.create(`${prefix}csr-${String(i).padStart(7, "0")}`, body(`csr-${i}`))));
    return s;
  };
  // Each store is filled, closed and opened again (a restart), so that its first list reads and decrypts every value.
  const measure = async (open: () => Promise<Storage>) => {
    await (await fill(await open())).close();
    const s = await open();
    try {
      return await listMs(s, prefix, STORE_SIZE);
    } finally {
      await s.close();
    }
  };
  try {
    const textMs = await measure(() => openSqliteStorage({ path: join(dir, "text.db") }));
    const aesgcmMs = await measure(async () => encryptedStorage(await openSqliteByteStorage({ path: join(dir, "aesgcm.db") }), parseEncryptionConfig(AESGCM, "bench")));
    const kmsMs = await measure(async () => {
      const kmsConfig = parseEncryptionConfig(kmsYaml(kms.endpoint), "bench");
      await Promise.all(kmsConfig.kms.map((t) => t.start()));
      return encryptedStorage(await openSqliteByteStorage({ path: join(dir, "kms.db") }), kmsConfig);
    });
    const ms = (x: number) => Math.round(x * 10) / 10;
    const row = (name: string, m: { cold: number; warm: number }) => ({ [`storageList${STORE_SIZE}${name}FirstMs`]: ms(m.cold), [`storageList${STORE_SIZE}${name}Ms`]: ms(m.warm) });
    return { ...row("Text", textMs), ...row("Aesgcm", aesgcmMs), ...row("Kms", kmsMs) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const pem = (await csr({ cn: "system:node:bench", o: ["system:nodes"] })).pem;
  const body = (name: string) => JSON.stringify(csrObject({ name, request: pem, expirationSeconds: 86400 }));
  const socketDir = mkdtempSync(join(tmpdir(), "bench-kms-"));
  const kms = await MockKms.start(join(socketDir, "kms.sock"));
  const results: Record<Mode, Array<{ createsPerSecond: number; listMs: number }>> = { off: [], aesgcm: [], kms: [] };
  // The order turns each round, so no mode always runs first (or last) on a busy machine.
  for (let i = 0; i < ROUNDS; i++) {
    for (let j = 0; j < MODES.length; j++) {
      const mode = MODES[(i + j) % MODES.length]!;
      results[mode].push(await round(mode, body, kms));
    }
  }
  const median = (xs: number[]) => percentile(xs, 50);
  const summary = Object.fromEntries(Object.entries(results).map(([mode, rs]) => [mode, {
    createsPerSecond: Math.round(median(rs.map((r) => r.createsPerSecond))),
    [`list${CREATES}Ms`]: Math.round(median(rs.map((r) => r.listMs))),
    rounds: rs.map((r) => Math.round(r.createsPerSecond)),
  }]));
  process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}, node ${process.version}`, creates: CREATES, concurrency: CONCURRENCY, ...summary, ...(await storageLists(body, kms)) }, null, 2)}\n`);
  await kms.stop();
  rmSync(socketDir, { recursive: true, force: true });
}

await main();
