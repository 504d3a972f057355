// Name patterns of signer policies: globs (`*` stays inside one separator-delimited part, `**` spans parts) or `/regex/`.
import { BlockList, isIP } from "node:net";

export type Matcher = (value: string) => boolean;

export interface PatternOptions {
  /** The character `*` does not cross: "." for DNS names, "@" for email addresses, "/" for URIs. */
  readonly separator?: string;
  /** DNS names and email addresses compare without regard to case. */
  readonly ignoreCase?: boolean;
}

const REGEX_FORM = /^\/(.*)\/(i?)$/s;

/**
 * Compiles one pattern. `/.../` (optionally `/.../i`) is a regular expression matched against the whole
 * value; anything else is a glob. Throws Error with a readable message for a bad regular expression.
 */
export function compilePattern(pattern: string, options: PatternOptions = {}): Matcher {
  const flags = options.ignoreCase ? "iu" : "u";
  const regex = REGEX_FORM.exec(pattern);
  if (regex) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${regex[1]})$`, regex[2] === "i" ? "iu" : flags);
    } catch (error) {
      throw new Error(`invalid regular expression ${pattern}: ${(error as Error).message}`);
    }
    return (value) => re.test(value);
  }
  const re = new RegExp(`^${globSource(pattern, options.separator)}$`, flags);
  return (value) => re.test(value);
}

function globSource(glob: string, separator: string | undefined): string {
  const notSeparator = separator === undefined ? "[^]" : `[^${escapeRegex(separator)}]`;
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === "*" && glob[i + 1] === "*") {
      out += "[^]*";
      i++;
    } else if (ch === "*") {
      out += `${notSeparator}*`;
    } else {
      out += escapeRegex(ch);
    }
  }
  return out;
}

function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

/** Compiles a list of patterns into one matcher that accepts a value matching any of them. */
export function compilePatterns(patterns: readonly string[], options: PatternOptions = {}): Matcher {
  const matchers = patterns.map((p) => compilePattern(p, options));
  return (value) => matchers.some((m) => m(value));
}

/**
 * Compiles IP ranges: CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses. Throws Error naming the bad entry.
 * node's BlockList does the prefix arithmetic; one list per family, because a single list would let `::/0`
 * match every IPv4 address through its IPv4-mapped form.
 */
export function compileCidrs(ranges: readonly string[]): Matcher {
  const lists = { 4: new BlockList(), 6: new BlockList() };
  for (const range of ranges) {
    const [address = "", prefixText, extra] = range.split("/");
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
      throw new Error(`${JSON.stringify(range)} is not an IPv4 or IPv6 address or CIDR range`);
    }
    lists[family as 4 | 6].addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6");
  }
  return (value) => {
    const family = isIP(value);
    return family !== 0 && lists[family as 4 | 6].check(value, family === 4 ? "ipv4" : "ipv6");
  };
}
