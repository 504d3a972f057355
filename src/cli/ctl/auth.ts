// `platformctl auth whoami`: the identity the server sees for these credentials (SelfSubjectReview), impersonation included.
// `platformctl auth can-i`: whether they may do something (SelfSubjectAccessReview), answered yes or no as kubectl does;
// with --list, everything they may do in a namespace (SelfSubjectRulesReview) in kubectl's table.
import type { Command } from "commander";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import {
  SELF_SUBJECT_ACCESS_REVIEW_KIND,
  SELF_SUBJECT_RULES_REVIEW_KIND,
  type SelfSubjectAccessReviewSpec,
  type SubjectAccessReviewStatus,
  type SubjectRulesReviewStatus,
} from "../../api/types/authorization.js";
import { isPlatformError } from "../../errors.js";
import { ExitStatus, UsageError, type CommandModule } from "../program.js";
import { formatTable } from "../table.js";
import { withContext, type CtlContext } from "./context.js";
import { addOutputFlags, outputOf, type OutputFlags } from "./flags.js";
import { printObject } from "./output/printer.js";

/** The attribute table kubectl prints: username, UID, groups and each extra key. */
export function whoamiTable(user: UserInfo): string {
  const rows: string[][] = [["Username", user.username ?? ""]];
  if (user.uid) rows.push(["UID", user.uid]);
  if (user.groups?.length) rows.push(["Groups", `[${user.groups.join(" ")}]`]);
  for (const [key, values] of Object.entries(user.extra ?? {}).sort(([a], [b]) => a.localeCompare(b))) rows.push([`Extra: ${key}`, `[${values.join(" ")}]`]);
  return formatTable(["Attribute", "Value"], rows);
}

async function run(ctx: CtlContext, flags: OutputFlags): Promise<void> {
  const { spec, print } = outputOf(flags);
  const client = await ctx.client();
  const body = { apiVersion: `${ctx.names.authentication}/v1`, kind: "SelfSubjectReview", metadata: {} };
  const review = await client.request<ApiObject & { status?: { userInfo?: UserInfo } }>("POST", `/apis/${ctx.names.authentication}/v1/selfsubjectreviews`, body);
  ctx.io.out(spec.format === "default" ? whoamiTable(review.status?.userInfo ?? { username: "" }) : printObject(spec, review, print));
}

/** kubectl's known verbs; another verb is still asked, after a warning. */
const RESOURCE_VERBS = new Set(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "use", "bind", "impersonate", "*", "approve", "sign", "escalate", "attest"]);
const NON_RESOURCE_VERBS = new Set(["get", "put", "post", "head", "options", "delete", "patch", "*"]);
/** Resources RBAC knows that discovery does not list (the targets of `impersonate`): no warning for them. */
const UNDISCOVERED_RESOURCES = new Set(["users", "groups"]);

export interface CanIFlags {
  readonly allNamespaces?: boolean;
  readonly list?: boolean;
  readonly headers?: boolean;
  readonly subresource?: string;
  readonly quiet?: boolean;
}

export interface CanIQuestion {
  readonly spec: SelfSubjectAccessReviewSpec;
  /** kubectl's warnings (without the `Warning: ` prefix): an unknown type or verb, a namespace for a cluster-scoped type. */
  readonly warnings: string[];
}

/** `VERB TYPE[/NAME]` or `VERB /PATH` as the spec of a SelfSubjectAccessReview, with kubectl's rules and warnings. */
export async function canIQuestion(ctx: CtlContext, args: readonly string[], flags: CanIFlags): Promise<CanIQuestion> {
  if (args.length !== 2) {
    throw new UsageError("you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'platformctl auth can-i -h' for help and examples.");
  }
  const [verb, target] = args as [string, string];
  const warnings: string[] = [];
  if (target.startsWith("/")) {
    if (flags.subresource) throw new UsageError("--subresource can not be used with NonResourceURL");
    if (!NON_RESOURCE_VERBS.has(verb)) warnings.push(`verb '${verb}' is not a known verb`);
    return { spec: { nonResourceAttributes: { verb, path: target } }, warnings };
  }
  const slash = target.indexOf("/");
  const [type, name] = slash < 0 ? [target, ""] : [target.slice(0, slash), target.slice(slash + 1)];
  let group = "";
  let resource = type;
  let namespaced: boolean | undefined;
  if (type !== "*") {
    try {
      const info = await (await ctx.discovery()).resolve(type);
      [group, resource, namespaced] = [info.group, info.plural, info.namespaced];
    } catch (err) {
      if (!isPlatformError(err, "NOT_FOUND")) throw err;
      // Asked as typed: RBAC rules may name resources the server does not serve.
      const lower = type.toLowerCase();
      const dot = lower.indexOf(".");
      const [r, g] = dot < 0 ? [lower, ""] : [lower.slice(0, dot), lower.slice(dot + 1)];
      if (!UNDISCOVERED_RESOURCES.has(lower)) warnings.push(g ? `the server doesn't have a resource type '${r}' in group '${g}'` : `the server doesn't have a resource type '${r}'`);
    }
  }
  const namespace = flags.allNamespaces ? "" : await ctx.namespace();
  // kubectl checks the scope and the verb only when the question is in one namespace.
  if (!flags.allNamespaces) {
    if (namespaced === false) warnings.push(group ? `resource '${resource}' is not namespace scoped in group '${group}'` : `resource '${resource}' is not namespace scoped`);
    if (!RESOURCE_VERBS.has(verb)) warnings.push(`verb '${verb}' is not a known verb`);
  }
  const resourceAttributes = {
    ...(namespace && { namespace }),
    verb,
    ...(group && { group }),
    resource,
    ...(flags.subresource && { subresource: flags.subresource }),
    ...(name && { name }),
  };
  return { spec: { resourceAttributes }, warnings };
}

