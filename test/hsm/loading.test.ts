// Every way a signer loads its CA takes a pkcs11: key URI: controller configuration, plug-ins, a default module.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { signersFromConfig } from "../../src/controller/controllers/signers-from-config.js";
import { silentLogger } from "../../src/logger.js";
import { CaSource } from "../../src/pki/ca-source.js";
import { generateTokenCa, TokenKey } from "../../src/pki/pkcs11-ca.js";
import { MODULE_ENV } from "../../src/pki/pkcs11-token.js";
import { loadSignerPlugin } from "../../signers/plugin.js";
import { REPO } from "../cli/fixtures.js";
import { rejection, signingRequest } from "../signers/fixtures.js";
import { SOFTHSM_MODULE, softhsmToken } from "./softhsm.js";

const token = softhsmToken("loading");
const certFile = join(token.dir, "ca.pem");
const CLIENT = ["digital signature", "client auth"];

beforeAll(async () => {
  const { certPem } = await generateTokenCa({ uri: token.uri("ca"), commonName: "loading test CA", keyType: "ecdsa-p256", lifetimeSeconds: 86_400, now: new Date() });
  writeFileSync(certFile, certPem);
});

describe("a CA key named by a pkcs11: URI", () => {
  it("serves the built-in signers of the controller configuration", async () => {
    const names = groupNames();
    const setup = await signersFromConfig({ names, signingFiles: new Map([[names.signers.apiserverClient, { certFile, keyFile: token.uri("ca") }]]), maxDurationSeconds: 86_400, logger: silentLogger() });
    const signer = setup.registry.get(names.signers.apiserverClient);
    expect(signer.ready()).toBe(true);
    expect(await signer.sign(await signingRequest({ signerName: names.signers.apiserverClient, cn: "alice", usages: CLIENT }), new Date())).toMatch(/^-----BEGIN CERTIFICATE-----/);
    setup.stop();
  });

  it("serves a plug-in's loadCa", async () => {
    const signer = await loadSignerPlugin("signers/examples/example-plugin.ts", { options: { caCertFile: certFile, caKeyFile: token.uri("ca") } });
    const chain = await signer.sign(await signingRequest({ signerName: signer.signerName, cn: "bot", usages: CLIENT, expirationSeconds: 600 }), new Date());
    expect(chain).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it(`finds the module in ${MODULE_ENV} when the URI has no module-path, and says so when neither is set`, async () => {
    const uri = `pkcs11:token=loading;object=ca?pin-source=file:${token.pinFile}`;
    expect((await TokenKey.open(uri, { [MODULE_ENV]: SOFTHSM_MODULE })).ref.object).toBe("ca");
    const error = await rejection(TokenKey.open(uri, {}));
    expect([error.code, error.message]).toEqual(["HSM_UNAVAILABLE", `${uri}: no PKCS#11 module: add module-path=/path/to/module.so to the URI or set ${MODULE_ENV}`]);
  });

  it("retries the token on the next refresh after a failure, though the certificate file did not change", async () => {
    const pinFile = join(token.dir, "later.pin");
    const uri = `pkcs11:token=loading;object=ca?module-path=${SOFTHSM_MODULE}&pin-source=file:${pinFile}`;
    const source = new CaSource({ certFile, keyFile: uri });
    expect(await source.refresh()).toBe(false);
    expect([source.lastError?.code, source.lastError?.message]).toEqual(["HSM_LOGIN_FAILED", expect.stringContaining(`cannot read the PIN file ${pinFile}`)]);
    writeFileSync(pinFile, "4321\n", { mode: 0o600 });
    expect(await source.refresh()).toBe(true);
    expect(source.current().keySigner).toBeDefined();
  });

  it("signs from a worker thread after the main thread initialised the module", async () => {
    expect((await (await TokenKey.open(token.uri("ca"))).signer({ kind: "ecdsa", curve: "P-256" }).sign(Uint8Array.of(1))).length).toBeGreaterThan(8);
    const script = [
      `const { TokenKey } = await import(${JSON.stringify(pathToFileURL(join(REPO, "dist/src/pki/pkcs11-ca.js")).href)});`,
      `const key = await TokenKey.open(${JSON.stringify(token.uri("ca"))});`,
      'const signature = await key.signer({ kind: "ecdsa", curve: "P-256" }).sign(Uint8Array.of(2));',
      'parentPort.postMessage(signature.length);',
    ].join("\n");
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(`import { parentPort } from "node:worker_threads";\n${script}`)}`));
    const answer = await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    expect(answer).toBeGreaterThan(8);
    await worker.terminate();
  });

  it("never shows a pin-value in errors", async () => {
    const source = new CaSource({ certFile, keyFile: `pkcs11:token=loading;object=missing?module-path=${SOFTHSM_MODULE}&pin-value=4321` });
    await source.refresh();
    const notLoaded = await rejection(Promise.resolve().then(() => source.current()));
    expect([source.lastError?.code, notLoaded.code]).toEqual(["HSM_KEY_NOT_FOUND", "CA_INVALID"]);
    expect(notLoaded.message).toMatch(/pin-value=\*\*\*/);
    for (const message of [source.lastError!.message, notLoaded.message]) expect(message).not.toContain("4321");
  });
});
