// The API's name rules: DNS labels and subdomains, path segments, qualified names, label values and signer names.
import { invalid, required, tooLong, type FieldError } from "./field-errors.js";

export const DNS1123_LABEL_MAX = 63;
export const DNS1123_SUBDOMAIN_MAX = 253;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** The rule an object's metadata.name follows, per resource. */
export type NameRule = "dns-subdomain" | "dns-label" | "path-segment";

/** Why `name` breaks `rule`, or undefined. */
export function nameProblem(rule: NameRule, name: string): string | undefined {
  switch (rule) {
    case "dns-label":
      return name.length <= DNS1123_LABEL_MAX && DNS_LABEL.test(name)
        ? undefined
        : "a lowercase RFC 1123 label must consist of at most 63 lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
    case "dns-subdomain":
      return name.length <= DNS1123_SUBDOMAIN_MAX && DNS_SUBDOMAIN.test(name)
        ? undefined
        : "a lowercase RFC 1123 subdomain must consist of at most 253 lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    case "path-segment":
      if (name === "." || name === "..") return `may not be '${name}'`;
      return /[/%]/.test(name) ? "may not contain '/' or '%'" : undefined;
  }
}

export const dns1123LabelProblem = (value: string): string | undefined => nameProblem("dns-label", value);
export const dns1123SubdomainProblem = (value: string): string | undefined => nameProblem("dns-subdomain", value);
export const pathSegmentProblem = (value: string): string | undefined => nameProblem("path-segment", value);

/** Why `key` is not a qualified name (`[prefix/]name`), or undefined when it is one. */
export function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > DNS1123_SUBDOMAIN_MAX || !DNS_SUBDOMAIN.test(prefix))) {
    return "prefix part must be a DNS subdomain of at most 253 characters";
  }
  if (name.length === 0 || name.length > DNS1123_LABEL_MAX || !NAME_PART.test(name)) {
    return "name part must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  }
  return undefined;
}

/** Why `value` is not a valid label value, or undefined when it is one. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > DNS1123_LABEL_MAX) return "must be no more than 63 characters";
  if (!LABEL_VALUE.test(value)) return "must be empty or alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";
  return undefined;
}

// --- signerName: `<domain>/<path>`, as upstream's ValidateSignerName ---

const MAX_PATH_SEGMENT = DNS1123_SUBDOMAIN_MAX + DNS1123_LABEL_MAX + 1;
export const MAX_SIGNER_NAME = DNS1123_SUBDOMAIN_MAX + MAX_PATH_SEGMENT + 1;

/**
 * A signer name is one `/` between a domain of at least two DNS labels and a path of DNS subdomains joined by
 * dots, so that `<fqdn>/<namespace>.<name>` fits. The API (spec.signerName) and the signers share this one rule,
 * so a signer can never claim a name that no CSR could carry.
 */
export function validateSignerName(field: string, signerName: string): FieldError[] {
  if (signerName.length === 0) return [required(field)];
  const segments = signerName.split("/");
  if (segments.length !== 2) {
    return [invalid(field, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  }
  const [domain, path] = segments as [string, string];
  const errors: FieldError[] = [];
  if (domain.length > DNS1123_SUBDOMAIN_MAX) errors.push(tooLong(field, DNS1123_SUBDOMAIN_MAX));
  const labels = domain.split(".");
  for (const label of labels) {
    const why = dns1123LabelProblem(label);
    if (why) {
      // Later labels would only repeat the same complaint.
      errors.push(invalid(field, domain, `validating label ${JSON.stringify(label)}: ${why}`));
      break;
    }
  }
  if (labels.length < 2) errors.push(invalid(field, domain, "should be a domain with at least two segments separated by dots"));
  for (const component of path.split(".")) {
    const why = dns1123SubdomainProblem(component);
    if (why) {
      errors.push(invalid(field, path, `validating component ${JSON.stringify(component)}: ${why}`));
      break;
    }
  }
  if (signerName.length > MAX_SIGNER_NAME) errors.push(tooLong(field, MAX_SIGNER_NAME));
  return errors;
}
