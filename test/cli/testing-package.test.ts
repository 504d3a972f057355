// platform-ca-testing, the testing library as a package of its own: it declares exactly the npm packages
// src/testing.ts loads, and its packed tarball installs into an empty project nothing else; its declarations type-check.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { filesReachedFrom, packagesLoadedBy } from "../architecture/entry-packages.js";
import { readImportGraph } from "../architecture/layers.js";

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const PACKAGE_DIR = join(REPO, "packages/testing");
const readManifest = (dir: string) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;
const root = readManifest(REPO);
const testing = readManifest(PACKAGE_DIR);
/** What src/testing.ts loads, by its import graph: the one list both packages are checked against. */
const loaded = packagesLoadedBy(REPO, "src/testing.ts");

describe("platform-ca-testing declares what src/testing.ts loads", () => {
  it("src/testing.ts loads pino, pino-pretty, yaml and (on first use of a token key) pkcs11js, none of the server's packages", () => {
    expect([...loaded.keys()]).toEqual(["pino", "pino-pretty", "pkcs11js", "yaml"]);
  });

  it("as dependencies, with pkcs11js an optional peer (npm does not install it), at the root package's versions", () => {
    const declared = { ...testing.dependencies, ...testing.peerDependencies };
    expect(Object.keys(declared).sort()).toEqual([...loaded.keys()]);
    expect(Object.keys(testing.peerDependencies ?? {})).toEqual(["pkcs11js"]);
    expect(testing.peerDependenciesMeta?.pkcs11js?.optional).toBe(true);
    const rootRanges = { ...root.dependencies, ...root.optionalDependencies };
    for (const [name, range] of Object.entries(declared)) expect(range, name).toBe(rootRanges[name]);
    expect(testing.version).toBe(root.version);
  });

  it("ships only compiled files of what src/testing.ts reaches", async () => {
    const { reachedFiles } = (await import(join(PACKAGE_DIR, "prepack.mjs"))) as { reachedFiles: () => string[] };
    const shipped = reachedFiles().filter((f) => f.endsWith(".js")).map((f) => f.replace(/\.js$/, ".ts"));
    const reached = new Set(filesReachedFrom(readImportGraph(REPO), "src/testing.ts"));
    expect(shipped.filter((f) => !reached.has(f))).toEqual([]);
    expect(shipped).toContain("src/testing.ts");
    expect(shipped.some((f) => f.startsWith("src/apiserver/") || f.startsWith("src/controller/") || f.startsWith("src/cli/"))).toBe(false);
  });
});

/** Every package directory under node_modules (nested ones too) → its manifest. */
function installed(nodeModules: string): Map<string, Manifest> {
  const found = new Map<string, Manifest>();
  if (!existsSync(nodeModules)) return found;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith(".")) continue;
    const dirs = entry.startsWith("@") ? readdirSync(join(nodeModules, entry)).map((n) => join(nodeModules, entry, n)) : [join(nodeModules, entry)];
    for (const dir of dirs) {
      found.set(dir, readManifest(dir));
      for (const [nested, manifest] of installed(join(dir, "node_modules"))) found.set(nested, manifest);
    }
  }
  return found;
}

/** The registry answers (npm ping); every install below needs it. */
const registry = spawnSync("npm", ["ping"], { encoding: "utf8", timeout: 20_000 }).status === 0;
if (!registry) console.warn("skipping the platform-ca-testing install test: the npm registry is unreachable (npm ping failed)");

describe.skipIf(!registry)("the packed platform-ca-testing in an empty project", () => {
  it("installs only packages the library loads and their dependencies, issues a certificate openssl verifies and type-checks in a strict consumer", { timeout: 180_000 }, () => {
    const work = tempDir();
    const npm = (args: string[], cwd: string) => execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, encoding: "utf8", timeout: 150_000 });
    // `npm pack` runs prepack.mjs, which copies the build's files: dist/ must be current (npm run build before tests).
    const tarball = join(work, npm(["pack", "--pack-destination", work], PACKAGE_DIR).trim().split("\n").at(-1)!);
    const project = join(work, "consumer");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", type: "module", private: true }));
    const started = performance.now();
    npm(["install", "--ignore-scripts", "--cache", join(work, "npm-cache"), tarball], project);
    const seconds = (performance.now() - started) / 1000;

    const packages = installed(join(project, "node_modules"));
    const names = new Set([...packages.values()].map((m) => m.name));
    // Allowed: the package, what its files import, and what those declare in turn (their own dependencies).
    const allowed = new Set(["platform-ca-testing"]);
    const todo = [...loaded.keys()];
    while (todo.length > 0) {
      const name = todo.pop()!;
      if (allowed.has(name) || !names.has(name)) continue;
      allowed.add(name);
      for (const manifest of packages.values()) if (manifest.name === name) todo.push(...Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }));
    }
    expect([...names].filter((n) => !allowed.has(n)).sort()).toEqual([]);
    for (const heavy of ["platform-ca", "fastify", "better-sqlite3", "commander", "prom-client", "jose", "pkcs11js"]) expect(names.has(heavy), heavy).toBe(false);
    for (const direct of ["pino", "pino-pretty", "yaml"]) expect(names.has(direct), direct).toBe(true);

    writeFileSync(
      join(project, "issue.js"),
      [
        `import { writeFileSync } from "node:fs";`,
        `import { createTestAuthority } from "platform-ca-testing";`,
        `const ca = await createTestAuthority();`,
        `const pair = await ca.issueServer();`,
        `writeFileSync("ca.pem", ca.caPem);`,
        `writeFileSync("server.pem", pair.certPem);`,
      ].join("\n"),
    );
    execFileSync(process.execPath, ["issue.js"], { cwd: project });
    const verified = spawnSync("openssl", ["verify", "-CAfile", "ca.pem", "-purpose", "sslserver", "server.pem"], { cwd: project, encoding: "utf8" });
    expect(verified.stdout.trim()).toBe("server.pem: OK");

    // The declarations ship complete: a strict consumer type-checks them too (skipLibCheck off), with this repository's compiler.
    writeFileSync(
      join(project, "check.ts"),
      `import { createTestAuthority, type KeyType } from "platform-ca-testing";\nconst ca = await createTestAuthority({ keyType: "p256" satisfies KeyType });\nexport const pem: string = (await ca.issueServer()).certPem;\n`,
    );
    const compilerOptions = { target: "es2022", module: "nodenext", strict: true, noEmit: true, skipLibCheck: false, types: ["node"], typeRoots: [join(REPO, "node_modules/@types")] };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["check.ts"] }));
    const typecheck = spawnSync(join(REPO, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], { cwd: project, encoding: "utf8" });
    expect(typecheck.stdout).toBe("");
    expect(typecheck.status).toBe(0);

    const kib = Number(execFileSync("du", ["-sk", join(project, "node_modules")], { encoding: "utf8" }).split("\t")[0]);
    console.log(`platform-ca-testing install: ${seconds.toFixed(1)} s, ${packages.size} packages, ${kib} KiB in node_modules`);
    // The server's dependencies alone are ~40 MiB; what the library loads is a few MiB.
    expect(kib).toBeLessThan(15_000);
  });
});
