// Library entry point of platform-ca: PKI primitives, signers and errors for programs that embed the CA.
export * from "./errors.js";
export * from "./api/group.js";
export type * from "./pki/types.js";
export type * from "../signers/signer.js";
