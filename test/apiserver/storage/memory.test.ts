// Runs the storage contract against the in-memory backend.
import { describe, expect, it } from "vitest";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { isPlatformError } from "../../../src/errors.js";
import { storageContract } from "./contract.js";

storageContract("memory", async (options) => new MemoryStorage(options));

describe("memory storage options", () => {
  it.each([
    [{ revisions: 0 }, "expected `retention.revisions` to be an integer ≥ 1, got 0"],
    [{ ageMs: 5 }, "expected `retention.ageMs` ≥ 1000, got 5"],
  ])("refuses retention %j", (retention, message) => {
    let err: unknown;
    try {
      new MemoryStorage({ retention });
    } catch (e) {
      err = e;
    }
    expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
    expect((err as Error).message).toBe(message);
  });
});
