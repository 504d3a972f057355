// The layers of docs/architecture.md hold in src/ and signers/: no import points up or along a refused edge, no parts in a cycle.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../fixtures/repo.js";
import { FORBIDDEN, folderCycles, importSpecifiers, LAYERS, layerViolations, partOf, readImportGraph, type ImportGraph } from "./layers.js";

/**
 * Imports that point up today and go away with work under way elsewhere: the client's clock re-exports the storage
 * clock until src/time/ holds the one Clock. Each must still occur (so this list only shrinks), and is kept out of
 * the checks below.
 */
const PENDING: readonly string[] = [];

const edge = (line: string): string => line.replace(/ \(.*\)$/, "");

function withoutPending(graph: ImportGraph): Map<string, string[]> {
  return new Map([...graph].map(([file, targets]) => [file, targets.filter((t) => !PENDING.includes(`${file} → ${t}`))]));
}

describe("the product's imports", () => {
  const graph = readImportGraph(REPO);

  it("reads every file of src/ and signers/", () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(graph.get("signers/signer-name.ts")).toContain("src/api/names.ts");
  });

  it("never point up the layers nor along a refused edge", () => {
    expect(layerViolations(withoutPending(graph))).toEqual([]);
  });

  it("form no cycle between parts", () => {
    expect(folderCycles(withoutPending(graph))).toEqual([]);
  });

  it.each(PENDING)("still hold the pending exception %s (remove it from PENDING once it is gone)", (pending) => {
    expect(layerViolations(graph).map(edge)).toContain(pending);
  });
});

