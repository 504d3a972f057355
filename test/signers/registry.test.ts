// The explicit signer registry: lookups by name, duplicates and unknown names refused with typed errors.
import { describe, expect, it } from "vitest";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { SignerRegistry } from "../../signers/registry.js";
import { SIGNERS, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";

const signers = createBuiltinSigners({ ca: (await testCa(SIGNERS_CA)).ca });

describe("signer registry", () => {
  it("finds registered signers by name and lists them in registration order", () => {
    const registry = new SignerRegistry(signers);
    expect(registry.get(SIGNERS.nodeagentServing)).toBe(signers[2]);
    expect(registry.has(SIGNERS.legacyUnknown)).toBe(true);
    expect(registry.names()).toEqual([SIGNERS.apiserverClient, SIGNERS.nodeagentClient, SIGNERS.nodeagentServing, SIGNERS.legacyUnknown]);
    expect(registry.list()).toEqual(signers);
    expect(registry.size).toBe(4);
  });

  it("refuses a second signer under the same name", () => {
    const registry = new SignerRegistry([signers[0]!]);
    expect(() => registry.register(signers[0]!)).toThrow(expect.objectContaining({ code: "SIGNER_DUPLICATE", message: `a signer named ${SIGNERS.apiserverClient} is already registered` }));
    expect(registry.size).toBe(1);
  });

  it.each([
    ["an empty registry", [], "none"],
    ["a registry with signers", signers.slice(0, 2), `${SIGNERS.apiserverClient}, ${SIGNERS.nodeagentClient}`],
  ])("names what is registered when a lookup fails in %s", (_, contents, listed) => {
    const registry = new SignerRegistry(contents);
    expect(registry.has("example.com/nope")).toBe(false);
    expect(() => registry.get("example.com/nope")).toThrow(
      expect.objectContaining({ code: "SIGNER_UNKNOWN", message: `no signer is registered for example.com/nope; registered: ${listed}` }),
    );
  });
});
