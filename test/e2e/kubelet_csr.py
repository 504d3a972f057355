# A kubelet's TLS bootstrap with the official Python client: a CSR under upstream's names, issued, verified against the published bundle.
# Usage: kubelet_csr.py KUBECONFIG BOOTSTRAP_TOKEN NODE_NAME; prints one JSON object of what it saw, exit 0 once verified.
import base64
import datetime
import json
import os
import sys
import tempfile
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client, config

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
TIMEOUT_S = 30


def api_as(kubeconfig, token=None, cert_file=None, key_file=None):
    """The server address and CA from the admin kubeconfig, but the given token or client certificate as the only credential."""
    admin = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=admin)
    cfg = client.Configuration()
    cfg.host = admin.host
    cfg.ssl_ca_cert = admin.ssl_ca_cert
    if token:
        cfg.api_key = {"authorization": "Bearer " + token}
    cfg.cert_file = cert_file
    cfg.key_file = key_file
    return client.ApiClient(cfg)


def kubelet_csr(node):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"), x509.NameAttribute(NameOID.COMMON_NAME, "system:node:" + node)])
    request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return key, request.public_bytes(serialization.Encoding.PEM)


def until(what, read):
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        value = read()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit("timed out waiting for " + what)


def pem_blocks(bundle):
    end = "-----END CERTIFICATE-----"
    return [x509.load_pem_x509_certificate((block + end).encode()) for block in bundle.split(end) if "BEGIN CERTIFICATE" in block]


def signed_by(cert, ca):
    """cryptography 38 has no path verifier: check the signature with the CA's key, the issuer name and the validity."""
    key = ca.public_key()
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
        else:
            key.verify(cert.signature, cert.tbs_certificate_bytes)
    except Exception:
        return False
    now = datetime.datetime.utcnow()
    return cert.issuer == ca.subject and ca.not_valid_before <= now <= ca.not_valid_after


def request_certificate(api, node, name):
    """Creates a kubelet-shaped CSR and waits for its certificate: (key, created CSR, issued CSR, certificate)."""
    certificates = client.CertificatesV1Api(api)
    key, pem = kubelet_csr(node)
    body = client.V1CertificateSigningRequest(
        api_version="certificates.k8s.io/v1",
        kind="CertificateSigningRequest",
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1CertificateSigningRequestSpec(request=base64.b64encode(pem).decode(), signer_name=SIGNER, usages=["digital signature", "client auth"]),
    )
    created = certificates.create_certificate_signing_request(body)
    csr = until("the certificate of " + name, lambda: (lambda c: c if c.status and c.status.certificate else None)(certificates.read_certificate_signing_request(name)))
    return key, created, csr, x509.load_pem_x509_certificate(base64.b64decode(csr.status.certificate))


def renewal_message(kubeconfig, key, cert, node):
    """The node renews with its new client certificate, as a kubelet rotates it: the approval message of that request."""
    with tempfile.TemporaryDirectory() as d:
        cert_file, key_file = os.path.join(d, "node.crt"), os.path.join(d, "node.key")
        with open(cert_file, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_file, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        _, created, csr, _ = request_certificate(api_as(kubeconfig, cert_file=cert_file, key_file=key_file), node, "node-csr-" + node + "-renewal")
    return created.spec.username, [c.message for c in csr.status.conditions if c.type == "Approved"]


def main(kubeconfig, token, node):
    api = api_as(kubeconfig, token=token)
    key, created, csr, cert = request_certificate(api, node, "node-csr-" + node)

    def published():
        listed = client.CustomObjectsApi(api).list_cluster_custom_object("certificates.k8s.io", "v1beta1", "clustertrustbundles")
        return [b for b in listed["items"] if b["spec"].get("signerName") == SIGNER]

    bundles = until("the trust bundle of " + SIGNER, published)
    anchors = pem_blocks(bundles[0]["spec"]["trustBundle"])
    now = datetime.datetime.utcnow()
    print(json.dumps({
        "requester": created.spec.username,
        "groups": created.spec.groups,
        "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in csr.status.conditions],
        "subject": cert.subject.rfc4514_string(),
        "sameKey": cert.public_key().public_numbers() == key.public_key().public_numbers(),
        "clientAuth": x509.ExtendedKeyUsageOID.CLIENT_AUTH in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value,
        "valid": cert.not_valid_before <= now <= cert.not_valid_after,
        "bundle": bundles[0]["metadata"]["name"],
        "verifiedBy": [a.subject.rfc4514_string() for a in anchors if signed_by(cert, a)],
        "renewal": renewal_message(kubeconfig, key, cert, node),
    }))


if __name__ == "__main__":
    main(*sys.argv[1:4])
