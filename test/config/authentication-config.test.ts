// AuthenticationConfiguration loading: a valid file in each version, and one bad-input case per rule with its field and message.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateCa } from "../../src/pki/ca.js";
import { parseAuthenticationConfig, MAX_JWT_AUTHENTICATORS } from "../../src/config/authentication-config.js";
import { PlatformError } from "../../src/errors.js";

type Doc = Record<string, any>;
const jwt = (over: Doc = {}): Doc => ({
  issuer: { url: "https://issuer.example.com", audiences: ["platform"] },
  claimMappings: { username: { claim: "sub", prefix: "oidc:" } },
  ...over,
});
const config = (over: Doc = {}): Doc => ({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthenticationConfiguration", jwt: [jwt()], ...over });
const parse = (doc: Doc) => parseAuthenticationConfig(JSON.stringify(doc), "auth.yaml");

function invalid(doc: Doc): PlatformError {
  try {
    parse(doc);
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).code).toBe("CONFIG_INVALID");
    return err as PlatformError;
  }
  throw new Error("expected the configuration to be refused");
}

const withIssuer = (issuer: Doc) => config({ jwt: [jwt({ issuer: { ...jwt().issuer, ...issuer } })] });
const withMappings = (m: Doc, more: Doc = {}) => config({ jwt: [jwt({ claimMappings: { username: { claim: "sub", prefix: "" }, ...m }, ...more })] });

