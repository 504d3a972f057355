// The subset of etcd's v3 gRPC API (etcdserverpb/rpc.proto, mvccpb/kv.proto, etcd 3.4) the etcd backend uses, as a
// protobuf JSON descriptor: names, field numbers and types copied from those files, so the wire format is theirs.
// Kept as code rather than a .proto file so the build ships it without a copy step.
import { fromJSON } from "@grpc/proto-loader";
import { loadPackageDefinition, type GrpcObject } from "@grpc/grpc-js";

const bytes = (id: number) => ({ type: "bytes", id });
const int64 = (id: number) => ({ type: "int64", id });
const bool = (id: number) => ({ type: "bool", id });
const msg = (type: string, id: number) => ({ type, id });
const repeated = (type: string, id: number) => ({ rule: "repeated", type, id });

const header = msg("ResponseHeader", 1);

const descriptor = {
  nested: {
    etcdserverpb: {
      nested: {
        KV: {
          methods: {
            Range: { requestType: "RangeRequest", responseType: "RangeResponse" },
            Put: { requestType: "PutRequest", responseType: "PutResponse" },
            DeleteRange: { requestType: "DeleteRangeRequest", responseType: "DeleteRangeResponse" },
            Txn: { requestType: "TxnRequest", responseType: "TxnResponse" },
            Compact: { requestType: "CompactionRequest", responseType: "CompactionResponse" },
          },
        },
        Lease: {
          methods: { LeaseGrant: { requestType: "LeaseGrantRequest", responseType: "LeaseGrantResponse" } },
        },
        Watch: {
          methods: { Watch: { requestType: "WatchRequest", requestStream: true, responseType: "WatchResponse", responseStream: true } },
        },
        ResponseHeader: { fields: { cluster_id: { type: "uint64", id: 1 }, member_id: { type: "uint64", id: 2 }, revision: int64(3), raft_term: { type: "uint64", id: 4 } } },
        KeyValue: { fields: { key: bytes(1), create_revision: int64(2), mod_revision: int64(3), version: int64(4), value: bytes(5), lease: int64(6) } },
        Event: { fields: { type: msg("EventType", 1), kv: msg("KeyValue", 2), prev_kv: msg("KeyValue", 3) }, nested: { EventType: { values: { PUT: 0, DELETE: 1 } } } },
        RangeRequest: {
          fields: { key: bytes(1), range_end: bytes(2), limit: int64(3), revision: int64(4), sort_order: msg("SortOrder", 5), sort_target: msg("SortTarget", 6), serializable: bool(7), keys_only: bool(8), count_only: bool(9) },
          nested: { SortOrder: { values: { NONE: 0, ASCEND: 1, DESCEND: 2 } }, SortTarget: { values: { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } } },
        },
        RangeResponse: { fields: { header, kvs: repeated("KeyValue", 2), more: bool(3), count: int64(4) } },
        PutRequest: { fields: { key: bytes(1), value: bytes(2), lease: int64(3), prev_kv: bool(4), ignore_value: bool(5), ignore_lease: bool(6) } },
        PutResponse: { fields: { header, prev_kv: msg("KeyValue", 2) } },
        DeleteRangeRequest: { fields: { key: bytes(1), range_end: bytes(2), prev_kv: bool(3) } },
        DeleteRangeResponse: { fields: { header, deleted: int64(2), prev_kvs: repeated("KeyValue", 3) } },
        RequestOp: {
          oneofs: { request: { oneof: ["request_range", "request_put", "request_delete_range"] } },
          fields: { request_range: msg("RangeRequest", 1), request_put: msg("PutRequest", 2), request_delete_range: msg("DeleteRangeRequest", 3) },
        },
        ResponseOp: {
          oneofs: { response: { oneof: ["response_range", "response_put", "response_delete_range"] } },
          fields: { response_range: msg("RangeResponse", 1), response_put: msg("PutResponse", 2), response_delete_range: msg("DeleteRangeResponse", 3) },
        },
        Compare: {
          oneofs: { target_union: { oneof: ["version", "create_revision", "mod_revision", "value"] } },
          fields: { result: msg("CompareResult", 1), target: msg("CompareTarget", 2), key: bytes(3), version: int64(4), create_revision: int64(5), mod_revision: int64(6), value: bytes(7) },
          nested: { CompareResult: { values: { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } }, CompareTarget: { values: { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } } },
        },
        TxnRequest: { fields: { compare: repeated("Compare", 1), success: repeated("RequestOp", 2), failure: repeated("RequestOp", 3) } },
        TxnResponse: { fields: { header, succeeded: bool(2), responses: repeated("ResponseOp", 3) } },
        LeaseGrantRequest: { fields: { TTL: int64(1), ID: int64(2) } },
        LeaseGrantResponse: { fields: { header, ID: int64(2), TTL: int64(3), error: { type: "string", id: 4 } } },
        CompactionRequest: { fields: { revision: int64(1), physical: bool(2) } },
        CompactionResponse: { fields: { header } },
        WatchRequest: {
          oneofs: { request_union: { oneof: ["create_request", "cancel_request"] } },
          fields: { create_request: msg("WatchCreateRequest", 1), cancel_request: msg("WatchCancelRequest", 2) },
        },
        WatchCreateRequest: { fields: { key: bytes(1), range_end: bytes(2), start_revision: int64(3), progress_notify: bool(4), prev_kv: bool(6), watch_id: int64(7) } },
        WatchCancelRequest: { fields: { watch_id: int64(1) } },
        WatchResponse: { fields: { header, watch_id: int64(2), created: bool(3), canceled: bool(4), compact_revision: int64(5), cancel_reason: { type: "string", id: 6 }, events: repeated("Event", 11) } },
      },
    },
  },
};

/**
 * The generated service constructors (`KV`, `Lease`, `Watch`). Revisions decode as numbers (etcd's stay far below
 * 2^53); with `longs: "string"` 64-bit fields decode as decimal strings instead, for lease IDs, which use all 64 bits.
 */
export function etcdServices(longs: "number" | "string" = "number"): GrpcObject {
  // The literal is protobufjs JSON; its TypeScript shape is too loose for the INamespace union to infer.
  const definition = fromJSON(descriptor as Parameters<typeof fromJSON>[0], { keepCase: true, longs: longs === "number" ? Number : String, enums: String, defaults: true, oneofs: true });
  return loadPackageDefinition(definition)["etcdserverpb"] as GrpcObject;
}

export interface EtcdKeyValue {
  key: Buffer;
  create_revision: number;
  mod_revision: number;
  version: number;
  value: Buffer;
}

export interface EtcdHeader {
  revision: number;
}

export interface EtcdEvent {
  type: "PUT" | "DELETE";
  kv: EtcdKeyValue;
  prev_kv: EtcdKeyValue | null;
}

export interface EtcdWatchResponse {
  header: EtcdHeader;
  watch_id: number;
  created: boolean;
  canceled: boolean;
  compact_revision: number;
  cancel_reason: string;
  events: EtcdEvent[];
}
