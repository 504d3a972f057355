// The CEL environments of configuration expressions: declared variables, and the extension functions upstream's expressions use.
import { setFlagsFromString } from "node:v8";
import { Environment } from "@marcbachmann/cel-js";

// `matches` builds a backtracking RegExp; this V8 switch moves a regex that backtracks excessively to the linear-time
// engine (RE2's semantics), so `claims.x.matches("(a+)+$")` cannot stall the server. Patterns the linear engine
// cannot run (backreferences, lookaround) are refused at compile time instead (see `linearRegexProblem`).
setFlagsFromString("--enable-experimental-regexp-engine-on-excessive-backtracks");
setFlagsFromString("--enable-experimental-regexp-engine");

/** The variables an expression may name, per kind of configuration expression. */
export const CEL_VARIABLE_SETS = {
  /** JWT claim validation and claim mappings: the token's claims (through `celValue`: whole numbers are ints). */
  claims: ["claims"],
  /** JWT user validation rules: the mapped user. */
  user: ["user"],
  /** Authorization webhook matchConditions: the SubjectAccessReview v1 spec, empty fields left out as upstream sends it. */
  subjectAccessReview: ["request"],
  /** Admission webhook matchConditions: the object, the old object (null when there is none) and the AdmissionRequest. */
  admission: ["object", "oldObject", "request"],
} as const;
export type CelVariableSet = keyof typeof CEL_VARIABLE_SETS;

/** The `sets` namespace (as cel-go's sets extension): `sets.contains`, `sets.equivalent`, `sets.intersects`. */
class SetsNamespace {}
/** The `strings` namespace: `strings.quote`. */
class StringsNamespace {}

const keyOf = (v: unknown): unknown => (typeof v === "object" && v !== null ? JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x)) : v);
const asSet = (list: readonly unknown[]): Set<unknown> => new Set(list.map(keyOf));

function extended(): Environment {
  const env = new Environment({
    enableOptionalTypes: true,
    // A configuration expression is short; these bound parse and check work on a hostile file.
    limits: { maxAstNodes: 2000, maxDepth: 50, maxListElements: 256, maxMapEntries: 256, maxCallArguments: 16 },
  });
  env
    .registerType("SetsNamespace", SetsNamespace)
    .registerConstant("sets", "SetsNamespace", new SetsNamespace())
    .registerFunction("SetsNamespace.contains(list<A>, list<A>): bool", (_s: unknown, a: unknown[], b: unknown[]) => {
      const have = asSet(a);
      return b.every((x) => have.has(keyOf(x)));
    })
    .registerFunction("SetsNamespace.equivalent(list<A>, list<A>): bool", (_s: unknown, a: unknown[], b: unknown[]) => {
      const x = asSet(a);
      const y = asSet(b);
      return x.size === y.size && [...x].every((v) => y.has(v));
    })
    .registerFunction("SetsNamespace.intersects(list<A>, list<A>): bool", (_s: unknown, a: unknown[], b: unknown[]) => {
      const have = asSet(a);
      return b.some((x) => have.has(keyOf(x)));
    })
    .registerType("StringsNamespace", StringsNamespace)
    .registerConstant("strings", "StringsNamespace", new StringsNamespace())
    .registerFunction("StringsNamespace.quote(string): string", (_s: unknown, v: string) => JSON.stringify(v))
    // Strings beyond the library's built-ins (lowerAscii, upperAscii, trim, split, join, indexOf, substring, …).
    .registerFunction("string.replace(string, string): string", (s: string, from: string, to: string) => s.replaceAll(from, to))
    .registerFunction("string.replace(string, string, int): string", (s: string, from: string, to: string, n: bigint) => replaceN(s, from, to, Number(n)))
    .registerFunction("string.charAt(int): string", (s: string, i: bigint) => {
      if (i < 0n || i > BigInt(s.length)) throw new RangeError(`index out of range: ${i}`);
      return s.charAt(Number(i));
    })
    .registerFunction("string.reverse(): string", (s: string) => [...s].reverse().join(""))
    // Lists (cel-go's lists extension and upstream's list library, the cheap ones).
    .registerFunction("list<A>.distinct(): list<A>", (l: unknown[]) => {
      const seen = new Set<unknown>();
      return l.filter((x) => !seen.has(keyOf(x)) && seen.add(keyOf(x)));
    })
    .registerFunction("list<A>.reverse(): list<A>", (l: unknown[]) => [...l].reverse())
    .registerFunction("list<A>.slice(int, int): list<A>", (l: unknown[], a: bigint, b: bigint) => {
      if (a < 0n || b < a || b > BigInt(l.length)) throw new RangeError(`slice [${a}, ${b}) out of range for a list of ${l.length}`);
      return l.slice(Number(a), Number(b));
    })
    .registerFunction("list<list<A>>.flatten(): list<A>", (l: unknown[][]) => l.flat())
    .registerFunction("list<A>.indexOf(A): int", (l: unknown[], v: unknown) => BigInt(l.findIndex((x) => keyOf(x) === keyOf(v))))
    .registerFunction("list<string>.isSorted(): bool", (l: string[]) => l.every((x, i) => i === 0 || l[i - 1]! <= x));
  return env;
}

