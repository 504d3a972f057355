// Selective lists and watches pass over objects whose stored text lacks a required value, undecoded: what they
// return must be exactly what the selectors match, whatever characters the value holds (JSON escapes included).
import { describe, expect, it } from "vitest";
import { call, openWatch } from "./http-client.js";
import { sharedServer } from "./fixtures.js";

const s = sharedServer();
const SECRETS = "/api/v1/namespaces/default/secrets";
const secret = (name: string, type: string, labels?: Record<string, string>) => ({ apiVersion: "v1", kind: "Secret", metadata: { name, ...(labels && { labels }) }, type });
const names = (r: { body: { items: Array<{ metadata: { name: string } }> } }) => r.body.items.map((i) => i.metadata.name).sort();

describe("selectors checked against the stored text first", () => {
  it("lists (latest and from the cache) and watches by a field value that JSON escapes, and by label", async () => {
    // A quote, a backslash, a slash and a non-ASCII letter: the selector escapes the backslash, JSON escapes two of them.
    const type = `example.com/q"uo\\te/é-${s.unique("t")}`;
    const selector = encodeURIComponent(`type=${type.replace(/\\/g, "\\\\")}`);
    const [a, b, c] = [s.unique("sa"), s.unique("sb"), s.unique("sc")];
    const label = s.unique("app");
    for (const body of [secret(a, type), secret(b, "example.com/other"), secret(c, "Opaque", { app: label })]) {
      expect((await call(s.base, "POST", SECRETS, { body })).status).toBe(201);
    }
    const latest = await call(s.base, "GET", `${SECRETS}?fieldSelector=${selector}`);
    expect(names(latest)).toEqual([a]);
    expect(names(await call(s.base, "GET", `${SECRETS}?fieldSelector=${selector}&resourceVersion=0`))).toEqual([a]);
    expect(names(await call(s.base, "GET", `${SECRETS}?labelSelector=${encodeURIComponent(`app=${label}`)}`))).toEqual([c]);
    expect(names(await call(s.base, "GET", `${SECRETS}?labelSelector=${encodeURIComponent(`app in (x,${label})`)}&resourceVersion=0`))).toEqual([c]);
    const w = await openWatch(s.base, `${SECRETS}?watch=true&fieldSelector=${selector}&resourceVersion=${latest.body.metadata.resourceVersion}`);
    try {
      const d = s.unique("sd");
      await call(s.base, "POST", SECRETS, { body: secret(s.unique("se"), "example.com/other") });
      await call(s.base, "POST", SECRETS, { body: secret(d, type) });
      expect(await w.next()).toMatchObject({ type: "ADDED", object: { metadata: { name: d }, type } });
    } finally {
      w.close();
    }
  });

  it("deletes by a field selector of one name that object alone, in a namespace and across namespaces", async () => {
    const [keep, gone, alsoGone] = [s.unique("keep"), s.unique("gone"), s.unique("gone2")];
    for (const name of [keep, gone, alsoGone]) expect((await call(s.base, "POST", SECRETS, { body: secret(name, "Opaque") })).status).toBe(201);
    expect((await call(s.base, "DELETE", `${SECRETS}?fieldSelector=${encodeURIComponent(`metadata.name=${gone}`)}`)).status).toBe(200);
    expect((await call(s.base, "GET", `${SECRETS}/${gone}`)).status).toBe(404);
    expect((await call(s.base, "GET", `${SECRETS}/${keep}`)).status).toBe(200);
    expect((await call(s.base, "DELETE", `/api/v1/secrets?fieldSelector=${encodeURIComponent(`metadata.name=${alsoGone}`)}`)).status).toBe(200);
    expect((await call(s.base, "GET", `${SECRETS}/${alsoGone}`)).status).toBe(404);
    expect((await call(s.base, "GET", `${SECRETS}/${keep}`)).status).toBe(200);
  });
});