/** kubectl's answer line: `yes`, or `no` with the reason and evaluation error when the server gives them. */
export function canIAnswer(status: SubjectAccessReviewStatus | undefined): string {
  if (status?.allowed) return "yes\n";
  return `no${status?.reason ? ` - ${status.reason}` : ""}${status?.evaluationError ? ` - ${status.evaluationError}` : ""}\n`;
}

interface Rule {
  readonly verbs: readonly string[];
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly resourceNames: readonly string[];
  readonly nonResourceURLs: readonly string[];
}

const sorted = (v: readonly string[] | undefined): string[] => [...(v ?? [])].sort();
const goList = (v: readonly string[]): string => `[${v.join(" ")}]`;

/** kubectl's `resource.group/subresource` cell. */
function resourceCell(r: Rule): string {
  const [resource, sub] = (r.resources[0] ?? "").split(/\/(.*)/s, 2) as [string, string | undefined];
  if (r.resources.length === 0) return "";
  return `${resource}${r.apiGroups[0] ? `.${r.apiGroups[0]}` : ""}${sub !== undefined ? `/${sub}` : ""}`;
}

/**
 * kubectl's `auth can-i --list` table: every rule broken down to one group, resource and name (or one URL), the
 * plain ones of the same resource and name merged (verbs appended), then sorted by kubectl's text of each rule.
 */
