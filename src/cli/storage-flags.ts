// The flags that choose the store of `apiserver` and `up`: SQLite in the data directory (default) or an etcd cluster.
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import type { StorageBackend } from "../apiserver/bootstrap/store.js";
import type { EgressSelector } from "../apiserver/egress/index.js";
import { UsageError } from "./program.js";

export interface StorageFlags {
  storageBackend?: string;
  etcdServers?: string;
  etcdCafile?: string;
  etcdCertfile?: string;
  etcdKeyfile?: string;
  etcdPrefix?: string;
}

const BACKENDS = ["sqlite", "etcd3"];

export function addStorageOptions(command: Command): Command {
  return command
    .option("--storage-backend <sqlite|etcd3>", "where objects are stored: SQLite in the data directory, or etcd (implied by --etcd-servers)")
    .option("--etcd-servers <urls>", "comma-separated etcd client URLs, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379")
    .option("--etcd-cafile <file>", "CA certificate that signed the etcd members' serving certificates")
    .option("--etcd-certfile <file>", "client certificate for etcd (with --etcd-keyfile)")
    .option("--etcd-keyfile <file>", "private key of --etcd-certfile")
    .option("--etcd-prefix <path>", "prefix of every key this server writes to etcd", "/platform-ca");
}

/** Checks the storage flags and reads the TLS files, before anything is created. */
export async function storageBackend(flags: StorageFlags): Promise<StorageBackend> {
  const kind = flags.storageBackend ?? (flags.etcdServers !== undefined ? "etcd3" : "sqlite");
  if (!BACKENDS.includes(kind)) throw new UsageError(`--storage-backend must be one of ${BACKENDS.join(", ")}, got ${JSON.stringify(kind)}`);
  const etcdFlags = (["etcdServers", "etcdCafile", "etcdCertfile", "etcdKeyfile"] as const).filter((k) => flags[k] !== undefined);
  if (kind === "sqlite") {
    if (etcdFlags.length > 0) throw new UsageError(`--storage-backend sqlite does not use ${etcdFlags.map(flagName).join(", ")}`);
    return { kind };
  }
  const endpoints = (flags.etcdServers ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (endpoints.length === 0) throw new UsageError("--storage-backend etcd3 needs --etcd-servers");
  const bad = endpoints.find((e) => !/^https?:\/\/[^/\s]+\/?$/.test(e));
  if (bad !== undefined) throw new UsageError(`expected --etcd-servers to list URLs like https://127.0.0.1:2379, got ${JSON.stringify(bad)}`);
  if ((flags.etcdCertfile === undefined) !== (flags.etcdKeyfile === undefined)) throw new UsageError("--etcd-certfile and --etcd-keyfile go together");
  if (!/^\/[\x21-\x7e]*$/.test(flags.etcdPrefix ?? "/")) throw new UsageError(`expected --etcd-prefix to be a path like /platform-ca, got ${JSON.stringify(flags.etcdPrefix)}`);
  const read = async (flag: keyof StorageFlags) => {
    const path = flags[flag];
    if (path === undefined) return undefined;
    return readFile(path).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`cannot read ${flagName(flag)} ${path}: ${err.code ?? err.message}`);
    });
  };
  const [ca, cert, key] = await Promise.all([read("etcdCafile"), read("etcdCertfile"), read("etcdKeyfile")]);
  const tls = { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) };
  return { kind: "etcd3", etcd: { endpoints, ...(Object.keys(tls).length > 0 && { tls }), ...(flags.etcdPrefix !== undefined && { prefix: flags.etcdPrefix }) } };
}

/** The backend with etcd reached through the `etcd` egress selection (as upstream; Direct when the file names none). */
export function throughEgress(backend: StorageBackend, egress: EgressSelector): StorageBackend {
  return backend.kind === "etcd3" ? { ...backend, etcd: { ...backend.etcd, egress: egress.dialer("etcd") } } : backend;
}

function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}
