// CEL of configuration files: compile-time errors with positions, extension functions, optionals, and the cost/time limit.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileCel, DEFAULT_CEL_LIMITS } from "../../src/cel/index.js";
import { PlatformError } from "../../src/errors.js";

const claims = { sub: "alice", email: "a@example.com", email_verified: true, groups: ["Dev", "ops", "dev"], n: 3 };
const run = (expr: string, vars: Record<string, unknown> = { claims }) => compileCel(expr, "claims", "string or list of strings").evaluate(vars);
const bool = (expr: string, vars: Record<string, unknown> = { claims }) => compileCel(expr, "claims", "bool").evaluate(vars);

function compileError(expr: string, set: "claims" | "user" = "claims", result: "bool" | "string" = "bool"): PlatformError {
  try {
    compileCel(expr, set, result);
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).code).toBe("CEL_INVALID");
    return err as PlatformError;
  }
  throw new Error(`expected ${expr} not to compile`);
}

describe("compileCel", () => {
  it("names the position of a syntax error, a type error and an unknown variable", () => {
    expect(compileError("claims.sub ==").message).toMatch(/^syntax error: .* at line 1, column 14$/);
    expect(compileError("claims.sub == \n  1 +").message).toMatch(/syntax error.*line 2, column 6/);
    expect(compileError("user.usrname == 'x'", "user").message).toMatch(/type error: .*usrname.* at line 1, column/);
    expect(compileError("request.path == 'x'").message).toMatch(/type error: .*request/);
    expect(compileError("").message).toBe("an expression is required");
  });

  it("refuses an expression that cannot produce the wanted type", () => {
    expect(compileError("'a' + 'b'").message).toBe("the expression must produce a bool, it produces string");
    expect(compileError("1 == 1", "claims", "string").message).toMatch(/must produce a string, it produces bool/);
  });

  it("checks the result type of a dynamic expression when it is evaluated", () => {
    const p = compileCel("claims.n", "claims", "string");
    expect(() => p.evaluate({ claims })).toThrow(expect.objectContaining({ code: "CEL_EVALUATION", message: expect.stringMatching(/must produce a string/) }));
  });

  it("provides the string, list, set and optional functions upstream's expressions use", () => {
    expect(run("claims.email.split('@')[0].upperAscii()")).toBe("A");
    expect(run("claims.sub.replace('li', 'LI')")).toBe("aLIce");
    expect(run("claims.groups.map(g, g.lowerAscii()).distinct()")).toEqual(["dev", "ops"]);
    expect(run("claims.groups.join(',')")).toBe("Dev,ops,dev");
    expect(run("'  x '.trim() + claims.sub.charAt(0) + string(claims.sub.indexOf('c'))")).toBe("xa3");
    expect(run("claims.groups.filter(g, g.startsWith('d'))")).toEqual(["dev"]);
    expect(bool("sets.contains(claims.groups, ['ops']) && sets.intersects(['x', 'dev'], claims.groups)")).toBe(true);
    expect(bool("sets.equivalent(claims.groups, ['ops', 'Dev', 'dev', 'ops'])")).toBe(true);
    expect(run("claims.?nickname.orValue(claims.sub)")).toBe("alice");
    expect(bool("has(claims.email_verified) && claims.email_verified")).toBe(true);
    expect(run("[['a'], ['b', 'c']].flatten().reverse().slice(0, 2)")).toEqual(["c", "b"]);
    expect(run("strings.quote(claims.sub)")).toBe('"alice"');
  });

  it("records which claims an expression names, by field or by index", () => {
    const p = compileCel("claims.email + claims['hd'] + claims.?x.orValue('') + (has(claims.y) ? '' : '')", "claims", "string");
    expect([...p.fieldsOf("claims")].sort()).toEqual(["email", "hd", "x", "y"]);
  });

  it("types the user variable: username, uid, groups, extra", () => {
    const p = compileCel("!user.username.startsWith('system:') && user.groups.all(g, g != 'x') && size(user.extra) >= 0 && user.uid != 'u'", "user", "bool");
    expect(p.evaluate({ user: { username: "a", uid: "", groups: ["y"], extra: {} } })).toBe(true);
    expect(p.evaluate({ user: { username: "system:x", uid: "", groups: [], extra: {} } })).toBe(false);
  });

  it("stops a pathological expression at its cost limit, quickly", () => {
    const costOnly = { ...DEFAULT_CEL_LIMITS, timeMs: 60_000 };
    const big = { claims: { ...claims, groups: Array.from({ length: 2000 }, (_, i) => `g${i}`) } };
    const nested = compileCel("claims.groups.map(a, claims.groups.map(b, claims.groups.exists(c, a + b == c))).size() > 0", "claims", "bool", costOnly);
    const started = performance.now();
    expect(() => nested.evaluate(big)).toThrow(expect.objectContaining({ code: "CEL_EVALUATION", message: "the expression exceeded its cost limit" }));
    expect(performance.now() - started).toBeLessThan(2000);
    // Doubling a string through nested bindings is priced by its size.
    const doubling = Array.from({ length: 20 }, (_, i) => `cel.bind(s${i + 1}, s${i} + s${i}, `).join("");
    const grow = compileCel(`cel.bind(s0, claims.email, ${doubling}size(s20) > 0${")".repeat(21)}`, "claims", "bool", costOnly);
    expect(() => grow.evaluate({ claims })).toThrow(/cost limit/);
  });

  it("stops an evaluation at its time limit", () => {
    const slow = compileCel("claims.groups.map(a, claims.groups.map(b, a + b)).size() > 0", "claims", "bool", { cost: Number.MAX_SAFE_INTEGER, timeMs: 5 });
    const big = { claims: { groups: Array.from({ length: 3000 }, (_, i) => `g${i}`) } };
    expect(() => slow.evaluate(big)).toThrow(/time limit/);
  });

  it("runs a catastrophic regex in linear time and refuses patterns the linear engine cannot run", () => {
    const redos = compileCel("claims.sub.matches('^(a+)+$')", "claims", "bool");
    const started = performance.now();
    expect(redos.evaluate({ claims: { sub: `${"a".repeat(40_000)}!` } })).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(compileError("claims.sub.matches('(a)\\\\1')").message).toMatch(/pattern of matches\(\) is not supported/);
    expect(compileError("claims.sub.matches(claims.re)").message).toMatch(/must be a string literal at line 1, column/);
  });

  it("fuzz: compiling any text either works or throws CEL_INVALID", () => {
    const pieces = fc.constantFrom("claims", ".", "sub", "(", ")", "[", "]", "'", '"', "+", "==", "?", ":", "map", "x", ",", "1", "has", "!", "&&", "?.", "\\", "matches", " ", "{", "}", "@", "`", "cel.bind");
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(pieces, { maxLength: 30 }).map((a) => a.join(""))), (text) => {
        try {
          compileCel(text, "claims", "bool");
        } catch (err) {
          expect(err).toBeInstanceOf(PlatformError);
          expect((err as PlatformError).code).toBe("CEL_INVALID");
        }
      }),
      { numRuns: 2000 },
    );
  });
});
