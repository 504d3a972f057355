// StorageRevocationList: revoked CSRs by issuer and serial, CertificateRevocations by serial, followed through the
// storage watch; unknown state per setting.
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { StorageRevocationList } from "../../../src/apiserver/auth/revocation-list.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import type { StorageEvent, WatchOptions } from "../../../src/apiserver/storage/types.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { decodePem } from "../../../src/pki/pem.js";
import { revocationIdOf, revocationKey } from "../../../src/pki/revocation-id.js";
import { issueCert, names } from "./fixtures.js";

const key = (pem: string) => revocationKey(revocationIdOf(decodePem(pem)[0]!.der));
const csrKey = (name: string) => `/${names.certificates}/certificatesigningrequests/${name}`;

function csrValue(name: string, pem: string, revoked?: string): string {
  const conditions = [{ type: "Approved", status: "True" }, ...(revoked ? [{ type: "Revoked", status: "True", reason: revoked }] : [])];
  return JSON.stringify({ metadata: { name }, spec: {}, status: { conditions, certificate: Buffer.from(pem).toString("base64") } });
}

const settle = () => new Promise((r) => setTimeout(r, 10));

describe("StorageRevocationList", () => {
  it("knows revocations stored before it started and those written after, and forgets a deleted CSR", async () => {
    const storage = new MemoryStorage();
    const [a, b, c] = await Promise.all([issueCert({ cn: "a" }), issueCert({ cn: "b" }), issueCert({ cn: "c" })]);
    await storage.create(csrKey("a"), csrValue("a", a.pem, "keyCompromise"));
    await storage.create(csrKey("b"), csrValue("b", b.pem));
    const list = new StorageRevocationList({ storage, names });
    await list.start();
    try {
      expect(list.check(key(a.pem))).toBe("x509: certificate has been revoked (keyCompromise; CertificateSigningRequest a)");
      expect(list.check(key(b.pem))).toBeUndefined();
      const stored = await storage.get(csrKey("b"));
      await storage.update(csrKey("b"), csrValue("b", b.pem, "superseded"), stored!.modRevision);
      await storage.create(csrKey("c"), csrValue("c", c.pem));
      await settle();
      expect(list.check(key(b.pem))).toMatch(/\(superseded; /);
      expect(list.check(key(c.pem))).toBeUndefined();
      await storage.delete(csrKey("a"));
      await settle();
      expect(list.check(key(a.pem))).toBeUndefined();
      expect(list.size).toBe(1);
    } finally {
      list.stop();
    }
  });

  it("refuses a serial named by a CertificateRevocation under any issuer, until every revocation of it is deleted", async () => {
    const storage = new MemoryStorage();
    const [a, b] = await Promise.all([issueCert({ cn: "a" }), issueCert({ cn: "b" })]);
    const serial = revocationIdOf(decodePem(a.pem)[0]!.der).serialHex;
    const revKey = (signer: string) => `/${names.certificates}/certificaterevocations/${signer}:${serial.toLowerCase()}`;
    const value = (signer: string, reason: string) =>
      JSON.stringify({ metadata: { name: `${signer}:${serial.toLowerCase()}` }, spec: { signerName: signer.replace(":", "/"), serialNumber: serial.toLowerCase(), reason } });
    await storage.create(revKey("example.com:one"), value("example.com:one", "keyCompromise"));
    const list = new StorageRevocationList({ storage, names });
    await list.start();
    try {
      expect(list.check(key(a.pem))).toBe(`x509: certificate has been revoked (keyCompromise; CertificateRevocation example.com:one:${serial.toLowerCase()})`);
      // The issuer part of the key does not matter: the object names a signer, not an issuer.
      expect(list.check(`00ff/${serial}`)).toMatch(/revoked \(keyCompromise; /);
      expect(list.check(key(b.pem))).toBeUndefined();
      await storage.create(revKey("example.com:two"), value("example.com:two", "superseded"));
      await settle();
      expect(list.check(key(a.pem))).toMatch(/\(superseded; CertificateRevocation example.com:two:/);
      // Deleting the later one leaves the serial refused, naming the one that is left.
      await storage.delete(revKey("example.com:two"));
      await settle();
      expect(list.check(key(a.pem))).toBe(`x509: certificate has been revoked (keyCompromise; CertificateRevocation example.com:one:${serial.toLowerCase()})`);
      await storage.delete(revKey("example.com:one"));
      await settle();
      expect(list.check(key(a.pem))).toBeUndefined();
      expect(list.size).toBe(0);
    } finally {
      list.stop();
    }
  });

  it("refuses every certificate while it is not loaded unless told to allow, and refuses a bad setting", async () => {
    const storage = new MemoryStorage();
    const a = await issueCert({ cn: "a" });
    expect(new StorageRevocationList({ storage, names }).check(key(a.pem))).toBe("x509: revocation status unknown: the revocation list has not been loaded yet");
    expect(new StorageRevocationList({ storage, names, whenUnavailable: "allow" }).check(key(a.pem))).toBeUndefined();
    expect(() => new StorageRevocationList({ storage, names, whenUnavailable: "maybe" as never })).toThrow(/whenUnavailable/);
  });
});

describe("StorageRevocationList when its watch breaks", () => {
  it("refuses while it lists again (deny), keeps retrying a failing list, and is current again once a list succeeds", async () => {
    const memory = new MemoryStorage();
    const clock = new FakeClock(0);
    const a = await issueCert({ cn: "a" });
    let breakWatch: ((err: Error) => void) | undefined;
    let listFails = false;
    // The real storage, with a watch the test can break and a list it can make fail.
    const storage = Object.assign(Object.create(memory) as MemoryStorage, {
      list: (prefix: string) => (listFails ? Promise.reject(new Error("disk gone")) : memory.list(prefix)),
      watch: (prefix: string, o: WatchOptions, onEvent: (e: StorageEvent) => void, onError?: (err: Error) => void) => {
        breakWatch = onError;
        return memory.watch(prefix, o, onEvent, onError);
      },
    });
    const deny = new StorageRevocationList({ storage, names, clock, retryMs: 1000 });
    await deny.start();
    try {
      expect(deny.check(key(a.pem))).toBeUndefined();
      listFails = true;
      breakWatch!(new Error("watch closed"));
      expect(deny.check(key(a.pem))).toBe("x509: revocation status unknown: its watch of the storage broke (watch closed)");
      await clock.advance(1000);
      await settle();
      expect(deny.check(key(a.pem))).toMatch(/^x509: revocation status unknown: its watch of the storage broke \(disk gone\)$/);
      listFails = false;
      await clock.advance(1000);
      await settle();
      expect(deny.check(key(a.pem))).toBeUndefined();
    } finally {
      deny.stop();
    }
  });
});
