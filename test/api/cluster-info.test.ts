// cluster-info's signatures against upstream's own test vectors (cluster-bootstrap's jws_test.go, computed by
// go-jose), a second implementation (python3's hmac) for a kubeadm-format token, and the kubeconfig kubeadm publishes.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { clusterInfoKubeconfig, detachedSignature } from "../../src/api/cluster-info.js";

const CONTENT = "Hello from the other side. I must have called a thousand times.";

describe("detachedSignature", () => {
  it("matches upstream's vectors: a secret shorter than 32 bytes, empty content, an empty secret", () => {
    expect(detachedSignature(CONTENT, "joshua", "my voice is my passcode")).toBe("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8");
    expect(detachedSignature("", "joshua", "my voice is my passcode")).toBe("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk");
    expect(detachedSignature(CONTENT, "joshua", "")).toBe("eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8");
  });

  it("agrees with python's hmac over the JWS signing input, and differs for another secret, id or content", () => {
    const sig = detachedSignature(CONTENT, "abcdef", "0123456789abcdef");
    const script = [
      "import base64, hmac, hashlib, sys",
      "b = lambda x: base64.urlsafe_b64encode(x).rstrip(b'=')",
      "h = b(b'{\"alg\":\"HS256\",\"kid\":\"abcdef\"}')",
      "key = b'0123456789abcdef'.ljust(32, b'\\0')",
      "sys.stdout.write((h + b'..' + b(hmac.new(key, h + b'.' + b(sys.stdin.buffer.read()), hashlib.sha256).digest())).decode())",
    ].join("\n");
    expect(execFileSync("python3", ["-c", script], { input: CONTENT, encoding: "utf8" })).toBe(sig);
    expect(detachedSignature(CONTENT, "abcdef", "0123456789abcdee")).not.toBe(sig);
    expect(detachedSignature(CONTENT, "abcdeg", "0123456789abcdef")).not.toBe(sig);
    expect(detachedSignature(`${CONTENT} `, "abcdef", "0123456789abcdef")).not.toBe(sig);
  });
});

describe("clusterInfoKubeconfig", () => {
  it("holds one unnamed cluster with the server and the CA, and no user or context", () => {
    const doc = parseYaml(clusterInfoKubeconfig("https://10.0.0.1:6443", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"));
    expect(doc).toEqual({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "", cluster: { "certificate-authority-data": Buffer.from("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n").toString("base64"), server: "https://10.0.0.1:6443" } }],
      contexts: null,
      "current-context": "",
      preferences: {},
      users: null,
    });
  });
});
