// `platformctl auth can-i`'s answer line, as kubectl prints it (the process tests in test/e2e cover the command itself).
import { describe, expect, it } from "vitest";
import { canIAnswer } from "../../../src/cli/ctl/auth.js";

describe("canIAnswer", () => {
  it.each([
    [{ allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "x"' }, "yes\n"],
    [{ allowed: false }, "no\n"],
    [{ allowed: false, reason: "RBAC: denied" }, "no - RBAC: denied\n"],
    [{ allowed: false, reason: "RBAC: role gone", evaluationError: "role gone" }, "no - RBAC: role gone - role gone\n"],
    [{ allowed: false, denied: true, evaluationError: "webhook down" }, "no - webhook down\n"],
    [undefined, "no\n"],
  ])("prints %j as %j", (status, line) => {
    expect(canIAnswer(status)).toBe(line);
  });
});
