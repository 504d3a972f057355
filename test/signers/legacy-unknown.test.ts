// Rules of the legacy-unknown signer: anything goes as long as the usages are known.
import { describe, it } from "vitest";
import { createLegacyUnknownSigner } from "../../signers/legacy-unknown.js";
import { expectVerdict, type Verdict, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";

const signer = createLegacyUnknownSigner({ ca: (await testCa(SIGNERS_CA)).ca });

const cases: Verdict[] = [
  ["accepts system:masters, any SAN and serving plus client usages", { cn: "x", o: ["system:masters"], dns: ["x"], uri: ["urn:x"], usages: ["server auth", "client auth", "code signing"] }, true],
  ["accepts an empty subject", { dns: ["only-a-san.example"], usages: ["digital signature"] }, true],
  ["refuses a usage the seed does not know", { cn: "x", usages: ["digital signature", "world domination"] }, /usage "world domination" is not a known usage/],
];

describe("legacy-unknown signer", () => {
  it.each(cases)("%s", (_, request, expected) => expectVerdict(signer, request, expected));
});