function replaceN(s: string, from: string, to: string, n: number): string {
  if (n < 0) return s.replaceAll(from, to);
  let out = s;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const found = out.indexOf(from, at);
    if (found < 0) break;
    out = out.slice(0, found) + to + out.slice(found + from.length);
    at = found + to.length;
  }
  return out;
}

const USER_INFO = { username: "string", uid: "string", groups: "list<string>", extra: "map<string, list<string>>" };
const GROUP_VERSION = { group: "string", version: "string" };

/** Declared as upstream types them, so a misspelt field or a wrong comparison fails at load, not per request. */
const SUBJECT_ACCESS_REVIEW_SPEC = {
  user: "string",
  groups: "list<string>",
  uid: "string",
  extra: "map<string, list<string>>",
  resourceAttributes: { namespace: "string", verb: "string", group: "string", version: "string", resource: "string", subresource: "string", name: "string" },
  nonResourceAttributes: { path: "string", verb: "string" },
};
const ADMISSION_REQUEST = {
  uid: "string",
  kind: { ...GROUP_VERSION, kind: "string" },
  resource: { ...GROUP_VERSION, resource: "string" },
  subResource: "string",
  requestKind: { ...GROUP_VERSION, kind: "string" },
  requestResource: { ...GROUP_VERSION, resource: "string" },
  requestSubResource: "string",
  name: "string",
  namespace: "string",
  operation: "string",
  userInfo: USER_INFO,
  dryRun: "bool",
  options: "dyn",
};

/**
 * Variables upstream offers that this server does not, with why: naming one is refused at load with this message
 * rather than the library's bare "Unknown variable". (`authorizer` would need a synchronous RBAC check per
 * evaluation; the RBAC authorizer answers asynchronously, so it is left out rather than made to block.)
 */
export const UNAVAILABLE_VARIABLES: Partial<Record<CelVariableSet, Readonly<Record<string, string>>>> = {
  admission: {
    authorizer: "the `authorizer` variable is not offered by this server (use rules, selectors or an authorization webhook instead)",
    namespaceObject: "the `namespaceObject` variable is not offered by this server (use namespaceSelector instead)",
  },
};

const base = extended();
const environments = new Map<CelVariableSet, Environment>();

/** The environment of one variable set, built once (building one costs far more than compiling an expression). */
export function celEnvironment(set: CelVariableSet): Environment {
  let env = environments.get(set);
  if (!env) {
    env = base.clone();
    if (set === "claims") env.registerVariable("claims", "map<string, dyn>");
    else if (set === "user") env.registerVariable({ name: "user", schema: USER_INFO });
    else if (set === "subjectAccessReview") env.registerVariable({ name: "request", schema: SUBJECT_ACCESS_REVIEW_SPEC });
    else env.registerVariable("object", "dyn").registerVariable("oldObject", "dyn").registerVariable({ name: "request", schema: ADMISSION_REQUEST });
    environments.set(set, env);
  }
  return env;
}

/** Why `pattern` cannot run on the linear-time regex engine (a backreference or lookaround), or undefined. */
export function linearRegexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern, "l" as string);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
