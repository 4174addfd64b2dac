// The role table of docs/roles.md is the code's, and the code keeps it. On a real hub with the
// dashboard mounted, every route of the hub's HTTP table is asked once without a token and once
// with a token of each role (a viewer's and a user's dashboard logins, the admin token): a role
// below the route's is refused by the router (403 naming the route's role) and one at or above it
// is let past the router. The docs' table lists the same routes in the same order with the same
// methods and roles, and the access verbs (SSH bastion, web terminal, API) with the least role
// authorize() asks for: a route or verb added without its row fails here.
import { readFile } from "node:fs/promises";
import path from "node:path";
import t from "tap";
import { ACCESS_VERBS, VERB_ROLES } from "../../operators/access/index.ts";
import { hashPassword } from "../../operators/dashboard/auth/index.ts";
import { methodsOf, type Role, type Route } from "../../operators/lib/http/index.ts";
import { exampleRepository, FAST, login, startDashboardHub, userYaml } from "../dashboard/dashboard-hub.ts";
import { onRealServers, waitFor } from "../helpers/wait-for.ts";

const ROLES_DOC = path.join(import.meta.dirname, "..", "..", "docs", "roles.md");
const RANK: readonly Role[] = ["anonymous", "viewer", "user", "admin"];

/** The rows of the Markdown table under `heading`, as trimmed cells with backticks removed. */
function tableUnder(doc: string, heading: string): string[][] {
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/roles.md has no "## ${heading}" section`);
  const section = doc.slice(start + 1).split(/\n## /)[0] as string;
  const rows = section.split("\n").filter((line) => line.startsWith("|"));
  return rows
    .slice(2) // the header and its --- line
    .map((line) =>
      line
        .slice(1, -1)
        .split(" | ")
        .map((cell) => cell.trim().replace(/^`|`$/g, "")),
    );
}

/** A path the route matches: each `:name` and the `*rest` filled in. */
function pathOf(route: Route): string {
  return route.path.replace(/:[^/]+/g, "1").replace(/\*\w+$/, "/1");
}

function methodCell(route: Route): string {
  const methods = methodsOf(route);
  return methods === "*" ? "any" : methods.join(", ");
}

/** The status, and the message when it is a refusal (an open event stream is not read). */
async function ask(
  url: string,
  method: string,
  token?: string,
): Promise<{ status: number; message: string }> {
  const response = await fetch(url, {
    method,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    redirect: "manual",
  });
  if (response.status !== 401 && response.status !== 403) {
    await response.body?.cancel();
    return { status: response.status, message: "" };
  }
  const body = (await response.json().catch(() => ({}))) as { message?: string };
  return { status: response.status, message: body.message ?? "" };
}

t.test(
  "every route and verb has its row in docs/roles.md, and each role gets what its row says",
  async (t) => {
    const doc = await readFile(ROLES_DOC, "utf8");
    const git = await exampleRepository(t, {
      "users/vera.yaml": userYaml("vera", "viewer", await hashPassword("vera's password", FAST)),
      "users/uma.yaml": userYaml("uma", "user", await hashPassword("uma's password", FAST)),
    });
    const { hub } = await startDashboardHub(t, git);
    const tokenOf = (username: string, password: string) =>
      waitFor(
        `${username}'s login`,
        async () => {
          const answer = await login(hub, { username, password });
          return answer.status === 200 ? (answer.body.token as string) : undefined;
        },
        onRealServers,
      );
    const tokens: Record<Exclude<Role, "anonymous">, string> = {
      viewer: await tokenOf("vera", "vera's password"),
      user: await tokenOf("uma", "uma's password"),
      admin: hub.adminToken,
    };

    const routes = hub.httpRoutes;
    t.same(
      tableUnder(doc, "HTTP routes").map(([method, route, role]) => `${method} ${route} ${role}`),
      routes.map((route) => `${methodCell(route)} ${route.path} ${route.role}`),
      "docs/roles.md lists every HTTP route, in the table's order, with its methods and least role",
    );
    t.same(
      tableUnder(doc, "Access verbs").map(([verb, role]) => `${verb} ${role}`),
      ACCESS_VERBS.map((verb) => `${verb} ${VERB_ROLES[verb]}`),
      "docs/roles.md lists every access verb with the least role authorize() asks for",
    );

    for (const route of routes) {
      const path = pathOf(route);
      t.equal(
        routes.find((r) => r.match(path)),
        route,
        `${path} reaches ${route.path}`,
      );
      const methods = methodsOf(route);
      const method = methods === "*" ? "GET" : (methods[0] as string);
      const url = `${hub.url}${path}`;
      const anonymous = await ask(url, method);
      if (route.role === "anonymous") {
        t.notMatch(
          anonymous.message,
          /bearer token is required/,
          `${method} ${route.path} is open to anyone`,
        );
        continue;
      }
      t.equal(anonymous.status, 401, `${method} ${route.path} without a token`);
      for (const [role, token] of Object.entries(tokens) as [Exclude<Role, "anonymous">, string][]) {
        const answer = await ask(url, method, token);
        const refusal = `${route.path} is for the ${route.role} role and above`;
        if (RANK.indexOf(role) < RANK.indexOf(route.role)) {
          t.same(answer, { status: 403, message: refusal }, `${method} ${route.path} refuses a ${role}`);
        } else {
          t.not(answer.status, 401, `${method} ${route.path} knows a ${role}'s token`);
          t.not(answer.message, refusal, `${method} ${route.path} lets a ${role} past the router`);
        }
      }
    }
  },
);
