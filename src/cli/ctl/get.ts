// `platformctl get`: server-side Tables as aligned columns, or objects through -o; selectors, -A, and -w watches.
import type { Command } from "commander";
import type { ApiList, ApiObject } from "../../api/meta.js";
import { parseWatchLine, pathWithQuery, type Query, type RestClient } from "../../client/index.js";
import { isPlatformError } from "../../errors.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { Failures } from "./failures.js";
import { groupResource, type ResourceInfo } from "./discovery.js";
import { addFilenameFlags, addOutputFlags, checkFilenames, outputOf, type FilenameFlags, type OutputFlags } from "./flags.js";
import { customColumnsView, relaxedJsonPath, renderColumns, sortByPath, type CustomColumn } from "./output/custom-columns.js";
import type { JsonPath } from "./output/jsonpath.js";
import { asList, printObject, type OutputSpec, type PrintOptions } from "./output/printer.js";
import { renderTable, StreamingTable, tableView, type ServerTable, type TableView } from "./output/table-printer.js";
import { fileTargets, pathsFor, splitTypeNames } from "./targets.js";

/** kubectl's Accept for server-side printing, falling back to plain JSON. */
export const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

interface GetFlags extends OutputFlags, FilenameFlags {
  readonly selector?: string;
  readonly fieldSelector?: string;
  readonly allNamespaces?: boolean;
  readonly watch?: boolean;
  readonly watchOnly?: boolean;
  readonly noHeaders?: boolean;
  readonly showLabels?: boolean;
  readonly showKind?: boolean;
  readonly ignoreNotFound?: boolean;
  readonly sortBy?: string;
}

/** One request of the get: a whole collection, or named objects of one resource. */
interface Request {
  readonly info: ResourceInfo;
  readonly names: readonly string[];
  readonly namespace?: string;
}

const EXAMPLES = `
Examples:
  platformctl get csr                                   # every CertificateSigningRequest, as a table
  platformctl get csr alice -o yaml                     # one object as YAML
  platformctl get serviceaccounts -A -l team=a          # across namespaces, by label
  platformctl get csr --field-selector spec.signerName=platform.io/apiserver-client -o name
  platformctl get csr -o jsonpath='{.items[*].metadata.name}'
  platformctl get csr -o custom-columns=NAME:.metadata.name,SIGNER:.spec.signerName --sort-by=.metadata.creationTimestamp
  platformctl get csr -w --request-timeout 1m           # print changes as they happen
`;

async function requestsOf(ctx: CtlContext, args: readonly string[], flags: GetFlags): Promise<Request[]> {
  const files = checkFilenames(flags, args);
  if (files.length > 0) {
    return (await fileTargets(ctx, files, flags.recursive === true)).map((t) => ({ info: t.info, names: [t.name], namespace: t.namespace }));
  }
  if (args.length === 0) throw new UsageError("you must specify the type of resource to get (platformctl api-resources lists them)");
  const discovery = await ctx.discovery();
  const namespace = flags.allNamespaces ? undefined : await ctx.namespace();
  if (args.some((a) => a.includes("/"))) {
    const out: Request[] = [];
    for (const { type, name } of splitTypeNames(args, "get")) out.push({ info: await discovery.resolve(type), names: [name], namespace });
    return out;
  }
  const [types, ...names] = args;
  const out: Request[] = [];
  for (const type of types!.split(",").filter((t) => t !== "")) out.push({ info: await discovery.resolve(type), names, namespace });
  if (names.length > 0 && out.length > 1) throw new UsageError("names can only be given for one resource type");
  return out;
}

function listQuery(flags: GetFlags): Query {
  return { labelSelector: flags.selector, fieldSelector: flags.fieldSelector };
}

