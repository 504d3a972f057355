// What the bins load: `sign` and `platformctl` from one-file bundles, answering as their modules do; `--version` alone.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { VERSION } from "../../src/version.js";
import { generateCa } from "../../src/pki/ca.js";
import { writePrivateKeyFile } from "../../src/pki/keys.js";
import { csr } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { CTL, runNode } from "./ctl/fixtures.js";
import { CLI, REPO } from "./fixtures.js";

const dir = tempDir("bundles-");
const file = (name: string) => join(dir, name);
const SIGNER = groupNames().signers.apiserverClient;
const USAGES = "digital signature,client auth";

/** `node <script> …args` in the test directory; `preload` is imported first (--import, through NODE_OPTIONS). */
function node(script: string, args: readonly string[], preload?: string) {
  return runNode(script, args, { cwd: dir, env: { LOADED: file("loaded.txt"), ...(preload && { NODE_OPTIONS: `--import ${pathToFileURL(preload).href}` }) } });
}

/** Runs `node <script> sign …` with the test CA. */
function sign(script: string, flags: readonly string[], preload?: string) {
  return node(script, ["sign", "--ca-cert", file("ca.crt"), "--ca-key", file("ca.key"), "--usages", USAGES, ...flags], preload);
}

/** The files of this repository a run loaded, in load order, from the record of the loader hook. */
function productFiles(): string[] {
  const repo = pathToFileURL(REPO).href.replace(/\/?$/, "/");
  const urls = readFileSync(file("loaded.txt"), "utf8").split("\n").filter((u) => u.startsWith(repo));
  rmSync(file("loaded.txt"));
  return urls.map((u) => u.slice(repo.length));
}

beforeAll(async () => {
  const made = await generateCa({ commonName: "bundle test CA", keyType: "p256", lifetimeSeconds: 86_400, now: new Date() });
  writeFileSync(file("ca.crt"), made.certPem);
  await writePrivateKeyFile(file("ca.key"), made.keyPem);
  writeFileSync(file("alice.csr"), (await csr({ cn: "alice", o: ["dev"] })).pem);
  // Records every module file Node loads, through a loader hook (it runs before the command's first import).
  writeFileSync(file("hooks.mjs"), [
    'import { appendFileSync } from "node:fs";',
    "export async function load(url, context, next) {",
    '  if (url.startsWith("file:")) appendFileSync(process.env.LOADED, url + "\\n");',
    "  return next(url, context);",
    "}",
  ].join("\n"));
  writeFileSync(file("record.mjs"), 'import { register } from "node:module";\nregister(new URL("./hooks.mjs", import.meta.url));\n');
  // A plug-in whose refusal is the package's own PlatformError, imported from the package as a plug-in does.
  writeFileSync(file("refusing.mjs"), [
    `import { PlatformError } from ${JSON.stringify(pathToFileURL(join(REPO, "dist/src/index.js")).href)};`,
    "export const signer = {",
    '  signerName: "example.com/refusing",',
    "  validate: () => ({ ok: true }),",
    '  sign: async () => { throw new PlatformError("SIGNER_REJECTED", "refused by policy", { causes: [{ message: "first reason" }, { message: "second reason" }] }); },',
    "  trustAnchors: () => [],",
    "  ready: () => ({ ok: true }),",
    "};",
  ].join("\n"));
});

describe("platform-ca sign from its bundle", () => {
  it("loads two files of the product through the bin: the entry and dist/src/cli/sign.bundle.js", async () => {
    const r = await sign(CLI, ["--signer-name", SIGNER, "--csr", "alice.csr"], file("record.mjs"));
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
    expect(productFiles()).toEqual(["dist/src/cli/platform-ca.js", "dist/src/cli/sign.bundle.js"]);
  });

  it("answers as the command's own modules do, a plug-in's PlatformError and its causes included", async () => {
    const plugin = ["--plugin", file("refusing.mjs"), "--signer-name", "example.com/refusing", "--csr", "alice.csr"];
    const [bundled, modules] = await Promise.all([sign(join(REPO, "dist/src/cli/sign.bundle.js"), plugin), sign(join(REPO, "dist/src/cli/sign-entry.js"), plugin)]);
    // Read as ours: neither wrapped as an unknown plug-in failure nor stripped of its causes.
    expect(bundled).toEqual({ code: 1, stdout: "", stderr: "error: refused by policy\n  first reason\n  second reason\n" });
    expect(modules).toEqual(bundled);
  });

  it("refuses a bad flag the same way from the bundle and from the modules", async () => {
    const bad = ["--signer-name", SIGNER, "--csr", "alice.csr", "--expiration-seconds", "12"];
    const [bundled, modules] = await Promise.all([sign(CLI, bad), sign(join(REPO, "dist/src/cli/sign-entry.js"), bad)]);
    expect(bundled.code).toBe(2);
    expect(bundled.stderr).toMatch(/^error: expected `--expiration-seconds` to be a whole number ≥ \d+, got "12"\n$/);
    expect(modules).toEqual(bundled);
  });
});

describe("platform-ca --version", () => {
  it.each([["--version"], ["-V"]])("answers %s with the version, loading only the entry and version.js", async (flag) => {
    const r = await node(CLI, [flag], file("record.mjs"));
    expect(r).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
    expect(productFiles()).toEqual(["dist/src/cli/platform-ca.js", "dist/src/version.js"]);
  });

  it("prints the same through the whole program when more words follow", async () => {
    expect(await node(CLI, ["--version", "extra"])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
  });
});

describe("platformctl from its bundle", () => {
  it("loads two files of the product through the bin: the entry and dist/src/cli/platformctl.bundle.js", async () => {
    const r = await node(CTL, ["version", "--client"], file("record.mjs"));
    expect(r).toEqual({ code: 0, stdout: `Client Version: v${VERSION}\n`, stderr: "" });
    expect(productFiles()).toEqual(["dist/src/cli/platformctl.js", "dist/src/cli/platformctl.bundle.js"]);
  });

  it.each([
    ["a verb's help", ["get", "--help"]],
    ["a usage error", ["get"]],
    ["an unknown verb", ["frobnicate"]],
    ["a server that is not there", ["--server", "https://127.0.0.1:1", "--request-timeout", "2s", "get", "csr"]],
  ])("answers %s as its modules do", async (_, args) => {
    const [bundled, modules] = await Promise.all([node(CTL, args), node(join(REPO, "dist/src/cli/platformctl-main.js"), args)]);
    expect(bundled.stdout + bundled.stderr).not.toBe("");
    expect(modules).toEqual(bundled);
  });
});
