// Parses `Warning` response headers (RFC 7234: `299 - "text"`), as the API server sends deprecation and policy notes.

/** The texts of every warning in the header values; a value that is not in warning form is taken whole. */
export function parseWarnings(header: string | readonly string[] | undefined): string[] {
  if (header === undefined) return [];
  const values = typeof header === "string" ? [header] : header;
  const out: string[] = [];
  for (const value of values) {
    let rest = value.trim();
    while (rest !== "") {
      const m = /^(\d{3})\s+(\S+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"[^"]*")?\s*(?:,\s*|$)/.exec(rest);
      if (!m) {
        out.push(rest);
        break;
      }
      out.push(m[3]!.replace(/\\(.)/g, "$1"));
      rest = rest.slice(m[0].length);
    }
  }
  return out;
}