/** [rule, document, field of the first problem, message fragment]. */
const BAD: [string, Doc, string, RegExp][] = [
  ["wrong kind", config({ kind: "AuthorizationConfiguration" }), "kind", /"AuthenticationConfiguration"/],
  ["wrong version", config({ apiVersion: "apiserver.config.platform.io/v2" }), "apiVersion", /one of/],
  ["unknown top-level field", config({ jwts: [] }), "jwts", /unknown field `jwts`; did you mean `jwt`\?|known fields/],
  ["unknown issuer field", withIssuer({ audience: "x" }), "jwt[0].issuer.audience", /unknown field/],
  ["too many authenticators", config({ jwt: Array.from({ length: MAX_JWT_AUTHENTICATORS + 1 }, (_, i) => jwt({ issuer: { url: `https://i${i}.example.com`, audiences: ["a"] } })) }), "jwt", /at most 64 authenticators, got 65/],
  ["issuer url missing", withIssuer({ url: undefined }), "jwt[0].issuer.url", /to be an https:\/\/ URL, got nothing/],
  ["issuer url not https", withIssuer({ url: "http://issuer.example.com" }), "jwt[0].issuer.url", /an https:\/\/ URL/],
  ["issuer url with a query", withIssuer({ url: "https://issuer.example.com/?a=b" }), "jwt[0].issuer.url", /without a query/],
  ["issuer url with a fragment", withIssuer({ url: "https://issuer.example.com/#x" }), "jwt[0].issuer.url", /without a fragment/],
  ["issuer url with user info", withIssuer({ url: "https://u:p@issuer.example.com" }), "jwt[0].issuer.url", /without user information/],
  ["issuer url not a URL", withIssuer({ url: "issuer" }), "jwt[0].issuer.url", /a URL/],
  ["discoveryURL equal to url", withIssuer({ discoveryURL: "https://issuer.example.com/" }), "jwt[0].issuer.discoveryURL", /to differ from `issuer.url`/],
  ["discoveryURL not https", withIssuer({ discoveryURL: "http://d.example.com/.well-known/openid-configuration" }), "jwt[0].issuer.discoveryURL", /https/],
  ["duplicate issuer url", config({ jwt: [jwt(), jwt()] }), "jwt[1].issuer.url", /no other authenticator uses \(jwt\[0\] has it\)/],
  [
    "duplicate discoveryURL",
    config({ jwt: [jwt({ issuer: { url: "https://a.example.com", discoveryURL: "https://d.example.com/x", audiences: ["a"] } }), jwt({ issuer: { url: "https://b.example.com", discoveryURL: "https://d.example.com/x", audiences: ["a"] } })] }),
    "jwt[1].issuer.discoveryURL",
    /no other authenticator uses/,
  ],
  ["certificateAuthority not PEM", withIssuer({ certificateAuthority: "/etc/ca.pem" }), "jwt[0].issuer.certificateAuthority", /PEM CA certificates/],
  ["certificateAuthority garbled", withIssuer({ certificateAuthority: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" }), "jwt[0].issuer.certificateAuthority", /PEM certificates that parse/],
  ["audiences missing", withIssuer({ audiences: [] }), "jwt[0].issuer.audiences", /at least one audience/],
  ["audience empty", withIssuer({ audiences: [""] }), "jwt[0].issuer.audiences[0]", /non-empty audience/],
  ["audience duplicate", withIssuer({ audiences: ["a", "a"], audienceMatchPolicy: "MatchAny" }), "jwt[0].issuer.audiences[1]", /duplicate/],
  ["several audiences without MatchAny", withIssuer({ audiences: ["a", "b"] }), "jwt[0].issuer.audienceMatchPolicy", /MatchAny when several audiences/],
  ["unknown audienceMatchPolicy", withIssuer({ audienceMatchPolicy: "MatchAll" }), "jwt[0].issuer.audienceMatchPolicy", /one of MatchAny/],
  ["unknown egressSelectorType", withIssuer({ egressSelectorType: "etcd" }), "jwt[0].issuer.egressSelectorType", /one of controlplane, cluster/],
  ["claim rule with claim and expression", config({ jwt: [jwt({ claimValidationRules: [{ claim: "hd", expression: "true" }] })] }), "jwt[0].claimValidationRules[0].expression", /mutually exclusive/],
  ["claim rule with neither", config({ jwt: [jwt({ claimValidationRules: [{ message: "x" }] })] }), "jwt[0].claimValidationRules[0].claim", /or `expression` to be set/],
  ["claim rule claim with message", config({ jwt: [jwt({ claimValidationRules: [{ claim: "hd", message: "x" }] })] }), "jwt[0].claimValidationRules[0].message", /only with `expression`/],
  ["claim rule expression with requiredValue", config({ jwt: [jwt({ claimValidationRules: [{ expression: "true", requiredValue: "x" }] })] }), "jwt[0].claimValidationRules[0].requiredValue", /only with `claim`/],
  ["claim rule duplicate claim", config({ jwt: [jwt({ claimValidationRules: [{ claim: "hd" }, { claim: "hd", requiredValue: "x" }] })] }), "jwt[0].claimValidationRules[1].claim", /duplicate/],
  ["claim rule not boolean", config({ jwt: [jwt({ claimValidationRules: [{ expression: "claims.sub + 'x'" }] })] }), "jwt[0].claimValidationRules[0].expression", /must produce a bool, it produces string/],
  ["claim rule syntax error", config({ jwt: [jwt({ claimValidationRules: [{ expression: "claims.sub ==" }] })] }), "jwt[0].claimValidationRules[0].expression", /syntax error: .* at line 1, column 14/],
  ["username missing", withMappings({ username: {} }), "jwt[0].claimMappings.username.claim", /or `expression` to be set/],
  ["username claim and expression", withMappings({ username: { claim: "sub", prefix: "", expression: "claims.sub" } }), "jwt[0].claimMappings.username.expression", /mutually exclusive/],
  ["username claim without prefix", withMappings({ username: { claim: "sub" } }), "jwt[0].claimMappings.username.prefix", /to be set when `claim` is set/],
  ["username expression with prefix", withMappings({ username: { expression: "claims.sub", prefix: "x:" } }), "jwt[0].claimMappings.username.prefix", /not to be set with `expression`/],
  ["username expression not a string", withMappings({ username: { expression: "claims.sub == 'a'" } }), "jwt[0].claimMappings.username.expression", /must produce a string/],
  ["username expression with email, no email_verified", withMappings({ username: { expression: "claims.email" } }), "jwt[0].claimMappings.username.expression", /claims.email_verified/],
  ["username expression unknown variable", withMappings({ username: { expression: "user.username" } }), "jwt[0].claimMappings.username.expression", /type error/],
  ["groups claim without prefix", withMappings({ groups: { claim: "groups" } }), "jwt[0].claimMappings.groups.prefix", /may be ""/],
  ["groups claim and expression", withMappings({ groups: { claim: "groups", prefix: "", expression: "claims.groups" } }), "jwt[0].claimMappings.groups.expression", /mutually exclusive/],
  ["groups expression with prefix", withMappings({ groups: { expression: "claims.groups", prefix: "g:" } }), "jwt[0].claimMappings.groups.prefix", /not to be set with `expression`/],
  ["groups expression of the wrong type", withMappings({ groups: { expression: "1 == 1" } }), "jwt[0].claimMappings.groups.expression", /string or list of strings/],
  ["groups prefix alone", withMappings({ groups: { prefix: "g:" } }), "jwt[0].claimMappings.groups.prefix", /only with `claim`/],
  ["uid claim and expression", withMappings({ uid: { claim: "sub", expression: "claims.sub" } }), "jwt[0].claimMappings.uid.expression", /mutually exclusive/],
  ["uid with prefix", withMappings({ uid: { claim: "sub", prefix: "x" } }), "jwt[0].claimMappings.uid.prefix", /unknown field/],
  ["extra key missing", withMappings({ extra: [{ valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[0].key", /domain-prefixed path/],
  ["extra key without domain", withMappings({ extra: [{ key: "team", valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[0].key", /domain-prefixed path such as/],
  ["extra key upper case", withMappings({ extra: [{ key: "example.org/Team", valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[0].key", /lower case/],
  ["extra key bad domain", withMappings({ extra: [{ key: "ex_ample.org/team", valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[0].key", /DNS subdomain/],
  ["extra key reserved domain", withMappings({ extra: [{ key: "authentication.platform.io/x", valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[0].key", /reserved domain platform.io/],
  ["extra key duplicate", withMappings({ extra: [{ key: "example.org/a", valueExpression: "claims.sub" }, { key: "example.org/a", valueExpression: "claims.sub" }] }), "jwt[0].claimMappings.extra[1].key", /duplicate/],
  ["extra valueExpression missing", withMappings({ extra: [{ key: "example.org/a" }] }), "jwt[0].claimMappings.extra[0].valueExpression", /to be a CEL expression/],
  ["extra valueExpression bad type", withMappings({ extra: [{ key: "example.org/a", valueExpression: "1 > 0" }] }), "jwt[0].claimMappings.extra[0].valueExpression", /string or list of strings/],
  ["user rule missing expression", withMappings({}, { userValidationRules: [{ message: "m" }] }), "jwt[0].userValidationRules[0].expression", /CEL expression over `user`/],
  ["user rule over claims", withMappings({}, { userValidationRules: [{ expression: "claims.sub == 'a'" }] }), "jwt[0].userValidationRules[0].expression", /type error/],
  ["user rule not boolean", withMappings({}, { userValidationRules: [{ expression: "user.username" }] }), "jwt[0].userValidationRules[0].expression", /must produce a bool/],
  ["anonymous without enabled", config({ anonymous: { conditions: [] } }), "anonymous.enabled", /true or false/],
  ["anonymous conditions while disabled", config({ anonymous: { enabled: false, conditions: [{ path: "/livez" }] } }), "anonymous.conditions", /empty when anonymous access is disabled/],
  ["anonymous condition without path", config({ anonymous: { enabled: true, conditions: [{}] } }), "anonymous.conditions[0].path", /request path/],
  ["anonymous condition duplicate path", config({ anonymous: { enabled: true, conditions: [{ path: "/livez" }, { path: "/livez" }] } }), "anonymous.conditions[1].path", /duplicate/],
  ["anonymous unknown field", config({ anonymous: { enabled: true, condition: [] } }), "anonymous.condition", /unknown field `anonymous.condition`; known fields: enabled, conditions/],
];

describe("parseAuthenticationConfig", () => {
  it.each(BAD)("refuses %s, naming the field", (_rule, doc, field, message) => {
    const err = invalid(doc);
    const cause = err.causes.find((c) => c.field === field);
    expect(cause, `${err.message}`).toBeDefined();
    expect(cause!.message).toMatch(message);
    expect(err.message).toContain("auth.yaml");
  });

  it("refuses `anonymous` when the --anonymous-auth flag is set too", () => {
    expect(() => parseAuthenticationConfig(JSON.stringify(config({ anonymous: { enabled: true } })), "auth.yaml", { anonymousFlagSet: true })).toThrow(/not to be set when the --anonymous-auth flag is given/);
  });

  it("refuses an issuer url that is the ServiceAccount token issuer", () => {
    const doc = withIssuer({ url: "https://platform-ca.platform-system.svc" });
    expect(() => parseAuthenticationConfig(JSON.stringify(doc), "auth.yaml", { serviceAccountIssuer: "https://platform-ca.platform-system.svc" })).toThrow(
      /expected `jwt\[0\]\.issuer\.url` a URL other than the issuer of the server's ServiceAccount tokens/,
    );
  });

  it("reports every problem of a file at once", () => {
    const err = invalid(config({ jwt: [jwt({ issuer: { url: "http://x", audiences: [] } })] }));
    expect(err.causes.map((c) => c.field)).toEqual(["jwt[0].issuer.url", "jwt[0].issuer.audiences"]);
  });

  it.each(["apiserver.config.platform.io/v1", "apiserver.platform.io/v1beta1", "apiserver.platform.io/v1alpha1", "apiserver.config.platform.io/v1beta1"])("loads %s with every kind of mapping", (apiVersion) => {
    const loaded = parse(
      config({
        apiVersion,
        jwt: [
          jwt({
            issuer: { url: "https://issuer.example.com/tenant", discoveryURL: "https://internal.example.com/.well-known/openid-configuration", audiences: ["a", "b"], audienceMatchPolicy: "MatchAny", egressSelectorType: "controlplane" },
            claimValidationRules: [{ claim: "hd", requiredValue: "example.com" }, { expression: "claims.exp - claims.iat <= 86400", message: "at most a day" }],
            claimMappings: {
              username: { expression: "claims.email_verified ? claims.email : ''" },
              groups: { claim: "groups", prefix: "" },
              uid: { claim: "sub" },
              extra: [{ key: "example.org/tenant", valueExpression: "claims.?tenant.orValue('')" }],
            },
            userValidationRules: [{ expression: "!user.username.startsWith('system:')", message: "no system names" }],
          }),
          jwt({ issuer: { url: "https://other.example.com", audiences: ["a"] }, claimMappings: { username: { claim: "email", prefix: "" }, groups: { expression: "claims.roles" } } }),
        ],
        anonymous: { enabled: true, conditions: [{ path: "/livez" }, { path: "/readyz" }] },
      }),
    );
    expect(loaded.jwt).toHaveLength(2);
    expect(loaded.jwt[0]!.issuer.audiences).toEqual(["a", "b"]);
    expect(loaded.jwt[0]!.claimValidationRules).toHaveLength(2);
    expect(loaded.jwt[1]!.claimMappings.username).toEqual({ claim: "email", prefix: "" });
    expect(loaded.anonymous).toEqual({ enabled: true, conditions: ["/livez", "/readyz"] });
  });
});

describe("docs/authentication.md", () => {
  it("its complete example loads once its CA placeholder is a real certificate", async () => {
    const docs = readFileSync(new URL("../../docs/authentication.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: apiserver[\s\S]*?)```/.exec(docs)![1]!;
    const { certPem } = await generateCa({ commonName: "idp CA", keyType: "p256", lifetimeSeconds: 86_400, now: new Date() });
    const indented = certPem.trim().split("\n").map((l) => `        ${l}`).join("\n");
    const loaded = parseAuthenticationConfig(example.replace(/ {8}-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/, indented), "authentication.md");
    expect(loaded.jwt[0]!.issuer.url).toBe("https://idp.example.com");
    expect(loaded.jwt[0]!.claimMappings.groups).toEqual({ claim: "groups", prefix: "idp:" });
  });
});
