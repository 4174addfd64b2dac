// The browse protocol's two checks (lib/tunnel/browse.ts): the agent's of every request (a closed
// list of resources and fields), and the hub's of every answer (a Secret item is rebuilt from its
// name, type and key names, so an agent that misbehaves cannot get a value into a response).
import fc from "fast-check";
import t from "tap";
import {
  BROWSE_RESOURCES,
  BrowseRequestError,
  MAX_BROWSE_LIMIT,
  parseBrowseAnswer,
  parseBrowseRequest,
} from "../../../operators/lib/tunnel/index.ts";

t.test(
  "a request is a resource from the list, a namespace, a limit and a continue token, nothing else",
  async (t) => {
    t.same(parseBrowseRequest({ resource: "namespaces" }), { resource: "namespaces", limit: 50 });
    t.same(parseBrowseRequest({ resource: "secrets", namespace: "ml", limit: 5, continue: "abc" }), {
      resource: "secrets",
      namespace: "ml",
      limit: 5,
      continue: "abc",
    });
    const refused: [unknown, RegExp][] = [
      [null, /JSON object/],
      [{ resource: "secrets", namespace: "ml", fields: ["data"] }, /unknown field "fields"/],
      [{ resource: "secrets", namespace: "ml", name: "db" }, /unknown field "name"/],
      [{ resource: "secret", namespace: "ml" }, /resource must be one of/],
      [{ resource: "secrets" }, /need a namespace/],
      [{ resource: "secrets", namespace: "ml/db" }, /need a namespace/],
      [{ resource: "namespaces", namespace: "ml" }, /take no namespace/],
      [{ resource: "pods", namespace: "ml", limit: MAX_BROWSE_LIMIT + 1 }, /limit must be/],
      [{ resource: "pods", namespace: "ml", limit: "5" }, /limit must be/],
      [{ resource: "pods", namespace: "ml", continue: "" }, /continue must be/],
    ];
    for (const [request, message] of refused)
      t.throws(() => parseBrowseRequest(request), { message }, JSON.stringify(request));
    t.type(
      (() => {
        try {
          parseBrowseRequest({});
        } catch (e) {
          return e;
        }
      })(),
      BrowseRequestError,
    );
  },
);

t.test("any request that passes names a listed resource and only the four fields", async (t) => {
  const request = fc
    .tuple(
      fc.record(
        {
          resource: fc.oneof(fc.constantFrom(...BROWSE_RESOURCES), fc.string()),
          namespace: fc.oneof(fc.constant("ml"), fc.string()),
          limit: fc.oneof(fc.integer(), fc.anything()),
          continue: fc.string(),
        },
        { requiredKeys: [] },
      ),
      fc.dictionary(fc.string(), fc.anything()),
    )
    .map(([known, extra]) => ({ ...extra, ...known }));
  let passed = 0;
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(request, (value) => {
        let parsed: ReturnType<typeof parseBrowseRequest>;
        try {
          parsed = parseBrowseRequest(value);
        } catch (error) {
          return error instanceof BrowseRequestError;
        }
        passed++;
        return (
          (BROWSE_RESOURCES as readonly string[]).includes(parsed.resource) &&
          Object.keys(value).every((k) => ["resource", "namespace", "limit", "continue"].includes(k))
        );
      }),
      { numRuns: 2000 },
    ),
  );
  t.ok(passed > 0, `some generated requests passed (${passed})`);
});

t.test("the hub keeps only names, types and key names of the Secrets an agent answers with", async (t) => {
  const request = parseBrowseRequest({ resource: "secrets", namespace: "ml" });
  const answer = parseBrowseAnswer(
    {
      items: [
        {
          name: "db",
          type: "Opaque",
          keys: ["password", 7],
          data: { password: "c2VjcmV0" },
          value: "secret",
        },
        { name: "tls", stringData: { key: "secret" } },
      ],
      continue: "next",
    },
    request,
  );
  t.same(answer, {
    resource: "secrets",
    namespace: "ml",
    items: [
      { name: "db", type: "Opaque", keys: ["password"] },
      { name: "tls", keys: [] },
    ],
    continue: "next",
  });
  t.throws(() => parseBrowseAnswer({ error: "list secrets in ml: 403 Forbidden" }, request), {
    message: "list secrets in ml: 403 Forbidden",
  });
  t.throws(() => parseBrowseAnswer({ items: "x" }, request), /items must be an array/);
});
