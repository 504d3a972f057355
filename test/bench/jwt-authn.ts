// What a JWT bearer token costs to authenticate, in-process, beside a token-file token (the cheap peer): distinct tokens per
// cell, and one token repeated (the 10 s cache of authenticated tokens); rounds interleaved.
import { performance } from "node:perf_hooks";
import { stringify } from "yaml";
import { JwtAuthenticators } from "../../src/apiserver/auth/authn-jwt.js";
import { parseCredentialFile, TokenFileAuthenticator } from "../../src/apiserver/auth/authn-token-file.js";
import { parseAuthenticationConfig } from "../../src/config/authentication-config.js";
import { startTestOidcIssuer, type TestOidcIssuer } from "../../src/testing/oidc-issuer.js";
import { envNumber } from "./measure.js";

const ROUNDS = envNumber("BENCH_ROUNDS", 5);
const PER_ROUND = envNumber("BENCH_TOKENS", 500);

function authenticators(issuer: TestOidcIssuer, mappings: Record<string, unknown>, rules: unknown[] = []): JwtAuthenticators {
  const jwt = [{ issuer: { url: issuer.url, certificateAuthority: issuer.caPem, audiences: ["platform"] }, claimMappings: mappings, claimValidationRules: rules }];
  return new JwtAuthenticators(parseAuthenticationConfig(stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthenticationConfiguration", jwt }), "bench.yaml"));
}

async function main(): Promise<void> {
  const issuer = await startTestOidcIssuer();
  const claims = { sub: "alice", email: "alice@example.com", email_verified: true, groups: ["dev", "ops", "pki"], team: "security" };
  const byClaim = authenticators(issuer, { username: { claim: "sub", prefix: "oidc:" }, groups: { claim: "groups", prefix: "oidc:" } });
  const byCel = authenticators(
    issuer,
    { username: { expression: "'idp:' + claims.email" }, groups: { expression: "claims.groups.map(g, 'idp:' + g)" }, extra: [{ key: "example.org/team", valueExpression: "claims.team" }] },
    [{ expression: "claims.email_verified" }],
  );
  await Promise.all([byClaim.start(), byCel.start()]);
  const tokenFile = new TokenFileAuthenticator(parseCredentialFile("a-static-token-of-some-length-0123456789,alice,1,\"dev,ops\"\n"));
  // Distinct tokens (a jti each) for every JWT cell, minted before the clock starts: an authenticated token is
  // remembered for 10 s, so a repeated token measures the cache, which its own cell does.
  let serial = 0;
  const mint = (alg: "RS256" | "ES256" | "PS256") => (): Promise<string> => issuer.mint({ ...claims, jti: `t-${serial++}` }, { alg });
  const repeated = await issuer.mint(claims);
  const cells: [string, (() => Promise<string>) | undefined, (token: string) => Promise<unknown>][] = [
    ["token file", undefined, async () => tokenFile.authenticateToken("a-static-token-of-some-length-0123456789")],
    ["JWT RS256, claim mappings", mint("RS256"), (t) => byClaim.authenticateToken(t)],
    ["JWT ES256, claim mappings", mint("ES256"), (t) => byClaim.authenticateToken(t)],
    ["JWT PS256, claim mappings", mint("PS256"), (t) => byClaim.authenticateToken(t)],
    ["JWT RS256, CEL mappings and a rule", mint("RS256"), (t) => byCel.authenticateToken(t)],
    ["JWT RS256, the same token again (remembered)", async () => repeated, (t) => byClaim.authenticateToken(t)],
  ];
  // Every cell must authenticate: a refusal would measure the error path.
  for (const [name, next, run] of cells) if (!((await run(next ? await next() : "")) as { user?: unknown })?.user) throw new Error(`${name} did not authenticate`);
  const samples = new Map<string, number[]>(cells.map(([name]) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // The order turns each round, so a busy moment of the shared machine does not land on one cell.
    for (let i = 0; i < cells.length; i++) {
      const [name, next, run] = cells[(i + round) % cells.length]!;
      const tokens: string[] = [];
      for (let n = 0; n < PER_ROUND; n++) tokens.push(next ? await next() : "");
      const started = performance.now();
      for (const token of tokens) await run(token);
      samples.get(name)!.push(((performance.now() - started) * 1000) / PER_ROUND);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = median(samples.get("JWT RS256, claim mappings")!);
  console.log(`| token | µs per token (median of ${ROUNDS} rounds × ${PER_ROUND}) | vs RS256 with claim mappings |\n|---|---|---|`);
  for (const [name, xs] of samples) console.log(`| ${name} | ${median(xs).toFixed(1)} | ${(median(xs) / base).toFixed(2)}× |`);
  byClaim.stop();
  byCel.stop();
  await issuer.close();
}

await main();
