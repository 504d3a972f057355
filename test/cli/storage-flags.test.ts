// The storage flags of `apiserver` and `up`: SQLite unless etcd is named, and one clear line for each mistake.
import { describe, expect, it } from "vitest";
import { storageBackend, type StorageFlags } from "../../src/cli/storage-flags.js";
import { tempFile } from "../fixtures/temp-dir.js";

describe("storage flags", () => {
  it("keeps SQLite by default and picks etcd3 from --etcd-servers, reading the TLS files", async () => {
    expect(await storageBackend({})).toEqual({ kind: "sqlite" });
    const ca = tempFile("ca.crt", "CA PEM");
    const backend = await storageBackend({ etcdServers: "https://10.0.0.1:2379, https://10.0.0.2:2379", etcdCafile: ca, etcdPrefix: "/pca" });
    expect(backend).toEqual({ kind: "etcd3", etcd: { endpoints: ["https://10.0.0.1:2379", "https://10.0.0.2:2379"], tls: { ca: Buffer.from("CA PEM") }, prefix: "/pca" } });
  });

  it.each<[StorageFlags, string]>([
    [{ storageBackend: "etcd2" }, '--storage-backend must be one of sqlite, etcd3, got "etcd2"'],
    [{ storageBackend: "etcd3" }, "--storage-backend etcd3 needs --etcd-servers"],
    [{ storageBackend: "sqlite", etcdServers: "https://a:2379" }, "--storage-backend sqlite does not use --etcd-servers"],
    [{ etcdServers: "10.0.0.1:2379" }, 'expected --etcd-servers to list URLs like https://127.0.0.1:2379, got "10.0.0.1:2379"'],
    [{ etcdServers: "https://a:2379", etcdCertfile: "c.crt" }, "--etcd-certfile and --etcd-keyfile go together"],
    [{ etcdServers: "https://a:2379", etcdPrefix: "pca" }, 'expected --etcd-prefix to be a path like /platform-ca, got "pca"'],
    [{ etcdServers: "https://a:2379", etcdCafile: "/nonexistent/ca.crt" }, "cannot read --etcd-cafile /nonexistent/ca.crt: ENOENT"],
  ])("refuses %j", async (flags, message) => {
    await expect(storageBackend(flags)).rejects.toThrow(message);
  });
});
