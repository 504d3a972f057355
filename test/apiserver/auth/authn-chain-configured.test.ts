// The authentication configuration file in the chain: bearer order (token file, ServiceAccount, JWT), anonymous by path, who authenticated.
import { describe, expect, it } from "vitest";
import { AuthenticatorChain } from "../../../src/apiserver/auth/authn-chain.js";
import type { ConfiguredAuthentication } from "../../../src/apiserver/auth/authn-config-reload.js";
import { TokenFileAuthenticator, parseCredentialFile } from "../../../src/apiserver/auth/authn-token-file.js";

/** A stand-in for the file's JWT authenticators: knows one token, and records what it was asked. */
function configured(anonymous?: ConfiguredAuthentication["anonymous"]): { asked: string[]; get: () => ConfiguredAuthentication } {
  const asked: string[] = [];
  const jwt = {
    async authenticateToken(token: string) {
      asked.push(token);
      return token === "jwt-token" ? { user: { username: "oidc:alice", groups: ["oidc:dev"] }, issuer: "https://issuer.example.com" } : undefined;
    },
  };
  return { asked, get: () => ({ jwt, ...(anonymous && { anonymous }) }) as unknown as ConfiguredAuthentication };
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe("AuthenticatorChain with an authentication configuration", () => {
  it("tries the token file before the JWT issuers, and records which authenticator accepted the user", async () => {
    const c = configured();
    const tokenFile = new TokenFileAuthenticator(parseCredentialFile("jwt-token,file-user,1\n"));
    const withFile = new AuthenticatorChain({ tokenFile, configured: c.get });
    const fromFile = await withFile.authenticate(bearer("jwt-token"));
    expect(fromFile).toMatchObject({ user: { username: "file-user" } });
    expect(c.asked).toEqual([]);
    expect(fromFile).toMatchObject({ authenticator: { authenticator: "token-file" } });

    const chain = new AuthenticatorChain({ configured: c.get });
    const fromJwt = await chain.authenticate(bearer("jwt-token"));
    expect(fromJwt).toEqual({ user: { username: "oidc:alice", groups: ["oidc:dev", "system:authenticated"] }, authenticator: { authenticator: "jwt", issuer: "https://issuer.example.com" } });
    expect(await chain.authenticate(bearer("other"))).toEqual({ error: "invalid bearer token" });
  });

  it("lets anonymous requests reach only the configured paths, whatever the anonymous option says", async () => {
    const limited = new AuthenticatorChain({ anonymous: false, configured: configured({ enabled: true, conditions: ["/livez"] }).get });
    expect(await limited.authenticate({ headers: {}, path: "/livez" })).toMatchObject({ user: { username: "system:anonymous" } });
    expect(await limited.authenticate({ headers: {}, path: "/api" })).toHaveProperty("error");
    const open = new AuthenticatorChain({ configured: configured({ enabled: true, conditions: [] }).get });
    const anon = await open.authenticate({ headers: {}, path: "/api" });
    expect(anon).toMatchObject({ user: { username: "system:anonymous" } });
    expect(anon).toMatchObject({ authenticator: { authenticator: "anonymous" } });
    const off = new AuthenticatorChain({ anonymous: true, configured: configured({ enabled: false, conditions: [] }).get });
    expect(await off.authenticate({ headers: {}, path: "/livez" })).toHaveProperty("error");
  });
});
