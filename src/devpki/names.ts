// Sorts command-line names the way mkcert does: IPs, emails (`@`), URIs (`scheme://`), else DNS names; and names the files.
import { isIP } from "node:net";
import { PlatformError } from "../errors.js";
import { isDnsName } from "../pki/csr-builder.js";

export interface SubjectNames {
  readonly dns: readonly string[];
  readonly ip: readonly string[];
  readonly email: readonly string[];
  readonly uri: readonly string[];
}

const EMAIL_RE = /^[^@\s]+@[^@\s]+$/;
const URI_RE = /^[a-z][a-z0-9+.-]*:\/\/\S+$/i;

/** Classifies each name; throws INVALID_ARGUMENT naming the first one that is none of the four. */
export function classifyNames(names: readonly string[]): SubjectNames {
  const out = { dns: [] as string[], ip: [] as string[], email: [] as string[], uri: [] as string[] };
  if (names.length === 0) throw new PlatformError("INVALID_ARGUMENT", "expected at least one name (DNS name, IP, email or URI)");
  for (const raw of names) {
    const name = raw.trim();
    const bracketed = /^\[(.+)\]$/.exec(name)?.[1];
    if (isIP(bracketed ?? name)) out.ip.push(bracketed ?? name);
    else if (EMAIL_RE.test(name)) out.email.push(name);
    else if (URI_RE.test(name) && URL.canParse(name)) out.uri.push(name);
    else if (isDnsName(name)) out.dns.push(name.toLowerCase());
    else throw new PlatformError("INVALID_ARGUMENT", `${JSON.stringify(raw)} is not a valid DNS name, IP address, email or URI`);
  }
  return out;
}

/** mkcert's file naming: first name with `:` → `_` and `*` → `_wildcard`, `+N` for N more names, `-client` for client certs. */
export function issueFileBase(names: readonly string[], client: boolean): string {
  const first = (names[0] ?? "cert").replace(/[:/\\]/g, "_").replace(/\*/g, "_wildcard");
  return `${first}${names.length > 1 ? `+${names.length - 1}` : ""}${client ? "-client" : ""}`;
}
