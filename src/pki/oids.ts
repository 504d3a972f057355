// Object identifiers used by the PKI code, and the short names of distinguished-name attribute types.

export const OID = {
  // Name attribute types (X.520, RFC 4519, PKCS#9)
  commonName: "2.5.4.3",
  surname: "2.5.4.4",
  serialNumber: "2.5.4.5",
  countryName: "2.5.4.6",
  localityName: "2.5.4.7",
  stateOrProvinceName: "2.5.4.8",
  streetAddress: "2.5.4.9",
  organizationName: "2.5.4.10",
  organizationalUnitName: "2.5.4.11",
  title: "2.5.4.12",
  postalCode: "2.5.4.17",
  givenName: "2.5.4.42",
  initials: "2.5.4.43",
  generationQualifier: "2.5.4.44",
  dnQualifier: "2.5.4.46",
  pseudonym: "2.5.4.65",
  domainComponent: "0.9.2342.19200300.100.1.25",
  userId: "0.9.2342.19200300.100.1.1",
  emailAddress: "1.2.840.113549.1.9.1",

  // PKCS#9 / Microsoft CSR attributes
  extensionRequest: "1.2.840.113549.1.9.14",
  msExtensionRequest: "1.3.6.1.4.1.311.2.1.14",
  challengePassword: "1.2.840.113549.1.9.7",

  // Public key algorithms
  rsaEncryption: "1.2.840.113549.1.1.1",
  rsassaPss: "1.2.840.113549.1.1.10",
  ecPublicKey: "1.2.840.10045.2.1",
  ed25519: "1.3.101.112",
  ed448: "1.3.101.113",
  x25519: "1.3.101.110",
  x448: "1.3.101.111",
  dsa: "1.2.840.10040.4.1",

  // Named curves
  p256: "1.2.840.10045.3.1.7",
  p384: "1.3.132.0.34",
  p521: "1.3.132.0.35",
  secp256k1: "1.3.132.0.10",

  // Signature algorithms
  md5WithRsa: "1.2.840.113549.1.1.4",
  sha1WithRsa: "1.2.840.113549.1.1.5",
  sha224WithRsa: "1.2.840.113549.1.1.14",
  sha256WithRsa: "1.2.840.113549.1.1.11",
  sha384WithRsa: "1.2.840.113549.1.1.12",
  sha512WithRsa: "1.2.840.113549.1.1.13",
  ecdsaWithSha1: "1.2.840.10045.4.1",
  ecdsaWithSha224: "1.2.840.10045.4.3.1",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  ecdsaWithSha384: "1.2.840.10045.4.3.3",
  ecdsaWithSha512: "1.2.840.10045.4.3.4",
  dsaWithSha1: "1.2.840.10040.4.3",
  dsaWithSha256: "2.16.840.1.101.3.4.3.2",
  mgf1: "1.2.840.113549.1.1.8",

  // Hash algorithms
  sha1: "1.3.14.3.2.26",
  sha256: "2.16.840.1.101.3.4.2.1",
  sha384: "2.16.840.1.101.3.4.2.2",
  sha512: "2.16.840.1.101.3.4.2.3",

  // Certificate extensions
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  cRLNumber: "2.5.29.20",
  cRLReasonCode: "2.5.29.21",
  nameConstraints: "2.5.29.30",
  cRLDistributionPoints: "2.5.29.31",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
} as const;

/** Short names of Name attribute types, used in RFC 4514 text and NameAttribute.shortName. */
export const NAME_ATTRIBUTE_SHORT_NAMES: Readonly<Record<string, string>> = {
  [OID.commonName]: "CN",
  [OID.surname]: "SN",
  [OID.serialNumber]: "SERIALNUMBER",
  [OID.countryName]: "C",
  [OID.localityName]: "L",
  [OID.stateOrProvinceName]: "ST",
  [OID.streetAddress]: "STREET",
  [OID.organizationName]: "O",
  [OID.organizationalUnitName]: "OU",
  [OID.title]: "T",
  [OID.postalCode]: "POSTALCODE",
  [OID.givenName]: "GN",
  [OID.initials]: "initials",
  [OID.generationQualifier]: "generationQualifier",
  [OID.dnQualifier]: "dnQualifier",
  [OID.pseudonym]: "pseudonym",
  [OID.domainComponent]: "DC",
  [OID.userId]: "UID",
  [OID.emailAddress]: "E",
};

/** Readable names of signature and key algorithms, for error messages. */
export const ALGORITHM_NAMES: Readonly<Record<string, string>> = {
  [OID.rsaEncryption]: "rsaEncryption",
  [OID.rsassaPss]: "RSASSA-PSS",
  [OID.ecPublicKey]: "id-ecPublicKey",
  [OID.ed25519]: "Ed25519",
  [OID.ed448]: "Ed448",
  [OID.x25519]: "X25519",
  [OID.x448]: "X448",
  [OID.dsa]: "DSA",
  [OID.secp256k1]: "secp256k1",
  [OID.md5WithRsa]: "md5WithRSAEncryption",
  [OID.sha1WithRsa]: "sha1WithRSAEncryption",
  [OID.sha224WithRsa]: "sha224WithRSAEncryption",
  [OID.sha256WithRsa]: "sha256WithRSAEncryption",
  [OID.sha384WithRsa]: "sha384WithRSAEncryption",
  [OID.sha512WithRsa]: "sha512WithRSAEncryption",
  [OID.ecdsaWithSha1]: "ecdsa-with-SHA1",
  [OID.ecdsaWithSha224]: "ecdsa-with-SHA224",
  [OID.ecdsaWithSha256]: "ecdsa-with-SHA256",
  [OID.ecdsaWithSha384]: "ecdsa-with-SHA384",
  [OID.ecdsaWithSha512]: "ecdsa-with-SHA512",
  [OID.dsaWithSha1]: "dsa-with-SHA1",
  [OID.dsaWithSha256]: "dsa-with-SHA256",
  [OID.sha1]: "SHA-1",
  [OID.sha256]: "SHA-256",
  [OID.sha384]: "SHA-384",
  [OID.sha512]: "SHA-512",
};

/** `name (oid)` when the OID is known, else the dotted OID. */
export function describeOid(oid: string): string {
  const name = ALGORITHM_NAMES[oid] ?? NAME_ATTRIBUTE_SHORT_NAMES[oid];
  return name === undefined ? oid : `${name} (${oid})`;
}
