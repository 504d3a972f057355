import { describe, expect, it } from "vitest";
import { computeValidity, type ValidityRequest } from "../../src/pki/validity.js";

const NOW = new Date("2030-06-01T12:00:00Z");
const MIN = 60;
const HOUR = 3600;
const DAY = 86_400;
const at = (secondsFromNow: number) => new Date(NOW.getTime() + secondsFromNow * 1000);

function request(o: Partial<ValidityRequest> = {}): ValidityRequest {
  return { now: NOW, maxDurationSeconds: 365 * DAY, caNotBefore: at(-DAY), caNotAfter: at(10 * 365 * DAY), ...o };
}

describe("computeValidity", () => {
  it.each([
    ["uses the maximum when no lifetime is requested", {}, at(365 * DAY - 5 * MIN)],
    ["honours a request below the maximum", { expirationSeconds: 30 * DAY }, at(30 * DAY - 5 * MIN)],
    ["caps a request above the maximum", { expirationSeconds: 2 * 365 * DAY }, at(365 * DAY - 5 * MIN)],
    ["keeps the backdate as extra validity below 8 hours", { expirationSeconds: 10 * MIN }, at(10 * MIN)],
    ["keeps the backdate just below 8 hours", { expirationSeconds: 8 * HOUR - 1 }, at(8 * HOUR - 1)],
    ["takes the backdate off from 8 hours on", { expirationSeconds: 8 * HOUR }, at(8 * HOUR - 5 * MIN)],
    ["applies the short rule to a short maximum", { maxDurationSeconds: HOUR }, at(HOUR)],
    ["clamps notAfter to the CA's NotAfter", { expirationSeconds: 30 * DAY, caNotAfter: at(DAY) }, at(DAY)],
  ] as const)("%s", (_name, overrides, notAfter) => {
    const v = computeValidity(request(overrides));
    expect(v.notBefore).toEqual(at(-5 * MIN));
    expect(v.notAfter).toEqual(notAfter);
  });

  it("reports a long certificate's duration as exactly the requested lifetime", () => {
    const v = computeValidity(request({ expirationSeconds: 7 * DAY }));
    expect((v.notAfter.getTime() - v.notBefore.getTime()) / 1000).toBe(7 * DAY);
  });

  it("truncates times to whole seconds, as DER stores them", () => {
    const v = computeValidity(request({ now: new Date(NOW.getTime() + 750), expirationSeconds: HOUR }));
    expect(v.notBefore).toEqual(at(-5 * MIN));
    expect(v.notAfter).toEqual(at(HOUR));
  });

  it.each([
    ["after the CA's NotAfter", { caNotAfter: at(-1) }, "CA_EXPIRED", true],
    ["at the CA's NotAfter", { caNotAfter: NOW }, "CA_EXPIRED", true],
    ["before the CA's NotBefore", { caNotBefore: at(1) }, "CA_NOT_YET_VALID", true],
    ["with a request below 600 seconds", { expirationSeconds: 599 }, "LIFETIME_INVALID", false],
    ["with a fractional request", { expirationSeconds: 600.5 }, "LIFETIME_INVALID", false],
    ["with a maximum below 600 seconds", { maxDurationSeconds: 300 }, "LIFETIME_INVALID", false],
    ["with an invalid clock", { now: new Date(Number.NaN) }, "INVALID_OPTION", false],
  ] as const)("refuses to compute %s", (_name, overrides, code, retryable) => {
    expect(() => computeValidity(request(overrides))).toThrow(expect.objectContaining({ code, retryable }));
  });

  it("accepts the 600-second minimum and names the option in the one message shape otherwise", () => {
    expect(computeValidity(request({ expirationSeconds: 600 })).notAfter).toEqual(at(600));
    expect(() => computeValidity(request({ expirationSeconds: 300 }))).toThrow("expected `expirationSeconds` to be an integer ≥ 600, got 300");
  });
});
