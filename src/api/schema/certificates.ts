// Field schemas of the certificates group: CertificateSigningRequest and ClusterTrustBundle, described from seed 000,
// and CertificateRevocation (revocation by serial, docs/revocation.md).
import * as s from "./nodes.js";
import { extra, kind, type KindSchemaDefinition } from "./shared.js";

const csrCondition = s.object(
  {
    type: s.tag(1, s.string("Type of the condition; known types are Approved, Denied and Failed.")),
    status: s.tag(6, s.string("True, False or Unknown; Approved, Denied and Failed only allow True.")),
    reason: s.tag(2, s.string("Short reason for the condition's last transition.")),
    message: s.tag(3, s.string("Human-readable detail of the last transition.")),
    lastUpdateTime: s.tag(4, s.time("Last update of this condition.")),
    lastTransitionTime: s.tag(5, s.time("Last change of status; defaults to now when a new type is added or a status changes.")),
  },
  { required: ["type", "status"] },
);

const csrSpec = s.object(
  {
    request: s.tag(1, s.bytes("An x509 certificate signing request in a CERTIFICATE REQUEST PEM block, base64-encoded in JSON and YAML.")),
    signerName: s.tag(7, s.string("Qualified name of the signer asked to sign the request; list and watch can select on it.")),
    expirationSeconds: s.tag(8, s.int32("Requested certificate lifetime in seconds, at least 600; the signer may issue another lifetime.")),
    usages: s.tag(5, s.atomicList(s.string(), "Requested key usages, e.g. digital signature, key encipherment, client auth.")),
    username: s.tag(2, s.string("Name of the user who created the request; set by the server; immutable.")),
    uid: s.tag(3, s.string("UID of the user who created the request; set by the server; immutable.")),
    groups: s.tag(4, s.atomicList(s.string(), "Groups of the user who created the request; set by the server; immutable.")),
    extra: s.tag(6, s.describe(extra, "Extra attributes of the user who created the request; set by the server; immutable.")),
  },
  { required: ["request", "signerName"], description: "The request; immutable after creation." },
);

const csrStatus = s.object(
  {
    conditions: s.tag(1, s.mapList(csrCondition, ["type"], { description: "Approval, denial and failure of the request, one per type." })),
    certificate: s.tag(2, s.bytes("The issued certificate in PEM, set by the signer through /status once Approved; immutable once set.")),
  },
  { description: "Approval, failure and the issued certificate." },
);

export const certificateSigningRequest: KindSchemaDefinition = kind(
  "certificates",
  "CertificateSigningRequest",
  { spec: s.tag(2, csrSpec), status: s.tag(3, csrStatus) },
  { required: ["spec"], description: "A request for an x509 certificate, approved and then issued by the signer it names." },
);

export const clusterTrustBundle: KindSchemaDefinition = kind(
  "certificates",
  "ClusterTrustBundle",
  {
    spec: s.object(
      {
        signerName: s.string("Optional signer the bundle belongs to; a signer may have several bundles; immutable."),
        trustBundle: s.string("PEM bundle of X.509 trust anchors: CA certificates only, no duplicates and no block headers."),
      },
      { required: ["trustBundle"], description: "The signer and its trust anchors." },
    ),
  },
  { required: ["spec"], description: "A cluster-scoped set of X.509 trust anchors, optionally of one signer." },
);

export const certificateRevocation: KindSchemaDefinition = kind(
  "certificates",
  "CertificateRevocation",
  {
    spec: s.object(
      {
        signerName: s.string("Signer whose CA issued the certificate; needs the revoke verb on it; immutable."),
        serialNumber: s.string("Serial number of the certificate in hex, case-insensitive, ':' separators allowed; stored lower-case without separators; immutable."),
        reason: s.string("RFC 5280 CRLReason name: unspecified, keyCompromise, cACompromise, affiliationChanged, superseded, cessationOfOperation, privilegeWithdrawn or aACompromise; immutable."),
        message: s.string("Why, in words; immutable."),
      },
      { required: ["signerName", "serialNumber", "reason"], description: "The certificate revoked and why; immutable after creation." },
    ),
  },
  { required: ["spec"], description: "The revocation of a certificate by signer and serial number, for certificates issued outside the API. Named <signerName with '/' as ':'>:<serial>." },
);
