// The package as shipped: the licence, runtime dependencies that are exactly what runtime code imports, and the
// deploy/ recipes (Dockerfile parse check, systemd unit verified by systemd-analyze where it exists).
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "./fixtures.js";
import { ensureBuilt } from "../e2e/apiserver-process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { packageOf } from "../architecture/entry-packages.js";
import { importSpecifiers, readImportGraph } from "../architecture/layers.js";

const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as {
  license: string;
  dependencies: Record<string, string>;
  /** Loaded on first use only (pkcs11js, for CA keys in a PKCS#11 token): runtime code, but not installed everywhere. */
  optionalDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
};

describe("runtime dependencies", () => {
  const shipped = { ...pkg.dependencies, ...pkg.optionalDependencies };
  const imported = new Map<string, string>();
  for (const file of readImportGraph(REPO).keys()) {
    for (const spec of importSpecifiers(readFileSync(join(REPO, file), "utf8"))) {
      if (spec.startsWith(".")) continue;
      imported.set(spec.startsWith("node:") ? spec : packageOf(spec), file);
    }
  }

  it("are each imported by src/ or signers/", () => {
    const unused = Object.keys(shipped).filter((d) => !imported.has(d));
    expect(unused).toEqual([]);
  });

  it("cover every import of src/ and signers/, and builtins are imported as node:", () => {
    const strays = [...imported].filter(([name]) => !(name.startsWith("node:") && builtinModules.includes(name.slice(5))) && !(name in shipped));
    expect(strays).toEqual([]);
  });

  it("finds imports in every form, and not in comments", () => {
    const text = '// from "commented"\nimport "side-effect";\nimport { a } from "@s/pkg/sub";\nconst b = await import("lazy");\nconst c = require("req");\n/* import "block" */\n';
    expect(importSpecifiers(text).map(packageOf)).toEqual(["side-effect", "@s/pkg", "lazy", "req"]);
  });
});

describe("licence", () => {
  it("is the Apache License 2.0 text package.json names", () => {
    expect(pkg.license).toBe("Apache-2.0");
    const text = readFileSync(join(REPO, "LICENSE"), "utf8");
    expect(text).toMatch(/^ +Apache License\n +Version 2\.0, January 2004\n/);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
  });
});

interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** Dockerfile instructions: comments dropped, continuation lines joined; stages split at FROM. */
function dockerStages(text: string): { name?: string; instructions: Instruction[] }[] {
  const lines = text.replace(/\\\n/g, " ").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  const stages: { name?: string; instructions: Instruction[] }[] = [];
  for (const line of lines) {
    const [, op, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    if (op!.toUpperCase() === "FROM") stages.push({ ...(/\bAS\s+(\S+)$/i.exec(args!) && { name: /\bAS\s+(\S+)$/i.exec(args!)![1] }), instructions: [] });
    stages.at(-1)!.instructions.push({ op: op!.toUpperCase(), args: args! });
  }
  return stages;
}

describe("deploy/Dockerfile", () => {
  const stages = dockerStages(readFileSync(join(REPO, "deploy/Dockerfile"), "utf8"));
  const [build, runtime] = stages;
  const all = (stage: typeof build, op: string) => stage!.instructions.filter((i) => i.op === op).map((i) => i.args);
  const copies = (stage: typeof build) => all(stage, "COPY").map((a) => a.split(/\s+/));

  it("builds in a stage with the compiler and runs in a second one without it", () => {
    expect(stages).toHaveLength(2);
    expect(build!.name).toBe("build");
    expect(all(build, "RUN").join("\n")).toMatch(/g\+\+[\s\S]*npm ci[\s\S]*npm run build\s+&& npm prune --omit=dev/);
    expect(all(runtime, "RUN").join("\n")).not.toMatch(/g\+\+|npm ci/);
  });

  it("copies into the build stage only files of this repository, and every file the build compiles", () => {
    const sources = copies(build).flatMap((words) => words.slice(0, -1));
    for (const source of sources) expect(existsSync(join(REPO, source)), source).toBe(true);
    const include = (JSON.parse(readFileSync(join(REPO, "tsconfig.build.json"), "utf8")) as { include: string[] }).include;
    for (const pattern of include) {
      const top = pattern.split("/**")[0]!;
      expect(sources.some((s) => top.startsWith(s.replace(/\/$/, ""))), pattern).toBe(true);
    }
  });

  it("copies into the runtime what the build stage produces, and starts `platform-ca up` on the volume as a non-root user", () => {
    const fromBuild = copies(runtime).filter((w) => w[0] === "--from=build").map((w) => w.slice(1, -1)).flat();
    // Paths under /src are the repository's after `npm ci && npm run build`: the same files exist here once built.
    for (const path of fromBuild) expect(existsSync(join(REPO, relative("/src", path))), path).toBe(true);
    const entry = JSON.parse(all(runtime, "ENTRYPOINT")[0]!) as string[];
    expect(entry.slice(0, 3)).toEqual(["node", "/opt/platform-ca/dist/src/cli/platform-ca.js", "up"]);
    expect(fromBuild).toContain("/src/dist/src/");
    expect(pkg.bin["platform-ca"]).toBe("./dist/src/cli/platform-ca.js");
    const dataDir = entry[entry.indexOf("--data-dir") + 1];
    expect(JSON.parse(all(runtime, "VOLUME")[0]!)).toEqual([dataDir]);
    const user = all(runtime, "USER")[0]!;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(all(runtime, "RUN").join("\n")).toContain(`chown platform-ca:platform-ca ${dataDir}`);
  });

  it("lays out a runtime that finds its native accelerator and workers, and signs from the bundled `sign`", () => {
    ensureBuilt();
    // The runtime stage's copies, from this built repository (node_modules linked rather than copied).
    const root = tempDir("runtime-image-");
    for (const words of copies(runtime).filter((w) => w[0] === "--from=build")) {
      const [from, to] = [words[1]!, words.at(-1)!];
      const target = join(root, to.replace(/^\.\/?/, ""), to.endsWith("/") && !from.endsWith("/") ? from.split("/").pop()! : "");
      if (from === "/src/node_modules/") symlinkSync(join(REPO, "node_modules"), target.replace(/\/$/, ""));
      else cpSync(join(REPO, relative("/src", from)), target, { recursive: true });
    }
    const native = execFileSync(process.execPath, ["--input-type=module", "-e", `import(${JSON.stringify(join(root, "dist/src/pki/native.js"))}).then((m) => process.stdout.write(String(m.nativeCrypto !== undefined)))`], { encoding: "utf8" });
    expect(native).toBe("true");
    const dir = tempDir();
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(dir, "ca.key"), "-subj", "/CN=image CA", "-days", "1", "-out", join(dir, "ca.crt")], { stdio: "ignore" });
    for (const n of ["a", "b"]) execFileSync("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", join(dir, `${n}.key`), "-subj", `/CN=${n}`, "-out", join(dir, `${n}.csr`)], { stdio: "ignore" });
    // Two CSRs: signed on the pool's workers, whose script is found from the package root.
    const signed = spawnSync(process.execPath, [join(root, "dist/src/cli/platform-ca.js"), "sign", "--signer-name", "platform.io/apiserver-client", "--usages", "digital signature,client auth", "--ca-cert", join(dir, "ca.crt"), "--ca-key", join(dir, "ca.key"), "--csr", join(dir, "a.csr"), "--csr", join(dir, "b.csr"), "--out-dir", dir], { encoding: "utf8" });
    expect([signed.status, signed.stderr]).toEqual([0, ""]);
    for (const n of ["a", "b"]) expect(readFileSync(join(dir, `${n}.crt`), "utf8")).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
  });
});

describe("bin entries", () => {
  it("are executable files once built, so `npx platformctl` and node_modules/.bin run them whatever installed the package", () => {
    ensureBuilt();
    for (const [name, path] of Object.entries(pkg.bin)) {
      expect(statSync(join(REPO, path)).mode & 0o111, name).toBe(0o111);
      expect(readFileSync(join(REPO, path), "utf8").startsWith("#!/usr/bin/env node\n"), name).toBe(true);
    }
  });
});

const systemdAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;

describe.skipIf(!systemdAnalyze)("deploy/platform-ca.service", () => {
  const unit = join(REPO, "deploy/platform-ca.service");

  it("passes systemd-analyze verify, and a unit with a mistake does not", () => {
    const ok = spawnSync("systemd-analyze", ["verify", unit], { encoding: "utf8" });
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    const broken = join(tempDir(), "platform-ca.service");
    writeFileSync(broken, readFileSync(unit, "utf8").replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"));
    expect(spawnSync("systemd-analyze", ["verify", broken], { encoding: "utf8" }).stderr).toContain("Unknown key 'NoNewPrivilege' in section [Service]");
  });

  it("is hardened: systemd-analyze security rates its exposure at most 2 of 10", () => {
    // --threshold counts on a 0-100 scale.
    const out = execFileSync("systemd-analyze", ["security", "--offline=yes", "--threshold=20", unit], { encoding: "utf8" });
    expect(out).toMatch(/Overall exposure level for platform-ca\.service: [01]\.\d/);
  });

  it("runs `platform-ca up` on its state directory as a user of its own", () => {
    const text = readFileSync(unit, "utf8");
    expect(text).toMatch(/^ExecStart=\/usr\/bin\/node --v8-pool-size=0 \/opt\/platform-ca\/dist\/src\/cli\/platform-ca\.js up --data-dir \/var\/lib\/platform-ca /m);
    for (const line of ["DynamicUser=yes", "StateDirectory=platform-ca", "NoNewPrivileges=yes", "ProtectSystem=strict"]) expect(text).toContain(`\n${line}\n`);
    expect(statSync(unit).mode & 0o111).toBe(0);
  });
});
