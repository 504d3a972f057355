// The well-known names (signers, token claim, user-info extra keys, label prefixes, node-client roles): the product's, or upstream's under k8s.io.
import { CsrConditionMessage } from "./conditions.js";

/**
 * Every name a server, its controllers and its commands must agree on besides the API groups. The API group suffix
 * picks the profile: `k8s.io` selects upstream's names (so kubelets and other upstream clients work unmodified); any
 * other suffix uses the product's names in a domain equal to the suffix (`platform.io/apiserver-client`).
 */
export interface NamingProfile {
  /** `product` or `upstream`: which set of names below. */
  readonly profile: "product" | "upstream";
  /** Domain of the well-known names: `platform.io` by default, `kubernetes.io` under `k8s.io`. */
  readonly domain: string;
  readonly signers: {
    readonly apiserverClient: string;
    readonly nodeagentClient: string;
    readonly nodeagentServing: string;
    readonly legacyUnknown: string;
  };
  /** Key of the private claim of ServiceAccount tokens (namespace, serviceaccount, pod, secret). */
  readonly tokenClaim: string;
  /** Prefix of the user-info extra keys the authenticators set (`<prefix>/credential-id`, `<prefix>/pod-name`). */
  readonly userExtraPrefix: string;
  /** Label marking the bootstrap RBAC objects (value `rbac-defaults`). */
  readonly bootstrappingLabel: string;
  /** Annotation an administrator sets to "false" to keep a bootstrap RBAC object as it is. */
  readonly autoupdateAnnotation: string;
  /** Annotation holding the manifest `apply` recorded last. */
  readonly lastAppliedAnnotation: string;
  /**
   * Typed Secrets, the annotations a token Secret names its ServiceAccount with (the token controller adds the
   * uid), and the label that invalidates a token Secret's token.
   */
  readonly secretTypes: {
    readonly tls: string;
    readonly serviceAccountToken: string;
    readonly serviceAccountNameAnnotation: string;
    readonly serviceAccountUidAnnotation: string;
    readonly legacyTokenInvalidSinceLabel: string;
    /** The day (UTC, YYYY-MM-DD) a token Secret's token last authenticated, kept by the server. */
    readonly legacyTokenLastUsedLabel: string;
  };
  /**
   * Long-lived ServiceAccount tokens kept in token Secrets: their `iss` (upstream's `kubernetes/serviceaccount`) and
   * the prefix of their claims (`kubernetes.io/serviceaccount/namespace`...).
   */
  readonly legacyToken: { readonly issuer: string; readonly claimPrefix: string };
  /**
   * Bootstrap tokens (`--enable-bootstrap-token-auth`): the namespace of their Secrets (`kube-system` under k8s.io,
   * `platform-system` otherwise), the Secrets' type (`bootstrap.kubernetes.io/token`), and the namespace anyone may
   * read the signed `cluster-info` ConfigMap in (`kube-public` under k8s.io, `platform-public` otherwise).
   */
  readonly bootstrapTokens: { readonly namespace: string; readonly secretType: string; readonly publicNamespace: string };
  /**
   * The bootstrap ClusterRoles the approver's SubjectAccessReview looks for: `nodeClient` grants
   * `certificatesigningrequests/nodeclient` (a first client certificate), `selfNodeClient` grants
   * `certificatesigningrequests/selfnodeclient` (a node renewing its own).
   */
  readonly roles: {
    readonly nodeClient: string;
    readonly selfNodeClient: string;
    /** Create and read CSRs, nothing else (upstream's `system:node-bootstrapper`, which kubeadm binds to its tokens). */
    readonly nodeBootstrapper: string;
    /** A built-in signer's approver role is this prefix, the signer's name after the domain, and `-approver`. */
    readonly signerApproverPrefix: string;
  };
  /** The Approved condition's message, by the subresource whose review allowed the node client request. */
  readonly approvalMessages: { readonly nodeclient: string; readonly selfnodeclient: string };
  /**
   * The ConfigMap the root CA publisher keeps in every namespace (its `ca.crt` verifies the API server), and the
   * annotation saying what it is for.
   */
  readonly rootCaConfigMap: { readonly name: string; readonly descriptionAnnotation: string; readonly description: string };
  /**
   * Namespaces the server creates at its first start besides `default` and `platform-system`: under k8s.io upstream's
   * (its components lease in kube-system and kube-node-lease, and read kube-public), none in the product's profile.
   */
  readonly systemNamespaces: readonly string[];
}

