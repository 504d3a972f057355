// A start whose address cannot be listened on: one line naming the port and --listen, exit 1, no data directory.
import { existsSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { holdListenAddress, listenFailure } from "../../src/cli/listen.js";
import { runCli } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

let taken: Server;
let port: number;

beforeAll(async () => {
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen({ host: "127.0.0.1", port: 0 }, () => resolve()));
  port = (taken.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

describe("a taken --listen port", () => {
  it.each([{ command: ["up"] }, { command: ["apiserver"] }, { command: ["apiserver", "--insecure-local"] }])("$command fails with one line naming the port and --listen, before creating the data directory", async ({ command }) => {
    const dataDir = join(tempDir(), "data");
    const r = await runCli([...command, "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: port ${port} on 127.0.0.1 is already in use (another API server, or a local Kubernetes?): pick another address with --listen (e.g. --listen 127.0.0.1:${port + 1}; port 0 picks a free one)\n`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("names an address that is not this machine's", async () => {
    const dataDir = join(tempDir(), "data");
    const r = await runCli(["up", "--listen", "192.0.2.1:6443", "--data-dir", dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: 192.0.2.1 is not an address of this machine: pick another address with --listen (e.g. --listen 192.0.2.1:6444; port 0 picks a free one)\n");
    expect(existsSync(dataDir)).toBe(false);
  });

  it("says ports below 1024 need privileges", () => {
    const err = listenFailure(Object.assign(new Error("listen EACCES"), { code: "EACCES" }), "::1", 443, "--listen");
    expect(err.message).toBe("no permission to listen on [::1]:443 (ports below 1024 need privileges): pick another address with --listen (e.g. --listen [::1]:444; port 0 picks a free one)");
  });

  it("holds the address until released, then frees it for the server", async () => {
    const held = await holdListenAddress("127.0.0.1", 0);
    expect(held.port).toBeGreaterThan(0);
    await expect(holdListenAddress("127.0.0.1", held.port)).rejects.toThrow(`port ${held.port} on 127.0.0.1 is already in use`);
    await held.release();
    await held.release();
    const again = await holdListenAddress("127.0.0.1", held.port);
    await again.release();
    expect(again.port).toBe(held.port);
  });
});

describe("holding the listen address", () => {
  it("turns clients away while held, so releasing it never waits on one (a restart under client load)", async () => {
    const held = await holdListenAddress("127.0.0.1", 0);
    // A client that connects while the server starts, and would keep its connection open.
    const client = connect({ host: "127.0.0.1", port: held.port });
    const outcome = await new Promise<string>((resolve) => {
      client.once("close", () => resolve("closed by the holder"));
      client.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? "error"));
    });
    expect(["closed by the holder", "ECONNRESET"]).toContain(outcome);
    const released = await Promise.race([held.release().then(() => "released"), new Promise((r) => setTimeout(() => r("still waiting"), 2000))]);
    expect(released).toBe("released");
  });
});