/** The objects of a request (named, or the collection) and the list's resourceVersion; a name that fails is recorded in `failures`. */
async function fetchObjects(client: RestClient, r: Request, flags: GetFlags, failures: Failures): Promise<{ items: ApiObject[]; resourceVersion?: string }> {
  const paths = pathsFor(client, r.info);
  if (r.names.length === 0) {
    const list = await client.request<ApiList>("GET", paths.collectionPath(r.namespace), undefined, { query: listQuery(flags) });
    return { items: list.items.map((o) => ({ ...o, apiVersion: o.apiVersion ?? list.apiVersion.replace(/List$/, ""), kind: o.kind ?? r.info.kind })), resourceVersion: list.metadata?.resourceVersion };
  }
  const items: ApiObject[] = [];
  for (const name of r.names) {
    try {
      items.push(await client.request<ApiObject>("GET", paths.itemPath(name, r.namespace)));
    } catch (err) {
      if (!(flags.ignoreNotFound && isPlatformError(err, "NOT_FOUND"))) failures.add(err);
    }
  }
  return { items };
}

/** The rows of a server table in --sort-by order (the rows carry their whole object for it). */
function sortedTable(table: ServerTable, sortBy: JsonPath | undefined): ServerTable {
  return sortBy ? { ...table, rows: sortByPath(table.rows, sortBy, (row) => row.object) } : table;
}

async function fetchTable(client: RestClient, r: Request, flags: GetFlags, failures: Failures, sortBy: JsonPath | undefined): Promise<{ table: ServerTable; resourceVersion?: string }> {
  const paths = pathsFor(client, r.info);
  const headers = { Accept: TABLE_ACCEPT };
  const includeObject = sortBy ? { includeObject: "Object" } : {};
  if (r.names.length === 0) {
    const table = await client.request<ServerTable & { metadata?: { resourceVersion?: string } }>("GET", paths.collectionPath(r.namespace), undefined, { headers, query: { ...listQuery(flags), ...includeObject } });
    return { table: sortedTable(table, sortBy), resourceVersion: table.metadata?.resourceVersion };
  }
  let merged: ServerTable | undefined;
  for (const name of r.names) {
    try {
      const one = await client.request<ServerTable>("GET", paths.itemPath(name, r.namespace), undefined, { headers, query: includeObject });
      merged = merged ? { ...merged, rows: [...merged.rows, ...one.rows] } : one;
    } catch (err) {
      if (!(flags.ignoreNotFound && isPlatformError(err, "NOT_FOUND"))) failures.add(err);
    }
  }
  return { table: sortedTable(merged ?? { columnDefinitions: [], rows: [] }, sortBy) };
}

/** The table output's note that a collection is empty (kubectl prints none for -o json, yaml, name, templates). */
function noneFound(ctx: CtlContext, r: Request, flags: GetFlags): void {
  if (flags.ignoreNotFound || r.names.length > 0) return;
  ctx.io.err(r.info.namespaced && r.namespace ? `No resources found in ${r.namespace} namespace.\n` : "No resources found\n");
}

async function printTables(ctx: CtlContext, requests: readonly Request[], flags: GetFlags, wide: boolean, failures: Failures, sortBy: JsonPath | undefined): Promise<{ rv?: string; view?: TableView }> {
  const client = await ctx.client();
  const several = requests.length > 1 || flags.showKind === true;
  let first = true;
  let last: { rv?: string; view?: TableView } = {};
  for (const r of requests) {
    const { table, resourceVersion } = await fetchTable(client, r, flags, failures, sortBy);
    if (table.rows.length === 0) {
      noneFound(ctx, r, flags);
      last = { rv: resourceVersion };
      continue;
    }
    const view = tableView(table, { wide, withNamespace: flags.allNamespaces === true && r.info.namespaced, showLabels: flags.showLabels, ...(several ? { kindPrefix: groupResource({ plural: r.info.kind.toLowerCase(), group: r.info.group }) } : {}) });
    ctx.io.out(`${first ? "" : "\n"}${renderTable(view, flags.noHeaders)}`);
    first = false;
    last = { rv: resourceVersion, view };
  }
  return last;
}

