// bench:encryption — the cost of encryption at rest in one run: CSR creates/s and a LIST of every CSR through the real
// server process, with no encryption configuration, with aesgcm and with KMS v2 (the test plugin on a unix socket) over
// every resource, rounds interleaved; then a storage-level LIST of 10,000 stored CSRs from a text store and from the
// same file under aesgcm and under KMS v2.
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
    let next = 0;
    const t = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < CREATES; i = next++) {
        const r = await httpCall(agent, base, "POST", CSR_PATH, body(`csr-${String(i).padStart(7, "0")}`));
        if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text}`);
      }
    }));
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

/** Median ms of listing `prefix` LIST_RUNS × 4 times. */
async function listMs(storage: Storage, prefix: string, expected: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < LIST_RUNS * 4; i++) {
    const t = performance.now();
    const page = await storage.list(prefix);
    times.push(performance.now() - t);
    if (page.items.length !== expected) throw new Error("list is short");
  }
  return percentile(times, 50);
}

/** 10,000 CSR texts written once per store kind; each listed from storage, without HTTP. */
async function storageLists(body: (name: string) => string, kms: MockKms): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), "bench-encryption-store-"));
  const prefix = "/certificates.platform.io/certificatesigningrequests/";
  const fill = async (s: Storage) => {
    await Promise.all(Array.from({ length: STORE_SIZE }, (_, i) => s.create(`${prefix}csr-${String(i).padStart(7, "0")}`, body(`csr-${i}`))));
    return s;
  };
  try {
    const text = await fill(await openSqliteStorage({ path: join(dir, "text.db") }));
    const textMs = await listMs(text, prefix, STORE_SIZE);
    await text.close();
    const sealed = await fill(encryptedStorage(await openSqliteByteStorage({ path: join(dir, "aesgcm.db") }), parseEncryptionConfig(AESGCM, "bench")));
    const aesgcmMs = await listMs(sealed, prefix, STORE_SIZE);
    await sealed.close();
    const kmsConfig = parseEncryptionConfig(kmsYaml(kms.endpoint), "bench");
    await Promise.all(kmsConfig.kms.map((t) => t.start()));
    const enveloped = await fill(encryptedStorage(await openSqliteByteStorage({ path: join(dir, "kms.db") }), kmsConfig));
    const kmsMs = await listMs(enveloped, prefix, STORE_SIZE);
    await enveloped.close();
    const ms = (x: number) => Math.round(x * 10) / 10;
    return { [`storageList${STORE_SIZE}TextMs`]: ms(textMs), [`storageList${STORE_SIZE}AesgcmMs`]: ms(aesgcmMs), [`storageList${STORE_SIZE}KmsMs`]: ms(kmsMs) };
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
