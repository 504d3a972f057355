// Signing CA keys named by pkcs11: URIs in the controller-manager configuration stay URIs; file paths are resolved.
import { describe, expect, it } from "vitest";
import { parseControllerManagerConfig } from "../../src/config/controller-manager.js";

const URI = "pkcs11:token=platform-ca;object=client-ca?pin-source=file:/etc/platform/ca.pin";

describe("CSRSigningController KeyFile", () => {
  it("keeps a pkcs11: URI as written and resolves the certificate file", () => {
    const text = [
      "apiVersion: platformcontrollermanager.config.platform.io/v1alpha1",
      "kind: PlatformControllerManagerConfiguration",
      "CSRSigningController:",
      "  KubeAPIServerClientSignerConfiguration:",
      "    CertFile: pki/client-ca.crt",
      `    KeyFile: "${URI}"`,
      "  KubeletServingSignerConfiguration:",
      "    CertFile: pki/serving-ca.crt",
      "    KeyFile: pki/serving-ca.key",
    ].join("\n");
    const loaded = parseControllerManagerConfig(text, "/etc/platform/cm.yaml", { baseDir: "/etc/platform" });
    const files = [...loaded.signingFiles.values()].sort((a, b) => a.certFile.localeCompare(b.certFile));
    expect(files).toEqual([
      { certFile: "/etc/platform/pki/client-ca.crt", keyFile: URI },
      { certFile: "/etc/platform/pki/serving-ca.crt", keyFile: "/etc/platform/pki/serving-ca.key" },
    ]);
  });
});
