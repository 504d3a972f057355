// The gRPC client of a KMS v2 plugin on a unix socket: Status, Encrypt, Decrypt, each bounded by the configured timeout.
import { performance } from "node:perf_hooks";
import { createRequire } from "node:module";
import type { Client, GrpcObject, ServiceClientConstructor, ServiceError } from "@grpc/grpc-js";
import { KMS_V2_DESCRIPTOR, type EncryptResponse, type StatusResponse } from "./kms-wire.js";
import { kmsMetrics } from "./kms-metrics.js";

// gRPC is loaded on first use, not at import: every server start reads this module (the encryption config checks
// endpoints with socketPath), and only one with a KMS provider should pay for gRPC's ~60 modules.
const requireLazily = createRequire(import.meta.url);
const grpc = (): typeof import("@grpc/grpc-js") => requireLazily("@grpc/grpc-js") as typeof import("@grpc/grpc-js");
const protoLoader = (): typeof import("@grpc/proto-loader") => requireLazily("@grpc/proto-loader") as typeof import("@grpc/proto-loader");

/** Bytes as Buffers, fields under their proto names (key_id), every field present: what both ends read. */
export const PROTO_OPTIONS = { keepCase: true, defaults: true } as const;

/** The `v2.KeyManagementService` constructor, for clients here and the test plugin's server. */
export function kmsServiceConstructor(): ServiceClientConstructor {
  const pkg = grpc().loadPackageDefinition(protoLoader().fromJSON(KMS_V2_DESCRIPTOR as never, PROTO_OPTIONS));
  return (pkg.v2 as GrpcObject).KeyManagementService as ServiceClientConstructor;
}

/** `unix:///run/kms.sock` → `/run/kms.sock`; undefined when the endpoint is not a unix socket path. */
export function socketPath(endpoint: string): string | undefined {
  const m = /^unix:\/\/(\/.+)$/.exec(endpoint);
  return m?.[1];
}

export class KmsClient {
  private readonly client: Client & Record<string, (req: unknown, opts: { deadline: number }, cb: (err: ServiceError | null, res: unknown) => void) => void>;

  constructor(
    readonly endpoint: string,
    private readonly timeoutMs: number,
    /** The provider's name: each call is then timed in upstream's KMS metrics under it. */
    private readonly provider?: string,
  ) {
    const Service = kmsServiceConstructor();
    // Short reconnect back-off: a plugin restarted after a crash is used again within a second, not after minutes.
    this.client = new Service(`unix:${socketPath(endpoint)}`, grpc().credentials.createInsecure(), {
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
    }) as never;
  }

  private call<T>(method: string, request: object): Promise<T> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      this.client[method]!(request, { deadline: Date.now() + this.timeoutMs }, (err, res) => {
        // The gRPC code stays on the error: upstream's metrics label a failed call, and a read it failed, by it.
        const failed = err ? Object.assign(new Error(`the KMS plugin at ${this.endpoint} did not answer ${method}: ${err.details || err.message}`), { grpcCode: err.code }) : undefined;
        if (this.provider !== undefined) kmsMetrics.call(this.provider, method, (performance.now() - started) / 1000, failed);
        if (failed) reject(failed);
        else resolve(res as T);
      });
    });
  }

  status(): Promise<StatusResponse> {
    return this.call("Status", {});
  }

  encrypt(uid: string, plaintext: Buffer): Promise<EncryptResponse> {
    return this.call("Encrypt", { plaintext, uid });
  }

  async decrypt(uid: string, request: { ciphertext: Buffer; key_id: string; annotations: Readonly<Record<string, Buffer>> }): Promise<Buffer> {
    const res = await this.call<{ plaintext: Buffer }>("Decrypt", { ...request, uid });
    return res.plaintext;
  }

  close(): void {
    this.client.close();
  }
}
