// The secure request pipeline: authentication chain + impersonation, an authorizer, and the admission chain behind one Pipeline.
import type { GroupNames } from "../../api/group.js";
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { recordAuthenticator, recordImpersonator, recordRefusedLegacyToken, recordRequester, type Pipeline, type RequestCredentials } from "../pipeline.js";
import { AdmissionChain, admissionAttributes } from "./admission.js";
import type { AuthnRequest } from "./authn-chain.js";
import type { Authorizer } from "./authorizer.js";
import type { AuthnResult } from "./identity.js";
import { impersonate, type HeaderSource } from "./impersonation.js";

export interface AuthPipelineOptions {
  readonly authenticator: { authenticate(request: AuthnRequest): Promise<AuthnResult> };
  readonly authorizer: Authorizer;
  readonly admission: AdmissionChain;
  readonly names: GroupNames;
  readonly logger?: Logger;
}

/** Credentials as the HTTP layer may pass them; `headersDistinct` keeps repeated Impersonate-Group headers apart. */
export type PipelineCredentials = RequestCredentials & { readonly headersDistinct?: HeaderSource };

export function createAuthPipeline(options: AuthPipelineOptions): Pipeline {
  const { authenticator, authorizer, admission, names } = options;
  const logger = options.logger ?? silentLogger();
  return {
    async authenticate(request: PipelineCredentials): Promise<UserInfo | undefined> {
      const result = await authenticator.authenticate(request);
      if ("error" in result) {
        logger.debug({ remoteAddress: request.remoteAddress, reason: result.error }, "request not authenticated");
        const refusal = new PlatformError("UNAUTHORIZED", `Unauthorized: ${result.error}`);
        recordRefusedLegacyToken(refusal, result.invalidatedLegacyToken);
        throw refusal;
      }
      if (result.authenticator) recordAuthenticator(result.user, result.authenticator);
      // A refused impersonation is audited as its sender's request.
      const r = await impersonate(request.headersDistinct ?? (request.headers as HeaderSource), result.user, authorizer, names).catch((err: unknown) => {
        throw recordRequester(err, result.user);
      });
      if (r.impersonatedBy) {
        if (result.authenticator) recordAuthenticator(r.user, result.authenticator);
        recordImpersonator(r.user, r.impersonatedBy);
        logger.info({ user: r.user.username, groups: r.user.groups, impersonatedBy: r.impersonatedBy.username }, "request impersonates a user");
      }
      return r.user;
    },
    async authorize(attributes) {
      const d = await authorizer.authorize(attributes);
      return { allowed: d.allowed, ...(d.reason && { reason: d.reason }), ...(d.authorizer && { authorizer: d.authorizer }) };
    },
    admit(attributes, obj, old) {
      return admission.admit(admissionAttributes(attributes), obj, old);
    },
  };
}
