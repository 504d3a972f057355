import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PlatformError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { CaSource, type CaSourceFs, type CaSourceOptions } from "../../src/pki/ca-source.js";
import { T0 } from "./issuance-fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";

/** In-memory files whose stat facts change on every write, and counters of the calls made. */
class MemoryFs implements CaSourceFs {
  readonly files = new Map<string, { data: Uint8Array; mtimeMs: number; ino: number }>();
  stats = 0;
  reads = 0;
  private tick = 0;

  write(path: string, text: string): void {
    this.tick += 1;
    this.files.set(path, { data: Buffer.from(text), mtimeMs: this.tick, ino: this.tick });
  }

  touch(path: string): void {
    const f = this.files.get(path)!;
    this.tick += 1;
    f.mtimeMs = this.tick;
  }

  async stat(path: string) {
    this.stats += 1;
    const f = this.files.get(path);
    if (!f) throw Object.assign(new Error(`ENOENT: no such file, stat '${path}'`), { code: "ENOENT" });
    return { ino: f.ino, size: f.data.length, mtimeMs: f.mtimeMs };
  }

  async readFile(path: string) {
    this.reads += 1;
    const f = this.files.get(path);
    if (!f) throw new Error(`ENOENT: ${path}`);
    return f.data;
  }
}

interface Harness {
  readonly fs: MemoryFs;
  readonly source: CaSource;
  readonly errors: PlatformError[];
  readonly changes: number[];
  readonly ticks: (() => void)[];
  clock: Date;
}

function harness(options: Partial<CaSourceOptions> = {}): Harness {
  const fs = new MemoryFs();
  const h: Harness = { fs, errors: [], changes: [], ticks: [], clock: T0, source: undefined as never };
  const source = new CaSource({
    certFile: "/ca/tls.crt",
    keyFile: "/ca/tls.key",
    fs,
    clock: () => h.clock,
    onError: (e) => h.errors.push(e),
    onChange: (_ca, generation) => h.changes.push(generation),
    schedule: (tick) => {
      h.ticks.push(tick);
      return () => h.ticks.splice(h.ticks.indexOf(tick), 1);
    },
    ...options,
  });
  return Object.assign(h, { source });
}

async function install(h: Harness, keyType: "p256" | "p384" | "ed25519" | "rsa2048"): Promise<void> {
  const { certPem, keyPem } = await testCa({ keyType: keyType });
  h.fs.write("/ca/tls.crt", certPem);
  h.fs.write("/ca/tls.key", keyPem);
}

