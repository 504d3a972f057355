// Go's fmt for decoded JSON values: %v printing (map[k:v], [a b], <nil>) and a printf with the common verbs.

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** How a template action prints a value: absent or null prints `<no value>`, as text/template does. */
export function formatGo(value: unknown): string {
  if (value === undefined || value === null || typeof value === "symbol") return "<no value>";
  return goValue(value);
}

/** Go's %v of a value decoded from JSON. */
export function goValue(value: unknown): string {
  if (value === undefined || value === null || typeof value === "symbol") return "<nil>";
  if (typeof value === "string") return value;
  if (typeof value === "number") return goNumber(value);
  if (Array.isArray(value)) return `[${value.map(goValue).join(" ")}]`;
  if (isMap(value)) return `map[${Object.keys(value).sort().map((k) => `${k}:${goValue(value[k])}`).join(" ")}]`;
  return String(value);
}

/** Integers print whole; other numbers as Go's %v of a float64 (exponent form outside [1e-4, 1e21)). */
function goNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n);
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e21)) return n.toExponential().replace(/e([+-])(\d)$/, "e$10$2");
  return String(n);
}

const VERB_RE = /%([-+# 0]*)(\d+|\*)?(?:\.(\d+))?([a-zA-Z%])/g;

/** Go's Sprintf for %v %s %d %q %t %x %X %f %e %g and %%, with flags, width and precision. */
export function sprintf(format: string, args: readonly unknown[]): string {
  let next = 0;
  const out = format.replace(VERB_RE, (whole, flags: string, width: string | undefined, precision: string | undefined, verb: string) => {
    if (verb === "%") return "%";
    if (next >= args.length) return `%!${verb}(MISSING)`;
    const arg = args[next++];
    const prec = precision === undefined ? undefined : Number(precision);
    const text = formatVerb(verb, arg, prec, flags);
    const w = width === undefined || width === "*" ? 0 : Number(width);
    if (text.length >= w) return text;
    if (flags.includes("-")) return text.padEnd(w);
    if (flags.includes("0") && /[dfxXeg]/.test(verb)) {
      const sign = /^[-+]/.test(text) ? text[0]! : "";
      return sign + text.slice(sign.length).padStart(w - sign.length, "0");
    }
    return text.padStart(w);
  });
  return next < args.length ? `${out}%!(EXTRA ${args.slice(next).map(goValue).join(", ")})` : out;
}

function formatVerb(verb: string, arg: unknown, prec: number | undefined, flags: string): string {
  const bad = () => `%!${verb}(${typeName(arg)}=${goValue(arg)})`;
  switch (verb) {
    case "v":
      return goValue(arg);
    case "s":
      if (typeof arg === "number" || typeof arg === "boolean") return bad();
      return prec === undefined ? goValue(arg) : goValue(arg).slice(0, prec);
    case "q":
      return typeof arg === "string" ? JSON.stringify(arg) : bad();
    case "t":
      return typeof arg === "boolean" ? String(arg) : bad();
    case "d":
      return typeof arg === "number" && Number.isInteger(arg) ? (flags.includes("+") && arg >= 0 ? "+" : "") + String(arg) : bad();
    case "x":
    case "X": {
      const text = typeof arg === "number" && Number.isInteger(arg) ? arg.toString(16) : typeof arg === "string" ? Buffer.from(arg).toString("hex") : undefined;
      if (text === undefined) return bad();
      return verb === "X" ? text.toUpperCase() : text;
    }
    case "f":
    case "e":
    case "g": {
      if (typeof arg !== "number") return bad();
      if (verb === "f") return arg.toFixed(prec ?? 6);
      if (verb === "e") return arg.toExponential(prec ?? 6).replace(/e([+-])(\d)$/, "e$10$2");
      return prec === undefined ? goValue(arg) : String(Number(arg.toPrecision(prec)));
    }
    default:
      return `%!${verb}(${typeName(arg)}=${goValue(arg)})`;
  }
}

function typeName(v: unknown): string {
  if (typeof v === "string") return "string";
  if (typeof v === "number") return Number.isInteger(v) ? "int64" : "float64";
  if (typeof v === "boolean") return "bool";
  if (Array.isArray(v)) return "[]interface {}";
  if (isMap(v)) return "map[string]interface {}";
  return "<nil>";
}
