// Signer plug-ins loaded by path: the example plug-in, the accepted export shapes, and clear refusals.
import { X509Certificate } from "node:crypto";
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadSignerPlugin } from "../../signers/plugin.js";
import { DAY, NOW, rejection, signingRequest, writeCaFiles, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const EXAMPLE = "signers/examples/example-plugin.ts";
const dir = tempDir("plugin-");
const caFiles = await writeCaFiles(dir, await testCa({ ...SIGNERS_CA, commonName: "plug-in CA" }));

let modules = 0;
/** Writes a plug-in module into the temp directory and returns its path. */
function pluginModule(source: string): string {
  const file = join(dir, `plugin-${++modules}.mjs`);
  writeFileSync(file, source);
  return file;
}

const PLAIN = `{ signerName: "example.com/plain", validate: () => ({ ok: true }), sign: async () => "chain", trustAnchors: () => [], ready: () => true }`;

describe("signer plug-ins", () => {
  it("loads the example plug-in relative to a base directory and issues one-hour client certificates", async () => {
    const signer = await loadSignerPlugin(EXAMPLE, { baseDir: ROOT, now: () => NOW, options: { caCertFile: caFiles.certFile, caKeyFile: caFiles.keyFile } });
    expect([signer.signerName, signer.ready()]).toEqual(["example.com/short-lived", true]);
    const chain = await signer.sign(await signingRequest({ signerName: signer.signerName, cn: "tool", expirationSeconds: DAY, usages: ["digital signature", "client auth"] }), NOW);
    const leaf = new X509Certificate(chain);
    expect([leaf.issuer, Date.parse(leaf.validTo) - NOW.getTime()]).toEqual(["CN=plug-in CA", 3600_000]);
  });

  it.each([
    ["a request without common name", { usages: ["digital signature", "client auth"] }, /needs a common name/],
    ["a serving usage", { cn: "tool", usages: ["digital signature", "client auth", "server auth"] }, /usage "server auth" is not allowed for signer example\.com\/short-lived/],
  ])("has the example plug-in refuse %s", async (_, request, reason) => {
    const signer = await loadSignerPlugin(join(ROOT, EXAMPLE), { options: { caCertFile: caFiles.certFile, caKeyFile: caFiles.keyFile } });
    const validation = signer.validate(await signingRequest({ signerName: signer.signerName, ...request }));
    expect(validation.ok ? "" : validation.reason).toMatch(reason);
  });

  it("resolves the example plug-in's CA files against the base directory", async () => {
    const signer = await loadSignerPlugin(join(ROOT, EXAMPLE), { baseDir: dir, options: { caCertFile: "ca.crt", caKeyFile: "ca.key" } });
    expect(signer.trustAnchors()).toEqual([(await testCa({ ...SIGNERS_CA, commonName: "plug-in CA" })).certPem]);
  });

  it.each([
    ["a signer export", `export const signer = ${PLAIN};`],
    ["a default export", `export default ${PLAIN};`],
    ["a factory, preferred over a signer export", `export const signer = null; export function createSigner() { return ${PLAIN}; }`],
  ])("accepts %s", async (_, source) => {
    const signer = await loadSignerPlugin(pluginModule(source));
    expect([signer.signerName, await signer.sign({} as never, NOW)]).toEqual(["example.com/plain", "chain"]);
  });

  it("hands the factory the group suffix, cluster maximum and plug-in options", async () => {
    const file = pluginModule(`export function createSigner(ctx) {
      return { signerName: ctx.groupSuffix + "/ctx", validate: () => ({ ok: true }), sign: async () => "", ready: () => true,
        trustAnchors: () => [String(ctx.maxDurationSeconds), ctx.options.flavour, typeof ctx.loadCa, typeof ctx.logger.info, ctx.now().toISOString()] };
    }`);
    const signer = await loadSignerPlugin(file, { groupSuffix: "k8s.io", maxDurationSeconds: 7200, options: { flavour: "mint" }, now: () => NOW });
    expect([signer.signerName, ...signer.trustAnchors()]).toEqual(["k8s.io/ctx", "7200", "mint", "function", "function", NOW.toISOString()]);
  });

  it.each([
    ["an empty module path", () => "", /a signer plug-in needs a module path, got ""/],
    ["a module that does not exist", () => join(dir, "absent.mjs"), /absent\.mjs: cannot be loaded/],
    ["a module that does not parse", () => pluginModule("export const = ;"), /cannot be loaded/],
    ["a module without any signer export", () => pluginModule("export const other = 1;"), /exports neither createSigner\(context\), "signer" nor a default Signer/],
    ["a signer without some methods", () => pluginModule(`export const signer = { signerName: "example.com/x", validate() {}, trustAnchors() {} };`),
      /export "signer" is not a Signer: missing sign\(\), ready\(\)/],
    ["a signer with an unqualified name", () => pluginModule(`export default { ...${PLAIN}, signerName: "plain" };`), /the default export is not a Signer: signer name "plain" is not a qualified name of the form domain\/path/],
    ["a factory that throws", () => pluginModule(`export function createSigner() { throw new Error("no CA configured"); }`), /createSigner failed: no CA configured/],
    ["a factory returning nothing", () => pluginModule(`export async function createSigner() {}`), /createSigner\(context\) is not a Signer: expected an object, got undefined/],
    ["the example plug-in without its CA options", () => join(ROOT, EXAMPLE), /createSigner failed: expected `caCertFile` to be a file path, got nothing/],
  ])("refuses %s with PLUGIN_INVALID", async (_, path, message) => {
    const error = await rejection(loadSignerPlugin(path()));
    expect(error.code).toBe("PLUGIN_INVALID");
    expect(error.message).toMatch(message);
  });

  it("turns whatever a plug-in throws into a PlatformError naming the plug-in", async () => {
    const file = pluginModule(`export const signer = { ...${PLAIN}, validate() { throw new RangeError("bad state"); }, async sign() { throw "a string"; } };`);
    const signer = await loadSignerPlugin(file);
    expect(() => signer.validate({} as never)).toThrow(expect.objectContaining({ code: "INTERNAL", message: `signer plug-in ${file}: bad state` }));
    const error = await rejection(signer.sign({} as never, NOW));
    expect([error.code, error.retryable, error.message]).toEqual(["INTERNAL", true, `signer plug-in ${file}: a string`]);
  });

  it("passes a plug-in's own PlatformErrors through unchanged", async () => {
    const signer = await loadSignerPlugin(join(ROOT, EXAMPLE), { options: { caCertFile: caFiles.certFile, caKeyFile: caFiles.keyFile } });
    const error = await rejection(signer.sign(await signingRequest({ signerName: signer.signerName, usages: ["server auth"] }), NOW));
    expect(error.code).toBe("SIGNER_REJECTED");
  });
});
