// The example plug-in, loaded by path as any plug-in is, runs the conformance suite.
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadSignerPlugin } from "../../signers/plugin.js";
import { describeSignerConformance } from "./signer-conformance.js";

const PLUGIN = resolve(dirname(fileURLToPath(import.meta.url)), "../../signers/examples/example-plugin.ts");
const CLIENT = ["digital signature", "key encipherment", "client auth"];

describeSignerConformance(
  "example plug-in",
  (env) => loadSignerPlugin(PLUGIN, { ...env, loadCa: async () => env.ca, options: { caCertFile: "given", caKeyFile: "given" } }),
  {
    valid: [
      { name: "a client certificate asked for a day, issued for an hour", request: { cn: "tool", usages: CLIENT, expirationSeconds: 86_400 }, lifetimeSeconds: 3600 },
      { name: "a client certificate without expirationSeconds", request: { cn: "tool", usages: CLIENT }, lifetimeSeconds: 3600 },
      { name: "a 20-minute client certificate", request: { cn: "tool", usages: ["digital signature", "client auth"], expirationSeconds: 1200 } },
    ],
    invalid: [
      { name: "a serving certificate", request: { cn: "tool", usages: ["digital signature", "server auth"] } },
      { name: "a certificate without common name", request: { usages: CLIENT } },
    ],
  },
);
