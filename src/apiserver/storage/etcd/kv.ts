// The store's side of etcd's KV API, which the revision fence shares: where keys live under the prefix (as latin1
// bytes), the Range and Txn answers the store reads, the compares of its transactions, and gRPC failures as typed errors.
import type { ServiceError } from "@grpc/grpc-js";
import { PlatformError, toPlatformError } from "../../../errors.js";
import type { EtcdHeader, EtcdKeyValue } from "./proto.js";

export interface RangeResponse {
  header: EtcdHeader;
  kvs: EtcdKeyValue[];
  more: boolean;
  count: number;
}
export interface TxnResponse {
  header: EtcdHeader;
  succeeded: boolean;
  responses: Array<{ response_range?: RangeResponse; response_put?: { prev_kv: EtcdKeyValue | null }; response_delete_range?: { prev_kvs: EtcdKeyValue[] } }>;
}

export const b = (s: string) => Buffer.from(s, "latin1");
export const compare = (key: Buffer, target: "MOD" | "CREATE", result: "EQUAL" | "GREATER", value: number) =>
  ({ key, target, result, [target === "MOD" ? "mod_revision" : "create_revision"]: value });

/** `--etcd-prefix` without its trailing slashes (default /platform-ca): every key of the store is `prefix/…`. */
export function etcdPrefix(option: string | undefined): string {
  const prefix = (option ?? "/platform-ca").replace(/\/+$/, "");
  if (!/^(\/[\x21-\x7e]+)?$/.test(prefix)) throw new PlatformError("INVALID_OPTION", `expected the etcd prefix to be a printable ASCII path like /platform-ca, got ${JSON.stringify(option)}`);
  return prefix;
}

/** Where compactions are recorded: `prefix:compact_rev_key` sorts outside `prefix/…`, so lists of the whole store never see it. */
export const compactRevKey = (prefix: string): string => `${prefix}:compact_rev_key`;

/** gRPC failures as typed errors: an unreachable cluster is retryable STORAGE_UNAVAILABLE, as SQLite's busy file is. */
export function etcdError(err: unknown, method: string): Error {
  if (err instanceof PlatformError) return err;
  const e = err as ServiceError;
  if (typeof e?.code !== "number") return toPlatformError(err);
  if (/required revision|future revision/.test(e.details ?? "")) return e;
  return new PlatformError("STORAGE_UNAVAILABLE", `etcd ${method} failed: ${e.details || e.message}`, { cause: err, details: { grpcCode: e.code } });
}