describe("docs/architecture.md", () => {
  const doc = readFileSync(join(REPO, "docs/architecture.md"), "utf8");
  const section = doc.slice(doc.indexOf("## What may import what")).split(/\n## /)[0] as string;

  it("lists the same parts in the same layers as LAYERS", () => {
    const rows = section.split("\n").filter((line) => /^\| L\d /.test(line));
    const documented = rows.map((row) => [...(row.split("|")[2] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    expect(documented).toEqual(LAYERS.map((entries) => [...entries]));
  });

  it.each(FORBIDDEN)("names the refused edge $from → $to", ({ from, to }) => {
    expect(section).toContain(`\`${from}\` → \`${to}\``);
  });
});

describe("the layer map", () => {
  it.each([
    ["src/errors.ts", 0],
    ["src/time/clock.ts", 0],
    ["src/fields/reader.ts", 0],
    ["src/api/names.ts", 1],
    ["src/pki/files.ts", 1],
    ["signers/serving-approval.ts", 2],
    ["src/client/client.ts", 2],
    ["src/apiserver/bootstrap/pki.ts", 3],
    ["src/cli/platform-ca.ts", 4],
    ["src/testing.ts", 4],
  ])("puts %s in L%i", (file, layer) => {
    expect(partOf(file)?.layer).toBe(layer);
  });

  it("puts a file next to an L0 file, or in a new top folder, in no layer", () => {
    expect(partOf("src/errors-extra.ts")).toBeUndefined();
    expect(partOf("src/newpart/x.ts")).toBeUndefined();
  });
});

describe("the checker", () => {
  const graph = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges));

  it("accepts imports down and within a layer", () => {
    const ok = graph({
      "src/cli/a.ts": ["src/apiserver/b.ts", "src/errors.ts"],
      "src/apiserver/b.ts": ["src/devpki/c.ts", "src/api/d.ts", "src/time/clock.ts"],
      "src/devpki/c.ts": ["src/pki/e.ts", "signers/f.ts"],
      "src/api/d.ts": [],
    });
    expect(layerViolations(ok)).toEqual([]);
    expect(folderCycles(ok)).toEqual([]);
  });

  it.each([
    ["an import up the layers", "src/pki/x.ts", "src/apiserver/y.ts", "L1 src/pki/ imports L3 src/apiserver/"],
    ["a foundation importing the API", "src/time/clock.ts", "src/api/meta.ts", "L0 src/time/ imports L1 src/api/"],
    ["the client importing the server", "src/client/x.ts", "src/apiserver/storage/clock.ts", "forbidden: src/client/ → src/apiserver/"],
    ["the configuration importing the controller", "src/config/x.ts", "src/controller/controllers/y.ts", "forbidden: src/config/ → src/controller/"],
    ["a signer importing the server", "signers/x.ts", "src/apiserver/registry/validation.ts", "forbidden: signers/ → src/apiserver/"],
    ["the server's bootstrap importing the dev PKI (same layer)", "src/apiserver/bootstrap/pki.ts", "src/devpki/leaf.ts", "forbidden: src/apiserver/bootstrap/ → src/devpki/"],
    ["an import of a file in no layer", "src/api/x.ts", "test/fixtures/csr.ts", "imports a file in no layer"],
  ])("names %s: file → imported file", (_what, from, to, why) => {
    const problems = layerViolations(graph({ [from]: [to] }));
    expect(problems).toContainEqual(expect.stringContaining(`${from} → ${to} (${why}`));
  });

  it("names a file that is in no layer", () => {
    expect(layerViolations(graph({ "src/stray.ts": [] }))).toEqual([expect.stringMatching(/^src\/stray\.ts \(in no layer/)]);
  });

  it("reports a cycle between parts with its path and the imports that make it", () => {
    const cycles = folderCycles(graph({
      "src/controller/a.ts": ["src/apiserver/b.ts"],
      "src/apiserver/b.ts": ["src/devpki/c.ts"],
      "src/devpki/c.ts": ["src/controller/d.ts"],
      "src/controller/d.ts": [],
    }));
    expect(cycles).toEqual([
      "src/apiserver/ → src/devpki/ → src/controller/ → src/apiserver/  [src/apiserver/b.ts → src/devpki/c.ts; src/devpki/c.ts → src/controller/d.ts; src/controller/a.ts → src/apiserver/b.ts]",
    ]);
  });

  it("lets the files of one part import each other both ways", () => {
    expect(folderCycles(graph({ "src/apiserver/a.ts": ["src/apiserver/registry/b.ts"], "src/apiserver/registry/b.ts": ["src/apiserver/a.ts"] }))).toEqual([]);
  });
});

describe("reading imports", () => {
  it("finds static, type-only, side-effect, re-exported, multi-line, dynamic and require imports, and skips comments", () => {
    const source = [
      `import { a } from "./a.js";`,
      `import type { B } from '../b.js';`,
      `import "./side-effect.js";`,
      `export { c } from "./c.js";`,
      `export * from "./d.js";`,
      `import {\n  e,\n  f,\n} from "./e.js";`,
      `const g = await import("./g.js");`,
      `type H = typeof import("./h.js");`,
      `// import { x } from "./commented.js";`,
      `/* import { y } from "./block.js"; */`,
      `import { readFile } from "node:fs";`,
      `const origin = 'export "signer"';`,
      `const i = require("./i.js");`,
    ].join("\n");
    expect(importSpecifiers(source).sort()).toEqual(["../b.js", "./a.js", "./c.js", "./d.js", "./e.js", "./g.js", "./h.js", "./i.js", "./side-effect.js", "node:fs"]);
  });

  it("fails on a bad import in a tree on disk", () => {
    const root = mkdtempSync(join(tmpdir(), "layers-"));
    try {
      const files: Record<string, string> = {
        "src/pki/ok.ts": `import { PlatformError } from "../errors.js";\n`,
        "src/errors.ts": `export class PlatformError {}\n`,
        "src/pki/bad.ts": `export async function load() {\n  return import("../apiserver/bootstrap/pki.js");\n}\n`,
        "src/apiserver/bootstrap/pki.ts": `import { issueLeaf } from "../../devpki/leaf.js";\n`,
        "src/devpki/leaf.ts": `export const issueLeaf = 1;\n`,
        "signers/x.ts": `export { show } from "../src/pki/ok.js";\n`,
      };
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(dirname(join(root, file)), { recursive: true });
        writeFileSync(join(root, file), text);
      }
      expect(layerViolations(readImportGraph(root))).toEqual([
        "src/apiserver/bootstrap/pki.ts → src/devpki/leaf.ts (forbidden: src/apiserver/bootstrap/ → src/devpki/)",
        "src/pki/bad.ts → src/apiserver/bootstrap/pki.ts (L1 src/pki/ imports L3 src/apiserver/)",
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
