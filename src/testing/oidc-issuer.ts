// A test OIDC issuer on loopback HTTPS: generated keys, discovery document, JWKS, token minting with any claims, key rotation.
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { constants, createHmac, generateKeyPairSync, randomBytes, sign, type JsonWebKey, type KeyObject } from "node:crypto";
import { generateCa } from "../pki/ca.js";
import { mintLeaf } from "../pki/leaf.js";

/** Algorithms the issuer can sign with; HS256 exists so tests can show a symmetric token is refused. */
export const TEST_ISSUER_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "HS256"] as const;
export type TestIssuerAlgorithm = (typeof TEST_ISSUER_ALGORITHMS)[number];

export interface TestOidcIssuerOptions {
  /** Path of the issuer URL (default none: `https://127.0.0.1:<port>`). */
  readonly path?: string;
  /** Default `aud` of minted tokens (default "platform"). */
  readonly audience?: string | readonly string[];
  /** Clock in ms for `iat` and `exp` (default Date.now). */
  readonly now?: () => number;
}

export interface MintOptions {
  /** Signing algorithm (default RS256). */
  readonly alg?: TestIssuerAlgorithm;
  /** Override the `kid` header (e.g. a key the issuer never published). */
  readonly kid?: string;
  /** Sign with a fresh key that is not in the JWKS. */
  readonly unpublishedKey?: boolean;
  /** Lifetime in seconds when `exp` is not given in the claims (default 600). */
  readonly lifetimeSeconds?: number;
}

export type JWK = JsonWebKey & { kid: string; alg: string; use: "sig" };

interface IssuerKey {
  readonly kid: string;
  readonly alg: TestIssuerAlgorithm;
  /** The private key, or the shared secret of HS256. */
  readonly privateKey: KeyObject | Buffer;
  readonly jwk?: JWK;
}

export interface TestOidcIssuer {
  /** The issuer URL (`iss` of minted tokens, the `issuer` of discovery). */
  readonly url: string;
  /** `{url}/.well-known/openid-configuration`. */
  readonly discoveryURL: string;
  /** PEM of the CA that signed the issuer's serving certificate (the `certificateAuthority` of a configuration). */
  readonly caPem: string;
  /** How many times the discovery document and the JWKS were fetched. */
  readonly fetches: { discovery: number; jwks: number };
  /** A signed token: defaults `iss`, `aud`, `iat`, `exp`, then `claims` (a claim set to undefined is left out). */
  mint(claims?: Record<string, unknown>, options?: MintOptions): Promise<string>;
  /** The public keys the JWKS lists now. */
  publishedKeys(): JWK[];
  /** Replaces every key by a new one (new `kid`s); with `keepOld`, the old keys stay published too. */
  rotateKeys(options?: { keepOld?: boolean }): Promise<void>;
  /** Changes what discovery answers: another `issuer`, or a failing status until reset with undefined. */
  setDiscovery(change: { issuer?: string; status?: number } | undefined): void;
  close(): Promise<void>;
}

const toSeconds = (ms: number): number => Math.floor(ms / 1000);

const CURVES = { ES256: "P-256", ES384: "P-384", ES512: "P-521" } as const;

async function newKey(alg: TestIssuerAlgorithm, generation: number): Promise<IssuerKey> {
  const kid = `${alg.toLowerCase()}-${generation}`;
  if (alg === "HS256") return { kid, alg, privateKey: randomBytes(32) };
  const pair = alg.startsWith("ES") ? generateKeyPairSync("ec", { namedCurve: CURVES[alg as keyof typeof CURVES] }) : generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { kid, alg, privateKey: pair.privateKey, jwk: { ...pair.publicKey.export({ format: "jwk" }), kid, alg, use: "sig" } };
}

const b64url = (data: string | Buffer): string => Buffer.from(data).toString("base64url");

