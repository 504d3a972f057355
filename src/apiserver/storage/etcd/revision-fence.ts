// Moves an etcd cluster's revision past the revisions handed out before a snapshot was restored, and compacts there:
// what etcd 3.6's `etcdutl snapshot restore --bump-revision N --mark-compacted` does, which etcd 3.4 has no flag for.
// Every revision is one Put of one key outside the store's prefix; they are pipelined, since etcd batches concurrent
// proposals into one raft entry and one fsync, so 100,000 revisions take seconds rather than a process per write.
import type { EtcdClientOptions, KvMethod } from "./client.js";
import { EtcdClient } from "./client.js";
import type { EtcdHeader } from "./proto.js";
import { compactRevKey, etcdError, etcdPrefix } from "./kv.js";

export interface RevisionFence {
  /** The revision before the first write. */
  readonly from: number;
  /** The revision after the last write, which is also the compacted revision. */
  readonly to: number;
}

/** Puts in flight at once: enough to fill etcd's proposal batches, few enough to stay far from its request limits. */
const IN_FLIGHT = 64;

/** The one key the fence writes (and deletes): `<prefix>-revision-fence` sorts outside `<prefix>/…`, so no list sees it. */
export const fenceKey = (prefix: string | undefined): string => `${etcdPrefix(prefix)}-revision-fence`;

/**
 * Skips `by` revisions: `by` Puts, then one transaction that deletes the key and records the compaction where the
 * servers' compactor records theirs (`<prefix>:compact_rev_key`), then a compaction at that last revision. The
 * revisions up to `from + by` then answer "required revision has been compacted" to any list or watch; on a quiet
 * cluster `to` is `from + by + 1`.
 */
export async function fenceEtcdRevision(options: EtcdClientOptions & { readonly prefix?: string }, by: number, inFlight = IN_FLIGHT): Promise<RevisionFence> {
  const key = Buffer.from(fenceKey(options.prefix), "latin1");
  const client = await EtcdClient.open(options);
  const call = <T extends { header: EtcdHeader }>(method: KvMethod, request: object, write: boolean) => client.call<T>(method, request, write).catch((err: unknown) => {
    throw etcdError(err, method);
  });
  try {
    const from = (await call("Range", { key, count_only: true }, false)).header.revision;
    let left = by;
    let last = from;
    // Each worker sends its next Put when its last one is answered; the first failure stops them all.
    const worker = async () => {
      while (left > 0) {
        left--;
        try {
          const { revision } = (await call("Put", { key, value: Buffer.alloc(0) }, true)).header;
          last = Math.max(last, revision);
        } catch (err) {
          left = 0;
          throw err;
        }
      }
    };
    const failed = (await Promise.allSettled(Array.from({ length: Math.min(inFlight, by) }, worker))).find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    // The transaction's own revision is `last + 1` unless someone else wrote meanwhile: the record is then lower than
    // the compaction, which only makes the servers ask etcd rather than answer from the record.
    const record = { key: Buffer.from(compactRevKey(etcdPrefix(options.prefix)), "latin1"), value: Buffer.from(String(last + 1)) };
    const to = (await call("Txn", { success: [{ request_delete_range: { key } }, { request_put: record }] }, true)).header.revision;
    await call("Compact", { revision: to, physical: false }, true);
    return { from, to };
  } finally {
    await client.close();
  }
}
