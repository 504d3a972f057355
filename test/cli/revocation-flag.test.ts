// `--revocation-unavailable`: a value other than deny or allow stops the start with one usage line.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

describe("platform-ca apiserver --revocation-unavailable", () => {
  it("refuses an unknown value before touching the data directory", async () => {
    const dataDir = join(tempDir(), "data");
    const r = await runCli(["apiserver", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--revocation-unavailable", "maybe"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe('error: --revocation-unavailable must be one of deny, allow, got "maybe"');
    expect(existsSync(dataDir)).toBe(false);
  });
});
