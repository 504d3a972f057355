// Field schema of SelfSubjectRulesReview, with upstream's protobuf field numbers (kubectl sends it as protobuf).
import * as s from "./nodes.js";
import { kind, type KindSchemaDefinition } from "./shared.js";

const resourceRule = s.object(
  {
    verbs: s.tag(1, s.atomicList(s.string(), "Verbs allowed on the resources; * for all.")),
    apiGroups: s.tag(2, s.atomicList(s.string(), "API groups of the resources; * for all.")),
    resources: s.tag(3, s.atomicList(s.string(), "Resources the rule applies to; * for all.")),
    resourceNames: s.tag(4, s.atomicList(s.string(), "Names the rule is limited to; empty for every name.")),
  },
  { required: ["verbs"] },
);

const nonResourceRule = s.object(
  {
    verbs: s.tag(1, s.atomicList(s.string(), "Verbs allowed on the URLs; * for all.")),
    nonResourceURLs: s.tag(2, s.atomicList(s.string(), "Non-resource URLs the rule allows; a trailing * matches a prefix.")),
  },
  { required: ["verbs"] },
);

export const selfSubjectRulesReview: KindSchemaDefinition = kind(
  "authorization",
  "SelfSubjectRulesReview",
  {
    spec: s.tag(
      2,
      s.object({ namespace: s.tag(1, s.string("Namespace to list the rules of.")) }, { description: "The namespace to list the rules of." }),
    ),
    status: s.tag(
      3,
      s.object(
        {
          resourceRules: s.tag(1, s.atomicList(resourceRule, "What the user may do to resources in the namespace.")),
          nonResourceRules: s.tag(2, s.atomicList(nonResourceRule, "What the user may do to non-resource URLs.")),
          incomplete: s.tag(3, s.boolean("Whether the rules are incomplete (an authorizer could not list its rules).")),
          evaluationError: s.tag(4, s.string("Why the rules are incomplete, when they are.")),
        },
        { required: ["resourceRules", "nonResourceRules", "incomplete"], description: "The answer, filled by the server." },
      ),
    ),
  },
  { required: ["spec"], description: "Asks what the requesting user may do in a namespace; answered in status, never stored." },
);