/** The suffix whose groups are upstream's, and so whose well-known names are upstream's too. */
export const UPSTREAM_GROUP_SUFFIX = "k8s.io";
const UPSTREAM_DOMAIN = "kubernetes.io";

/** Names built the same way in both profiles, from the domain. */
function domainNames(domain: string) {
  return {
    domain,
    tokenClaim: domain,
    userExtraPrefix: `authentication.${domain}`,
    bootstrappingLabel: `${domain}/bootstrapping`,
    autoupdateAnnotation: `rbac.authorization.${domain}/autoupdate`,
    secretTypes: {
      tls: `${domain}/tls`,
      serviceAccountToken: `${domain}/service-account-token`,
      serviceAccountNameAnnotation: `${domain}/service-account.name`,
      serviceAccountUidAnnotation: `${domain}/service-account.uid`,
      legacyTokenInvalidSinceLabel: `${domain}/legacy-token-invalid-since`,
      legacyTokenLastUsedLabel: `${domain}/legacy-token-last-used`,
    },
    legacyToken: { issuer: `${domain.split(".")[0]}/serviceaccount`, claimPrefix: `${domain}/serviceaccount` },
  };
}

/** Where bootstrap token Secrets live and their type, from the domain and the profile's system namespace. */
function bootstrapTokens(domain: string, namespace: string, publicNamespace: string) {
  return { namespace, secretType: `bootstrap.${domain}/token`, publicNamespace };
}

/** The profile of a (valid) group suffix. */
export function namingProfile(suffix: string): NamingProfile {
  if (suffix === UPSTREAM_GROUP_SUFFIX) {
    const d = UPSTREAM_DOMAIN;
    const csrRole = `system:certificates.${suffix}:certificatesigningrequests`;
    return {
      profile: "upstream",
      ...domainNames(d),
      signers: {
        apiserverClient: `${d}/kube-apiserver-client`,
        nodeagentClient: `${d}/kube-apiserver-client-kubelet`,
        nodeagentServing: `${d}/kubelet-serving`,
        legacyUnknown: `${d}/legacy-unknown`,
      },
      lastAppliedAnnotation: `kubectl.${d}/last-applied-configuration`,
      roles: { nodeClient: `${csrRole}:nodeclient`, selfNodeClient: `${csrRole}:selfnodeclient`, nodeBootstrapper: "system:node-bootstrapper", signerApproverPrefix: `system:certificates.${suffix}:` },
      approvalMessages: {
        nodeclient: "Auto approving kubelet client certificate after SubjectAccessReview.",
        selfnodeclient: "Auto approving self kubelet client certificate after SubjectAccessReview.",
      },
      rootCaConfigMap: {
        name: "kube-root-ca.crt",
        descriptionAnnotation: `${d}/description`,
        description:
          "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
      },
      systemNamespaces: ["kube-system", "kube-public", "kube-node-lease"],
      bootstrapTokens: bootstrapTokens(d, "kube-system", "kube-public"),
    };
  }
  return {
    profile: "product",
    ...domainNames(suffix),
    signers: {
      apiserverClient: `${suffix}/apiserver-client`,
      nodeagentClient: `${suffix}/apiserver-client-nodeagent`,
      nodeagentServing: `${suffix}/nodeagent-serving`,
      legacyUnknown: `${suffix}/legacy-unknown`,
    },
    lastAppliedAnnotation: `platformctl.${suffix}/last-applied-configuration`,
    roles: {
      nodeClient: "platform-ca:nodeagent-bootstrapper",
      selfNodeClient: "platform-ca:nodeagent-selfnodeclient",
      nodeBootstrapper: "platform-ca:node-bootstrapper",
      signerApproverPrefix: "platform-ca:",
    },
    approvalMessages: { nodeclient: CsrConditionMessage.AutoApproved, selfnodeclient: CsrConditionMessage.AutoApproved },
    rootCaConfigMap: {
      name: "platform-root-ca.crt",
      descriptionAnnotation: `${suffix}/description`,
      description: "Contains a CA bundle that verifies the API server's serving certificate.",
    },
    systemNamespaces: [],
    bootstrapTokens: bootstrapTokens(suffix, "platform-system", "platform-public"),
  };
}