/** The objects of every request, in --sort-by order when given, and the last list's resourceVersion. */
async function fetchAll(ctx: CtlContext, requests: readonly Request[], flags: GetFlags, failures: Failures, sortBy: JsonPath | undefined): Promise<{ all: ApiObject[]; rv?: string }> {
  const client = await ctx.client();
  let all: ApiObject[] = [];
  let rv: string | undefined;
  for (const r of requests) {
    const { items, resourceVersion } = await fetchObjects(client, r, flags, failures);
    all.push(...items);
    rv = resourceVersion;
  }
  if (sortBy) all = sortByPath(all, sortBy, (o) => o);
  return { all, rv };
}

/** -o custom-columns: one table of the objects of every request (headers even when there are none, as kubectl). */
async function printColumns(ctx: CtlContext, requests: readonly Request[], flags: GetFlags, columns: readonly CustomColumn[], failures: Failures, sortBy: JsonPath | undefined): Promise<{ rv?: string; view: TableView }> {
  const { all, rv } = await fetchAll(ctx, requests, flags, failures, sortBy);
  const view = customColumnsView(columns, all);
  // One object asked for and not there: only the error, as kubectl.
  const single = requests.length === 1 && requests[0]!.names.length === 1;
  if (!(single && failures.count > 0)) ctx.io.out(renderColumns(view, flags.noHeaders === true));
  return { rv, view };
}

async function printStructured(ctx: CtlContext, requests: readonly Request[], flags: GetFlags, spec: OutputSpec, print: PrintOptions, failures: Failures, sortBy: JsonPath | undefined): Promise<string | undefined> {
  const { all, rv } = await fetchAll(ctx, requests, flags, failures, sortBy);
  let single = requests.length === 1 && requests[0]!.names.length === 1;
  // One object asked for and not there: only the error, as kubectl (several names print the List of those found).
  if (single && failures.count > 0) return rv;
  if (all.length === 0 && single) single = false;
  if (all.length > 0 || spec.format !== "name") ctx.io.out(printObject(spec, single ? all[0]! : asList(all), print));
  return rv;
}

async function watch(ctx: CtlContext, r: Request, flags: GetFlags, resourceVersion: string | undefined, spec: OutputSpec, print: PrintOptions, table: StreamingTable | undefined): Promise<void> {
  const client = await ctx.client();
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  const timeoutMs = (await ctx.restConfig()).timeoutMs ?? 0;
  const query: Query = {
    watch: true,
    ...listQuery(flags),
    fieldSelector: r.names.length === 1 ? [flags.fieldSelector, `metadata.name=${r.names[0]}`].filter(Boolean).join(",") : flags.fieldSelector,
    resourceVersion,
    timeoutSeconds: timeoutMs > 0 ? Math.max(1, Math.ceil(timeoutMs / 1000)) : undefined,
  };
  const path = pathsFor(client, r.info).collectionPath(r.namespace);
  let headerDue = table !== undefined && flags.watchOnly === true;
  try {
    const stream = await client.openStream(path, { query, signal: abort.signal, headers: table && spec.format !== "custom-columns" ? { Accept: TABLE_ACCEPT } : {} });
    let buffered = "";
    for await (const chunk of stream) {
      buffered += String(chunk);
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line === "") continue;
        const event = parseWatchLine(line, { method: "GET", path: pathWithQuery(path, query) });
        if (event.type === "BOOKMARK") continue;
        if (event.type === "ERROR") throw new Error((event.object as { message?: string }).message ?? "watch error");
        if (table && spec.format === "custom-columns") {
          ctx.io.out(table.render(customColumnsView(spec.columns, [event.object]), headerDue));
          headerDue = false;
        } else if (table) {
          const view = tableView(event.object as unknown as ServerTable, { wide: flags.output === "wide", withNamespace: flags.allNamespaces === true && r.info.namespaced, showLabels: flags.showLabels });
          ctx.io.out(table.render(view, headerDue));
          headerDue = false;
        } else ctx.io.out(printObject(spec, event.object as ApiObject, print));
      }
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  } finally {
    process.off("SIGINT", stop);
  }
}