describe("CaSource", () => {
  it("does no I/O until refreshed and then loads the pair", async () => {
    const h = harness();
    await install(h, "p256");
    expect(h.fs.stats).toBe(0);
    expect(() => h.source.current()).toThrow(expect.objectContaining({ code: "CA_INVALID", message: expect.stringContaining("call refresh() first") }));
    expect(await h.source.refresh()).toBe(true);
    expect(h.source.current().certPem).toBe((await testCa({ keyType: "p256" })).certPem);
    expect([h.source.generation, h.changes]).toEqual([1, [1]]);
  });

  it("only stats unchanged files and reads without re-parsing files touched but equal", async () => {
    const h = harness();
    await install(h, "p256");
    await h.source.refresh();
    const first = h.source.current();
    const reads = h.fs.reads;
    expect(await h.source.refresh()).toBe(false);
    expect(h.fs.reads).toBe(reads);
    h.fs.touch("/ca/tls.crt");
    expect(await h.source.refresh()).toBe(false);
    expect(h.fs.reads).toBe(reads + 2);
    expect(h.source.current()).toBe(first);
    expect(h.source.generation).toBe(1);
  });

  it("shares one check between concurrent refreshes", async () => {
    const h = harness();
    await install(h, "p256");
    const results = await Promise.all([h.source.refresh(), h.source.refresh(), h.source.refresh()]);
    expect(results).toEqual([true, true, true]);
    expect(h.fs.stats).toBe(2);
  });

  it("switches to new files and keeps the previous CA in its history", async () => {
    const h = harness();
    await install(h, "p256");
    await h.source.refresh();
    const old = h.source.current();
    h.source.recordIssued(old, new Date(T0.getTime() + 3_600_000));
    h.source.recordIssued(old, new Date(T0.getTime() + 1_800_000));
    await install(h, "ed25519");
    h.clock = new Date(T0.getTime() + 60_000);
    expect(await h.source.refresh()).toBe(true);
    expect(h.source.current().keyAlgorithm).toBe("ed25519");
    expect(h.source.generation).toBe(2);
    expect(h.source.history()).toEqual([
      { ca: old, generation: 1, retiredAt: h.clock, lastIssuedNotAfter: new Date(T0.getTime() + 3_600_000) },
    ]);
    expect(h.source.trustAnchors()).toEqual([h.source.current().certPem, old.certPem]);
    expect(h.source.trustAnchors(new Date(T0.getTime() + 3_600_000))).toEqual([h.source.current().certPem]);
  });

  it("drops a previous CA once its last certificate expired, at the next change", async () => {
    const h = harness();
    await install(h, "p256");
    await h.source.refresh();
    h.source.recordIssued(h.source.current(), new Date(T0.getTime() + 1000));
    await install(h, "p384");
    await h.source.refresh();
    expect(h.source.history()).toHaveLength(1);
    h.clock = new Date(T0.getTime() + 2000);
    await install(h, "ed25519");
    await h.source.refresh();
    expect(h.source.history().map((e) => e.ca.keyAlgorithm)).toEqual(["ecdsa"]);
    expect(h.source.history()[0]!.ca.curve).toBe("P-384");
  });

  it("keeps what it knew of a CA the files roll back to", async () => {
    const h = harness();
    await install(h, "p256");
    await h.source.refresh();
    const notAfter = new Date(T0.getTime() + 86_400_000);
    h.source.recordIssued(h.source.current(), notAfter);
    await install(h, "p384");
    await h.source.refresh();
    await install(h, "p256");
    await h.source.refresh();
    expect(h.source.generation).toBe(3);
    expect(h.source.history().map((e) => e.ca.curve)).toEqual(["P-384"]);
    await install(h, "ed25519");
    await h.source.refresh();
    expect(h.source.history()[0]).toMatchObject({ generation: 3, lastIssuedNotAfter: notAfter });
  });

  it.each([
    ["a key that does not match", async (h: Harness) => h.fs.write("/ca/tls.key", (await testCa({ keyType: "p384" })).keyPem), "KEY_MISMATCH"],
    ["a truncated certificate", async (h: Harness) => h.fs.write("/ca/tls.crt", (await testCa({ keyType: "p384" })).certPem.slice(0, 200)), "PEM_INVALID"],
    ["a missing key file", async (h: Harness) => void h.fs.files.delete("/ca/tls.key"), "CA_INVALID"],
  ])("keeps the previous pair and reports once when the files change to %s", async (_name, breakFiles, code) => {
    const h = harness();
    await install(h, "p256");
    await h.source.refresh();
    const good = h.source.current();
    await breakFiles(h);
    expect(await h.source.refresh()).toBe(false);
    expect(await h.source.refresh()).toBe(false);
    expect(h.source.current()).toBe(good);
    expect(h.errors.map((e) => e.code)).toEqual([code]);
    expect(h.source.lastError?.code).toBe(code);
    await install(h, "p256");
    expect(await h.source.refresh()).toBe(false);
    expect(h.source.lastError).toBeUndefined();
    expect(h.source.generation).toBe(1);
  });

  it("reports why nothing could be loaded", async () => {
    const h = harness();
    h.fs.write("/ca/tls.crt", "garbage");
    h.fs.write("/ca/tls.key", "garbage");
    await h.source.refresh();
    expect(() => h.source.current()).toThrow(expect.objectContaining({ code: "CA_INVALID", message: expect.stringContaining("no PEM block") }));
  });

  it("throws the first load's failure from load() instead of logging it, and logs a later one", async () => {
    let output = "";
    const destination = new Writable({ write(chunk, _encoding, done) { output += String(chunk); done(); } });
    const h = harness({ logger: createLogger({ level: "info", destination }) });
    h.fs.write("/ca/tls.crt", "garbage");
    h.fs.write("/ca/tls.key", "garbage");
    await expect(h.source.load()).rejects.toThrow(expect.objectContaining({ code: "PEM_INVALID" }));
    expect(output).toBe("");
    h.fs.write("/ca/tls.key", "still garbage");
    await h.source.refresh();
    expect(output).toContain("CA files not usable, no CA loaded");
    await install(h, "p256");
    await expect(h.source.load()).resolves.toBeUndefined();
    expect(h.source.generation).toBe(1);
  });

  it("polls on its interval after start and stops on abort", async () => {
    const h = harness({ pollIntervalMs: 5000 });
    await install(h, "p256");
    const abort = new AbortController();
    await h.source.start(abort.signal);
    expect(h.source.generation).toBe(1);
    await install(h, "ed25519");
    h.ticks[0]!();
    await h.source.refresh();
    expect(h.source.generation).toBe(2);
    abort.abort();
    expect(h.ticks).toHaveLength(0);
  });

  it("validates its options once", () => {
    expect(() => new CaSource({ certFile: "", keyFile: "k" })).toThrow("expected `certFile` to be a file path, got \"\"");
    expect(() => new CaSource({ certFile: "c", keyFile: "k", pollIntervalMs: -1 })).toThrow("expected `pollIntervalMs` to be an integer ≥ 0, got -1");
  });

  it("picks up a CA replaced on disk by rename", async () => {
    const dir = tempDir("ca-source-");
    const [a, b] = [await testCa({ keyType: "p256" }), await testCa({ keyType: "rsa2048" })];
    const certFile = join(dir, "ca.crt");
    const keyFile = join(dir, "ca.key");
    writeFileSync(certFile, a.certPem);
    writeFileSync(keyFile, a.keyPem, { mode: 0o600 });
    const source = new CaSource({ certFile, keyFile });
    await source.refresh();
    writeFileSync(`${certFile}.new`, b.certPem);
    writeFileSync(`${keyFile}.new`, b.keyPem, { mode: 0o600 });
    renameSync(`${certFile}.new`, certFile);
    renameSync(`${keyFile}.new`, keyFile);
    expect(await source.refresh()).toBe(true);
    expect(source.current().keyAlgorithm).toBe("rsa");
  });
});
