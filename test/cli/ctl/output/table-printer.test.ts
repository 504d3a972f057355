// The server Table as columns: priorities, namespace and label columns, kind prefixes, no headers, streaming widths.
import { describe, expect, it } from "vitest";
import { renderTable, StreamingTable, tableView, type ServerTable } from "../../../../src/cli/ctl/output/table-printer.js";

const table: ServerTable = {
  columnDefinitions: [
    { name: "Name", type: "string", format: "name", priority: 0 },
    { name: "SignerName", type: "string", priority: 0 },
    { name: "Extra", type: "string", priority: 1 },
    { name: "Age", type: "string", priority: 0 },
  ],
  rows: [
    { cells: ["alice", "platform.io/apiserver-client", "x", "5m"], object: { metadata: { name: "alice", namespace: "team-a", labels: { b: "2", a: "1" } } } },
    { cells: ["bob", null, 7, "10s"], object: { metadata: { name: "bob", namespace: "team-b" } } },
  ],
};

describe("tableView and renderTable", () => {
  it.each([
    [{}, "NAME    SIGNERNAME                     AGE\nalice   platform.io/apiserver-client   5m\nbob     <none>                         10s\n"],
    [{ wide: true }, "NAME    SIGNERNAME                     EXTRA   AGE\nalice   platform.io/apiserver-client   x       5m\nbob     <none>                         7       10s\n"],
    [{ withNamespace: true }, "NAMESPACE   NAME    SIGNERNAME                     AGE\nteam-a      alice   platform.io/apiserver-client   5m\nteam-b      bob     <none>                         10s\n"],
    [{ showLabels: true }, "NAME    SIGNERNAME                     AGE   LABELS\nalice   platform.io/apiserver-client   5m    a=1,b=2\nbob     <none>                         10s   <none>\n"],
    [{ kindPrefix: "csr" }, "NAME        SIGNERNAME                     AGE\ncsr/alice   platform.io/apiserver-client   5m\ncsr/bob     <none>                         10s\n"],
  ])("renders with %j", (options, expected) => {
    expect(renderTable(tableView(table, options))).toBe(expected);
  });

  it("leaves the headers out with --no-headers, sizing columns from the rows", () => {
    expect(renderTable(tableView(table), true)).toBe("alice   platform.io/apiserver-client   5m\nbob     <none>                         10s\n");
    expect(renderTable({ headers: ["A"], rows: [] }, true)).toBe("");
  });
});

describe("StreamingTable", () => {
  it("keeps the widths already printed and grows for longer cells", () => {
    const s = new StreamingTable(false);
    expect(s.render({ headers: ["NAME", "AGE"], rows: [["a", "1s"]] }, true)).toBe("NAME   AGE\na      1s\n");
    expect(s.render({ headers: ["NAME", "AGE"], rows: [["b", "2s"]] }, false)).toBe("b      2s\n");
    expect(s.render({ headers: ["NAME", "AGE"], rows: [["a-much-longer-name", "3s"]] }, false)).toBe("a-much-longer-name   3s\n");
  });

  it("prints no header line without headers", () => {
    expect(new StreamingTable(true).render({ headers: ["NAME"], rows: [["a"]] }, true)).toBe("a\n");
  });
});
