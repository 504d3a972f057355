// Puts an existing CA's private key into a test token as a non-extractable object and returns the CA signing through it.
import type { KeyObject } from "node:crypto";
import { objectIdentifier } from "../../src/pki/der-writer.js";
import { loadTokenCa } from "../../src/pki/pkcs11-ca.js";
import { parsePkcs11Uri } from "../../src/pki/pkcs11-uri.js";
import { Token } from "../../src/pki/pkcs11-token.js";
import type { CaKeyPair } from "../../src/pki/types.js";

const CURVE_OIDS: Record<string, string> = { "P-256": "1.2.840.10045.3.1.7", "P-384": "1.3.132.0.34" };

/**
 * The shared conformance suite makes its CAs in memory; to run it with the key in the token, each CA's key is
 * imported once (CKA_SENSITIVE, not extractable) and the returned CaKeyPair has no private key, only the token.
 */
export async function importIntoToken(uri: string, ca: CaKeyPair & { readonly privateKey: KeyObject }): Promise<CaKeyPair> {
  const ref = parsePkcs11Uri(uri);
  const token = await Token.open(ref);
  const { lib, module } = token;
  const jwk = ca.privateKey.export({ format: "jwk" });
  const b = (v: string | undefined) => Buffer.from(v ?? "", "base64url");
  const common = [
    { type: lib.CKA_CLASS, value: lib.CKO_PRIVATE_KEY },
    { type: lib.CKA_TOKEN, value: true },
    { type: lib.CKA_PRIVATE, value: true },
    { type: lib.CKA_SENSITIVE, value: true },
    { type: lib.CKA_EXTRACTABLE, value: false },
    { type: lib.CKA_SIGN, value: true },
    { type: lib.CKA_LABEL, value: ref.object! },
  ];
  const template = jwk.kty === "EC"
    ? [...common, { type: lib.CKA_KEY_TYPE, value: lib.CKK_EC }, { type: lib.CKA_EC_PARAMS, value: Buffer.from(objectIdentifier(CURVE_OIDS[jwk.crv!]!)) }, { type: lib.CKA_VALUE, value: b(jwk.d) }]
    : [
        ...common,
        { type: lib.CKA_KEY_TYPE, value: lib.CKK_RSA },
        { type: lib.CKA_MODULUS, value: b(jwk.n) },
        { type: lib.CKA_PUBLIC_EXPONENT, value: b(jwk.e) },
        { type: lib.CKA_PRIVATE_EXPONENT, value: b(jwk.d) },
        { type: lib.CKA_PRIME_1, value: b(jwk.p) },
        { type: lib.CKA_PRIME_2, value: b(jwk.q) },
        { type: lib.CKA_EXPONENT_1, value: b(jwk.dp) },
        { type: lib.CKA_EXPONENT_2, value: b(jwk.dq) },
        { type: lib.CKA_COEFFICIENT, value: b(jwk.qi) },
      ];
  await token.withSession("importing the key", (session) => module.C_CreateObject(session, template));
  return loadTokenCa(ca.certPem, uri, { intermediates: true });
}
