// What webhook matchConditions cost per request: two authorization conditions (CEL) against the same test in plain
// JavaScript (the ceiling), and one admission condition over a CSR, in alternating rounds so load falls on all three.
import { compileCondition } from "../../src/cel/index.js";
import { compileSubjectAccessReviewCondition } from "../../src/config/authorization-config.js";
import { envNumber, percentile } from "./measure.js";

const N = envNumber("BENCH_REQUESTS", 20_000);
const ROUNDS = envNumber("BENCH_ROUNDS", 5);

const cel = [compileSubjectAccessReviewCondition("has(request.resourceAttributes)"), compileSubjectAccessReviewCondition("request.resourceAttributes.resource == 'signers' && request.resourceAttributes.verb == 'approve'")];
const plain = [(r: Record<string, unknown>) => r.resourceAttributes !== undefined, (r: Record<string, unknown>) => (r.resourceAttributes as { resource: string; verb: string }).resource === "signers" && (r.resourceAttributes as { verb: string }).verb === "approve"];
const admission = compileCondition("!has(object.metadata.labels) || !('review' in object.metadata.labels) || object.metadata.labels.review != 'skip'", "admission");

const spec = { user: "dave", groups: ["team-approvers", "system:authenticated"], uid: "u", resourceAttributes: { verb: "approve", group: "certificates.platform.io", resource: "signers", name: "example.com/team" } };
// A CSR of about the size of a real one (its PEM request is most of it).
const csr = { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", metadata: { name: "x", labels: { team: "pki" } }, spec: { request: "A".repeat(1200), signerName: "example.com/team", usages: ["client auth"] } };

/** Mean nanoseconds of one call of `fn` over N calls. */
function time(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  return Number(process.hrtime.bigint() - start) / N;
}

const rows: Record<"cel" | "plain" | "admission", number[]> = { cel: [], plain: [], admission: [] };
for (let round = 0; round < ROUNDS; round++) {
  rows.cel.push(time(() => cel.every((m) => m(spec))));
  rows.plain.push(time(() => plain.every((m) => m(spec))));
  rows.admission.push(time(() => admission({ object: csr, oldObject: null, request: { operation: "CREATE" } })));
}
const median = (a: readonly number[]): number => percentile(a, 50);
const us = (ns: number): string => (ns / 1000).toFixed(3);
console.log(`authorization, 2 CEL conditions: ${us(median(rows.cel))} µs per request (median of ${ROUNDS} rounds of ${N})`);
console.log(`authorization, the same in plain JS: ${us(median(rows.plain))} µs (CEL ×${(median(rows.cel) / median(rows.plain)).toFixed(0)})`);
console.log(`admission, 1 CEL condition over a CSR: ${us(median(rows.admission))} µs per request`);
