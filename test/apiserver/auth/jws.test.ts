// Compact JWS parsing and signature checks: malformed tokens, keys that do not fit the algorithm, every accepted algorithm.
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { JWT_ALGORITHMS, parseCompactJws, publicKeyFor, verifyJws } from "../../../src/apiserver/auth/jws.js";
import { startTestOidcIssuer } from "../../../src/testing/oidc-issuer.js";

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
const jwk = (k: KeyObject) => k.export({ format: "jwk" });

describe("parseCompactJws", () => {
  it.each([["two parts", "a.b"], ["four parts", "a.b.c.d"], ["not base64url", `${b64({ alg: "RS256" })}.${b64({})}.+/=`], ["header not JSON", `abc.${b64({})}.`], ["payload a list", `${b64({ alg: "RS256" })}.${b64([1])}.`]])("refuses %s", (_name, token) => {
    expect(parseCompactJws(token)).toBeUndefined();
  });
});

describe("publicKeyFor", () => {
  it("refuses RSA keys below 2048 bits, EC keys of another curve and keys of another type", () => {
    const rsa1024 = generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey;
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey;
    const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey;
    expect(publicKeyFor(jwk(rsa1024), "RS256")).toBeUndefined();
    expect(publicKeyFor(jwk(p384), "ES256")).toBeUndefined();
    expect(publicKeyFor(jwk(p384), "ES384")).toBeDefined();
    expect(publicKeyFor(jwk(p256), "RS256")).toBeUndefined();
    expect(publicKeyFor({ kty: "oct", k: "AAAA" }, "RS256")).toBeUndefined();
  });
});

describe("verifyJws", () => {
  it("checks every accepted algorithm's signature from the test issuer, and refuses it under another algorithm", async () => {
    const issuer = await startTestOidcIssuer();
    try {
      for (const alg of JWT_ALGORITHMS) {
        const jws = parseCompactJws(await issuer.mint({ sub: "a" }, { alg }))!;
        expect(jws.header.alg).toBe(alg);
        const published = issuer.publishedKeys().find((k) => k.kid === jws.header.kid)!;
        const key = publicKeyFor(published, alg)!;
        expect(verifyJws(jws, alg, key), alg).toBe(true);
        const other = alg.startsWith("RS") ? (alg.replace("RS", "PS") as typeof alg) : alg.startsWith("PS") ? (alg.replace("PS", "RS") as typeof alg) : alg;
        if (other !== alg) expect(verifyJws(jws, other, key), `${alg} as ${other}`).toBe(false);
        expect(verifyJws({ ...jws, signingInput: Buffer.concat([jws.signingInput, Buffer.from("x")]) }, alg, key)).toBe(false);
      }
    } finally {
      await issuer.close();
    }
  });
});
