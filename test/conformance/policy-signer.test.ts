// A policy-driven custom signer runs the conformance suite: one for leaf certificates, one that issues CAs.
import { parsePolicy } from "../../signers/policy-schema.js";
import { createPolicySigner } from "../../signers/policy-signer.js";
import { describeSignerConformance, type ConformanceEnv } from "./signer-conformance.js";

const services = parsePolicy({
  signerName: "example.com/internal-services",
  subject: { permitted: { CN: ["*.svc.example.com"], O: ["example"] }, required: ["CN"] },
  subjectAltNames: { dns: { permitted: ["*.svc.example.com"] }, ip: { permitted: ["10.0.0.0/8", "fd00::/8"] }, required: ["dns"] },
  usages: { required: ["digital signature", "server auth"], permitted: ["key encipherment", "client auth"] },
  lifetime: { default: "24h", minimum: "1h", maximum: "30d" },
});

const SERVING = ["digital signature", "key encipherment", "server auth"];

describeSignerConformance("policy signer for services", (env: ConformanceEnv) => createPolicySigner(services, env), {
  caKeyType: "p384",
  valid: [
    { name: "a service certificate with the default lifetime", request: { cn: "api.svc.example.com", o: ["example"], dns: ["api.svc.example.com"], ip: ["10.1.1.1"], usages: SERVING }, lifetimeSeconds: 24 * 3600 },
    { name: "a service certificate shortened to the policy maximum", request: { cn: "db.svc.example.com", dns: ["db.svc.example.com"], usages: SERVING, expirationSeconds: 90 * 86_400 }, lifetimeSeconds: 30 * 86_400 },
    { name: "a service certificate for two hours", request: { cn: "x.svc.example.com", dns: ["x.svc.example.com"], ip: ["fd00::5"], usages: SERVING, expirationSeconds: 7200 } },
  ],
  invalid: [
    { name: "a subject outside the permitted names", request: { cn: "api.example.org", dns: ["api.svc.example.com"], usages: SERVING } },
    { name: "a request without DNS names", request: { cn: "api.svc.example.com", ip: ["10.0.0.1"], usages: SERVING } },
    { name: "a request below the minimum lifetime", request: { cn: "a.svc.example.com", dns: ["a.svc.example.com"], usages: SERVING, expirationSeconds: 1200 } },
    { name: "a CA request", request: { cn: "a.svc.example.com", dns: ["a.svc.example.com"], usages: [...SERVING, "cert sign"], requestCa: true } },
  ],
});

const intermediates = parsePolicy({
  signerName: "example.com/team-intermediates",
  subject: { permitted: { CN: ["/team-[a-z]+ CA/"] }, required: ["CN"] },
  usages: { required: ["cert sign"], permitted: ["crl sign", "digital signature"] },
  lifetime: { maximum: "90d" },
  caCertificates: { allowCa: true, maxPathLen: 0 },
});

describeSignerConformance("policy signer for intermediate CAs", (env: ConformanceEnv) => createPolicySigner(intermediates, env), {
  issuesCa: true,
  valid: [{ name: "a team intermediate CA", request: { cn: "team-blue CA", usages: ["cert sign", "crl sign", "digital signature"], requestCa: true }, lifetimeSeconds: 90 * 86_400 }],
  invalid: [
    { name: "a leaf request", request: { cn: "team-blue CA", usages: ["digital signature"] } },
    { name: "a CA for another team name pattern", request: { cn: "blue", usages: ["cert sign"], requestCa: true } },
  ],
});
