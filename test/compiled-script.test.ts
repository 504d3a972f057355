// compiledScript and findPackageRoot: dist/ files found from the package root, wherever the calling module runs.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { compiledScript, findPackageRoot, PACKAGE_ROOT } from "../src/compiled-script.js";
import { tempDir } from "./fixtures/temp-dir.js";

describe("findPackageRoot", () => {
  const root = tempDir("package-root-");
  writeFileSync(join(root, "package.json"), "{}");
  for (const dir of ["src/pki", "dist/src/cli", "signers"]) mkdirSync(join(root, dir), { recursive: true });

  it("is the nearest directory with a package.json: the same from src/, dist/ and signers/", () => {
    for (const dir of ["src/pki", "dist/src/cli", "signers", "."]) expect(findPackageRoot(join(root, dir))).toBe(root);
  });

  it("is this repository for the product's own modules", () => {
    expect(PACKAGE_ROOT).toBe(fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, ""));
  });
});

describe("compiledScript", () => {
  const root = tempDir("compiled-");
  mkdirSync(join(root, "dist/src/pki"), { recursive: true });

  it("is the file under dist/ of the package root", () => {
    writeFileSync(join(root, "dist/src/pki/worker.js"), "");
    expect(compiledScript("src/pki/worker.js", "a worker", root).pathname).toBe(join(root, "dist/src/pki/worker.js"));
  });

  it("finds the product's own workers, built by npm test's pretest step", () => {
    expect(compiledScript("src/pki/signing-pool-worker.js", "the pool worker").pathname).toMatch(/\/dist\/src\/pki\/signing-pool-worker\.js$/);
  });

  it("says what is missing and what to run", () => {
    expect(() => compiledScript("src/pki/absent.js", "the absent worker", root)).toThrow(
      expect.objectContaining({ code: "NOT_READY", message: `the absent worker not found at ${join(root, "dist/src/pki/absent.js")}; run npm run build` }),
    );
  });
});