export function rulesTable(status: SubjectRulesReviewStatus, headers = true): string {
  const broken: Rule[] = [];
  const rule = (verbs: readonly string[], o: Partial<Rule>): Rule => ({ verbs: sorted(verbs), apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [], ...o });
  for (const r of status.resourceRules ?? []) {
    for (const g of r.apiGroups ?? []) {
      for (const resource of r.resources ?? []) {
        const names = r.resourceNames?.length ? r.resourceNames : [undefined];
        for (const n of names) broken.push(rule(r.verbs, { apiGroups: [g], resources: [resource], resourceNames: n === undefined ? [] : [n] }));
      }
    }
  }
  for (const r of status.nonResourceRules ?? []) for (const url of r.nonResourceURLs ?? []) broken.push(rule(r.verbs, { nonResourceURLs: [url] }));
  const compacted: Rule[] = [];
  const simple = new Map<string, { verbs: string[]; rule: Rule }>();
  for (const r of broken) {
    if (r.nonResourceURLs.length > 0) {
      compacted.push(r);
      continue;
    }
    const key = JSON.stringify([r.apiGroups[0], r.resources[0], r.resourceNames[0] ?? null]);
    const seen = simple.get(key);
    if (seen) for (const v of r.verbs) if (!seen.verbs.includes(v)) seen.verbs.push(v);
    if (!seen) simple.set(key, { verbs: [...r.verbs], rule: r });
  }
  compacted.push(...[...simple.values()].map(({ verbs, rule: r }) => ({ ...r, verbs })));
  // Go's PolicyRule.String(), which kubectl sorts by.
  const text = (r: Rule) => `&PolicyRule{Verbs:${goList(r.verbs)},APIGroups:${goList(r.apiGroups)},Resources:${goList(r.resources)},ResourceNames:${goList(r.resourceNames)},NonResourceURLs:${goList(r.nonResourceURLs)},}`;
  const rows = compacted
    .map((r) => ({ r, key: text(r) }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map(({ r }) => [resourceCell(r), goList(r.nonResourceURLs), goList(r.resourceNames), goList(r.verbs)]);
  // Without headers the columns are as wide as their cells alone, but at least kubectl's tabwriter minimum (6 with
  // the 3 spaces of padding): blank headers of that width, cut off below.
  const table = formatTable(headers ? ["Resources", "Non-Resource URLs", "Resource Names", "Verbs"] : ["   ", "   ", "   ", "   "], rows, true);
  return headers ? table : table.slice(table.indexOf("\n") + 1);
}

async function runList(ctx: CtlContext, args: readonly string[], flags: CanIFlags): Promise<void> {
  if (args.length > 0) throw new UsageError("--list does not take arguments: it lists everything you may do in the namespace");
  // kubectl's refusal, word for word.
  if (flags.quiet || flags.allNamespaces || flags.subresource) throw new UsageError("list option can't be specified with neither quiet, all-namespaces nor subresource options");
  const namespace = await ctx.namespace();
  const client = await ctx.client();
  const body = { apiVersion: `${ctx.names.authorization}/v1`, kind: SELF_SUBJECT_RULES_REVIEW_KIND, metadata: {}, spec: { namespace } };
  const review = await client.request<ApiObject & { status?: SubjectRulesReviewStatus }>("POST", `/apis/${ctx.names.authorization}/v1/selfsubjectrulesreviews`, body);
  const status = review.status ?? { resourceRules: [], nonResourceRules: [], incomplete: true };
  if (status.incomplete) ctx.io.err(`warning: the list may be incomplete: ${status.evaluationError ?? "<nil>"}\n`);
  ctx.io.out(rulesTable(status, flags.headers !== false));
}

async function runCanI(ctx: CtlContext, args: readonly string[], flags: CanIFlags): Promise<void> {
  if (flags.list) return runList(ctx, args, flags);
  const { spec, warnings } = await canIQuestion(ctx, args, flags);
  for (const w of warnings) ctx.io.err(`Warning: ${w}\n`);
  const client = await ctx.client();
  const body = { apiVersion: `${ctx.names.authorization}/v1`, kind: SELF_SUBJECT_ACCESS_REVIEW_KIND, metadata: {}, spec };
  const review = await client.request<ApiObject & { status?: SubjectAccessReviewStatus }>("POST", `/apis/${ctx.names.authorization}/v1/selfsubjectaccessreviews`, body);
  if (!flags.quiet) ctx.io.out(canIAnswer(review.status));
  // As kubectl: the answer is the exit status too (0 yes, 1 no), so scripts can test it.
  if (!review.status?.allowed) throw new ExitStatus(1);
}

export const authVerb: CommandModule = (program: Command) => {
  const auth = program.command("auth").description("inspect authentication")
    .addHelpText("after", "\nExamples:\n  platformctl auth whoami\n  platformctl auth can-i create certificatesigningrequests --as alice\n");
  const whoami = auth.command("whoami").description("show the user attributes the server holds for the current credentials");
  addOutputFlags(whoami, "json|yaml|jsonpath=…|go-template=…");
  whoami
    .addHelpText("after", "\nExamples:\n  platformctl auth whoami\n  platformctl auth whoami --as alice --as-group devs -o yaml\n")
    .action((flags: OutputFlags, self: Command) => withContext(self, (ctx) => run(ctx, flags)));
  auth
    .command("can-i")
    .description("check whether an action is allowed: prints yes (exit 0) or no (exit 1)")
    .argument("[args...]", "VERB TYPE, VERB TYPE/NAME or VERB /NONRESOURCEURL")
    .option("-A, --all-namespaces", "ask about all namespaces instead of -n or the context's namespace")
    .option("--subresource <name>", "the subresource, such as status or approval")
    .option("-q, --quiet", "print nothing; the exit status is the answer")
    .option("--list", "list everything you may do in the namespace (Resources, Non-Resource URLs, Resource Names, Verbs)")
    .option("--no-headers", "with --list, leave out the header line")
    .addHelpText(
      "after",
      [
        "",
        "VERB is a verb as RBAC names it (get, list, create, approve…); TYPE is resolved through discovery (csr, plural, kind,",
        "TYPE.GROUP); '*' means every resource; a NONRESOURCEURL starts with '/'. --as and --as-group ask for someone else.",
        "",
        "Examples:",
        "  platformctl auth can-i create serviceaccounts -n platform-system",
        "  platformctl auth can-i update csr/node-1 --subresource approval",
        "  platformctl auth can-i list csr --as alice --as-group devs",
        "  platformctl auth can-i '*' '*' -A",
        "  platformctl auth can-i get /healthz",
        "  platformctl auth can-i --list -n platform-system",
        "  platformctl auth can-i approve signers/example.com/my-signer -q && echo allowed",
        "",
      ].join("\n"),
    )
    .action((args: string[], flags: CanIFlags, self: Command) => withContext(self, (ctx) => runCanI(ctx, args, flags)));
};
