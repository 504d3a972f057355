// `auth can-i --list`'s table: rules broken down, plain ones merged and sorted as kubectl prints them.
import { describe, expect, it } from "vitest";
import { rulesTable } from "../../../src/cli/ctl/auth.js";

describe("rulesTable", () => {
  const status = {
    resourceRules: [
      { verbs: ["watch", "get"], apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests", "certificatesigningrequests/approval"] },
      { verbs: ["list"], apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"] },
      { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["b", "a"] },
    ],
    nonResourceRules: [{ verbs: ["get"], nonResourceURLs: ["/version", "/api"] }],
    incomplete: false,
  };

  it("breaks rules down per group, resource, name and URL, merges the verbs of one resource and sorts by kubectl's rule text", () => {
    expect(rulesTable(status)).toBe(
      [
        "Resources                                                 Non-Resource URLs   Resource Names   Verbs",
        "certificatesigningrequests.certificates.k8s.io            []                  []               [get watch list]",
        "certificatesigningrequests.certificates.k8s.io/approval   []                  []               [get watch]",
        "                                                          [/api]              []               [get]",
        "                                                          [/version]          []               [get]",
        "secrets                                                   []                  [a]              [get]",
        "secrets                                                   []                  [b]              [get]",
        "",
      ].join("\n"),
    );
  });

  it("sizes columns by their cells alone without headers, never under kubectl's minimum", () => {
    const out = rulesTable({ resourceRules: [], nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }], incomplete: false }, false);
    expect(out).toBe("      [*]   []    [*]\n");
  });
});
