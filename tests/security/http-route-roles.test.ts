// The hub's route table is its role table: every route says the least role that may call it, and
// the router checks it before any handler runs. Walked here against a real hub with the
// dashboard mounted: each route but the anonymous ones refuses a request without a token (401),
// and each route above the viewer role refuses a logged-in viewer (403). A new anonymous route
// must be added to the list below on purpose.
import t from "tap";
import { hashPassword } from "../../operators/dashboard/auth/index.ts";
import { methodsOf, type Route } from "../../operators/lib/http/index.ts";
import { exampleRepository, FAST, login, startDashboardHub, userYaml } from "../dashboard/dashboard-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const ANONYMOUS = [
  "/hooks/git", // each delivery carries its HMAC signature
  "/api/v1/auth/login",
  "/api/v1/auth/login-link", // the single-use code is the credential (rlark up's one-click link)
  "/",
  "/index.html",
  "/favicon.ico",
  "/assets*rest",
  "/api/v1/rlinf.io/v1alpha1/tasks/:task/tensorboard", // a redirect to the slash form only
  "/healthz",
  "/readyz",
];

/** A path the route matches: each `:name` and the `*rest` filled in. */
function pathOf(route: Route): string {
  return route.path.replace(/:[^/]+/g, "1").replace(/\*\w+$/, "/1");
}

async function status(url: string, method: string, token?: string): Promise<number> {
  const response = await fetch(url, {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    redirect: "manual",
  });
  await response.body?.cancel();
  return response.status;
}

t.test(
  "every route but the anonymous ones needs a token, and each above viewer refuses a viewer",
  async (t) => {
    const git = await exampleRepository(t, {
      "users/vera.yaml": userYaml("vera", "viewer", await hashPassword("vera's password", FAST)),
    });
    const { hub } = await startDashboardHub(t, git);
    const viewer = await waitFor(
      "vera's login",
      async () => {
        const answer = await login(hub, { username: "vera", password: "vera's password" });
        return answer.status === 200 ? (answer.body.token as string) : undefined;
      },
      onRealServers,
    );

    const routes = hub.httpRoutes;
    t.same(
      routes.filter((r) => r.role === "anonymous").map((r) => r.path),
      ANONYMOUS,
      "exactly these routes are open to anyone",
    );
    t.same(
      routes.filter((r) => r.role === "admin").map((r) => r.path),
      ["/api/v1/seal-key/rotate", "/api/v1/seal-key/reseal", "/api/v1/access/audit"],
      "the admins' routes",
    );
    for (const route of routes.filter((r) => r.role !== "anonymous")) {
      const path = pathOf(route);
      t.equal(
        routes.find((r) => r.match(path)),
        route,
        `${path} reaches ${route.path}`,
      );
      const methods = methodsOf(route);
      const method = methods === "*" ? "GET" : (methods[0] as string);
      const url = `${hub.url}${path}`;
      t.equal(await status(url, method), 401, `${method} ${route.path} without a token`);
      t.equal(await status(url, method, "not-a-token"), 401, `${method} ${route.path} with a wrong token`);
      const asViewer = await status(url, method, viewer);
      if (route.role === "viewer")
        t.notOk([401, 403].includes(asViewer), `${method} ${route.path} lets a viewer in (${asViewer})`);
      else t.equal(asViewer, 403, `${method} ${route.path} refuses a viewer`);
    }
  },
);
