// compiledScript: the compiled sibling of a module, else its dist/ twin, else a NOT_READY error naming both.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { compiledScript } from "../src/compiled-script.js";
import { tempDir } from "./fixtures/temp-dir.js";

describe("compiledScript", () => {
  const root = tempDir("compiled-");
  mkdirSync(join(root, "src/pki"), { recursive: true });
  mkdirSync(join(root, "dist/src/pki"), { recursive: true });
  const moduleUrl = pathToFileURL(join(root, "src/pki/pool.ts")).href;

  it("takes the dist/ twin when the module runs from sources, and the sibling once there is one", () => {
    writeFileSync(join(root, "dist/src/pki/worker.js"), "");
    expect(compiledScript(moduleUrl, "worker.js", "a worker").pathname).toBe(join(root, "dist/src/pki/worker.js"));
    writeFileSync(join(root, "src/pki/worker.js"), "");
    expect(compiledScript(moduleUrl, "worker.js", "a worker").pathname).toBe(join(root, "src/pki/worker.js"));
  });

  it("finds the dist/ twin of a module outside src/ (the signers)", () => {
    mkdirSync(join(root, "signers"), { recursive: true });
    mkdirSync(join(root, "dist/signers"), { recursive: true });
    writeFileSync(join(root, "dist/signers/rules.js"), "");
    expect(compiledScript(pathToFileURL(join(root, "signers/builtin.ts")).href, "rules.js", "rules").pathname).toBe(join(root, "dist/signers/rules.js"));
  });

  it("says what is missing and what to run", () => {
    expect(() => compiledScript(moduleUrl, "absent.js", "the absent worker")).toThrow(
      expect.objectContaining({ code: "NOT_READY", message: expect.stringMatching(/^the absent worker not found next to .*pool\.ts nor in dist\/; run npm run build$/) }),
    );
  });
});