async function run(ctx: CtlContext, args: readonly string[], flags: GetFlags): Promise<void> {
  const { spec, print } = outputOf(flags, ["wide", "custom-columns", "custom-columns-file"]);
  const sortBy = flags.sortBy !== undefined ? relaxedJsonPath(flags.sortBy, "--sort-by") : undefined;
  const requests = await requestsOf(ctx, args, flags);
  const watching = flags.watch === true || flags.watchOnly === true;
  if (watching && requests.length !== 1) throw new UsageError("watch is only supported on individual resources and resource collections, but several resources were named");
  const tabular = spec.format === "default" || spec.format === "wide" || spec.format === "custom-columns";
  let rv: string | undefined;
  let streaming: StreamingTable | undefined;
  // Names that fail are reported after what could be printed (exit 1), as kubectl does.
  const failures = new Failures();
  if (!flags.watchOnly) {
    if (spec.format === "custom-columns") {
      const shown = await printColumns(ctx, requests, flags, spec.columns, failures, sortBy);
      rv = shown.rv;
      streaming = new StreamingTable(flags.noHeaders === true);
      streaming.render(shown.view, true);
    } else if (tabular) {
      const shown = await printTables(ctx, requests, flags, spec.format === "wide", failures, sortBy);
      rv = shown.rv;
      streaming = new StreamingTable(flags.noHeaders === true);
      // Later rows line up under the table already printed.
      if (shown.view) streaming.render({ headers: shown.view.headers, rows: shown.view.rows }, true);
    } else rv = await printStructured(ctx, requests, flags, spec, print, failures, sortBy);
  } else if (tabular) streaming = new StreamingTable(flags.noHeaders === true);
  failures.throwIfAny(ctx.io);
  if (watching) await watch(ctx, requests[0]!, flags, flags.watchOnly ? undefined : (rv ?? "0"), spec, print, tabular ? streaming : undefined);
}

export const getVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("get")
    .description("display one or many resources")
    .usage("[(-o|--output=)json|yaml|name|wide|custom-columns=…|jsonpath=…|go-template=…] [--sort-by=PATH] (TYPE[,TYPE…] [NAME…] | TYPE/NAME… | -f FILENAME) [options]")
    .argument("[resource...]", "TYPE[,TYPE…] [NAME…] or TYPE/NAME…")
    .option("-l, --selector <selector>", "label selector (=, ==, !=, in, notin, exists)")
    .option("--field-selector <selector>", "field selector (metadata.name, metadata.namespace, spec.signerName)")
    .option("-A, --all-namespaces", "list across all namespaces")
    .option("-w, --watch", "after listing, watch for changes (ends with --request-timeout or Ctrl-C)")
    .option("--watch-only", "watch for changes without listing first")
    .option("--no-headers", "print no column headers")
    .option("--show-labels", "add a LABELS column")
    .option("--show-kind", "prefix names with their kind")
    .option("--ignore-not-found", "treat a missing named object as no output")
    .option("--sort-by <jsonpath>", "sort the list by this field (a JSONPath such as .metadata.name or '{.metadata.creationTimestamp}')");
  addFilenameFlags(cmd, "naming the objects to get");
  addOutputFlags(cmd, "wide|json|yaml|name|custom-columns=HEADER:PATH,…|custom-columns-file=…|jsonpath=…|jsonpath-as-json=…|jsonpath-file=…|go-template=…|go-template-file=…");
  cmd.addHelpText("after", EXAMPLES).action((args: string[], flags: GetFlags & { headers?: boolean }, self: Command) =>
    withContext(self, (ctx) => run(ctx, args, { ...flags, noHeaders: flags.headers === false })),
  );
};