/** A compact JWS of `payload` (RFC 7515/7518: ECDSA signatures as r‖s, PSS with the hash's length as salt). */
function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: IssuerKey): string {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const hash = `sha${key.alg.slice(2)}`;
  let signature: Buffer;
  if (key.alg === "HS256") signature = createHmac("sha256", key.privateKey as Buffer).update(input).digest();
  else if (key.alg.startsWith("ES")) signature = sign(hash, Buffer.from(input), { key: key.privateKey as KeyObject, dsaEncoding: "ieee-p1363" });
  else if (key.alg.startsWith("PS")) signature = sign(hash, Buffer.from(input), { key: key.privateKey as KeyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: Number(key.alg.slice(2)) / 8 });
  else signature = sign(hash, Buffer.from(input), key.privateKey as KeyObject);
  return `${input}.${b64url(signature)}`;
}

/** Starts an issuer on 127.0.0.1 with a random port; close() it at the end of the test. */
export async function startTestOidcIssuer(options: TestOidcIssuerOptions = {}): Promise<TestOidcIssuer> {
  const now = options.now ?? Date.now;
  const made = await generateCa({ commonName: "test OIDC issuer CA", keyType: "p256", lifetimeSeconds: 86_400, now: new Date(now() - 60_000) });
  const leaf = await mintLeaf({ commonName: "127.0.0.1", ip: ["127.0.0.1"], dns: ["localhost"], keyType: "p256", usages: ["digital signature", "server auth"], lifetimeSeconds: 86_400, ca: made.ca, now: new Date(now() - 60_000) });
  let generation = 1;
  const keys = new Map<TestIssuerAlgorithm, IssuerKey>();
  let published: JWK[] = [];
  const fetches = { discovery: 0, jwks: 0 };
  let discoveryChange: { issuer?: string; status?: number } | undefined;
  const path = (options.path ?? "").replace(/\/+$/, "");
  let url = "";

  const keyFor = async (alg: TestIssuerAlgorithm): Promise<IssuerKey> => {
    let key = keys.get(alg);
    if (!key) {
      key = await newKey(alg, generation);
      keys.set(alg, key);
      if (key.jwk) published.push(key.jwk);
    }
    return key;
  };
  // Every asymmetric algorithm has a published key from the start, so the first JWKS fetch knows them all.
  await Promise.all(TEST_ISSUER_ALGORITHMS.filter((a) => a !== "HS256").map(keyFor));

  const server: Server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    const reqPath = (req.url ?? "").split("?")[0];
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (reqPath === `${path}/.well-known/openid-configuration`) {
      fetches.discovery++;
      if (discoveryChange?.status) return send(discoveryChange.status, { error: "unavailable" });
      return send(200, { issuer: discoveryChange?.issuer ?? url, jwks_uri: `${url}/jwks`, id_token_signing_alg_values_supported: TEST_ISSUER_ALGORITHMS.slice(0, 9) });
    }
    if (reqPath === `${path}/jwks`) {
      fetches.jwks++;
      return send(200, { keys: published });
    }
    send(404, { error: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  const audience = options.audience ?? "platform";

  return {
    url,
    discoveryURL: `${url}/.well-known/openid-configuration`,
    caPem: made.certPem,
    fetches,
    async mint(claims = {}, mintOptions = {}) {
      const alg = mintOptions.alg ?? "RS256";
      const key = mintOptions.unpublishedKey ? await newKey(alg, -generation) : await keyFor(alg);
      const issuedAt = toSeconds(now());
      const payload: Record<string, unknown> = { iss: url, aud: audience, iat: issuedAt, exp: issuedAt + (mintOptions.lifetimeSeconds ?? 600), ...claims };
      for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
      return signJwt({ alg, kid: mintOptions.kid ?? key.kid, typ: "JWT" }, payload, key);
    },
    publishedKeys: () => published.map((k) => ({ ...k })),
    async rotateKeys(rotate = {}) {
      generation++;
      const old = published;
      keys.clear();
      published = rotate.keepOld ? [...old] : [];
      await Promise.all(TEST_ISSUER_ALGORITHMS.filter((a) => a !== "HS256").map(keyFor));
    },
    setDiscovery(change) {
      discoveryChange = change;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
