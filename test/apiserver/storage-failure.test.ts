// An API server whose disk refuses to flush the write-ahead log: the write gets a Status 503, later writes too, the
// health checks report the storage down, and the process keeps serving.
import { fdatasync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { call } from "./http-client.js";
import { SA_PATH, serverFixture } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { serviceAccount } from "../fixtures/objects.js";

const dir = tempDir("pca-storage-failure-");

describe("a failed write-ahead log flush", () => {
  it("answers the write and later writes 503 STORAGE_UNAVAILABLE and fails readyz, while the server stays up", async () => {
    let failing = false;
    const storage = await openSqliteStorage({
      path: join(dir, "store.db"),
      syncLog: (fd, done) => (failing ? done(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" })) : fdatasync(fd, done)),
    });
    const server = await serverFixture({ storage });
    try {
      expect((await call(server.address, "POST", SA_PATH, { body: serviceAccount({ name: "before" }) })).status).toBe(201);
      expect((await call(server.address, "GET", "/readyz")).status).toBe(200);
      failing = true;
      for (const name of ["during", "after"]) {
        const r = await call(server.address, "POST", SA_PATH, { body: serviceAccount({ name }) });
        expect(r.status).toBe(503);
        expect(r.body).toMatchObject({ kind: "Status", reason: "ServiceUnavailable", code: 503 });
        expect(r.body.message).toMatch(/could not be flushed to disk/);
      }
      const ready = await call(server.address, "GET", "/readyz?verbose");
      expect(ready.status).toBe(503);
      expect(ready.text).toContain("[-]storage failed");
      expect((await call(server.address, "GET", `${SA_PATH}/before`)).status).toBe(200);
    } finally {
      await server.stop();
      await storage.close();
    }
  });
});
