// The pull-request plan of SealedSecrets: the comment shows the sealed values as they are in git,
// values the hub cannot open fail the plan at their field, and a plain value committed by mistake
// is refused without being repeated. No plain value is in any comment, review or status.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import t from "tap";
import { hubOpens } from "../../operators/api/index.ts";
import { PLAN_CONTEXT } from "../../operators/feedback/pull-requests.ts";
import { SealKeyring, sealValue, secretValueContext } from "../../operators/lib/seal/index.ts";
import { pullRequestPayload, settle, setupFixture } from "./pull-requests-fixture.ts";

const CANARY = "plan-canary-7f3a9c";

function sealedSecret(name: string, key: string, value: string): string {
  return `apiVersion: rlinf.io/v1alpha1
kind: SealedSecret
metadata:
  name: ${name}
  namespace: agent-beijing
spec:
  namespace: ml
  encryptedData:
    ${key}: ${value}
`;
}

t.test(
  "plan comments show SealedSecrets sealed, fail values the hub cannot open, and never a plain value",
  async (t) => {
    const keys = await SealKeyring.open(path.join(await mkdtemp(path.join(tmpdir(), "rlark-seal-")), "seal"));
    const pem = keys.currentPublicKeyPem();
    const f = await setupFixture(t, { sealCheck: hubOpens(keys) });
    const answered = (sha: string) =>
      settle("rlark/plan answered", () => {
        const s = f.github.status(sha, PLAN_CONTEXT);
        return s && s.state !== "pending" ? s : undefined;
      });

    const good = sealValue(CANARY, pem, secretValueContext({ cluster: "beijing" }, "ml", "db", "password"));
    const okSha = await f.pushPull(2, { "secrets/db.yaml": sealedSecret("db", "password", good) });
    await f.deliver(pullRequestPayload("opened", okSha));
    t.equal((await answered(okSha)).state, "success");
    const okBody = [...f.github.comments.values()].find((c) => c.issue === 2)?.body ?? "";
    t.match(okBody, /create SealedSecret <code>db<\/code>/);
    t.ok(okBody.includes(good.slice(0, 40)), "the comment shows the sealed value as committed");

    // Copied from another Secret, and a plain value committed by mistake.
    const copied = sealValue(
      CANARY,
      pem,
      secretValueContext({ cluster: "beijing" }, "ml", "other", "password"),
    );
    const badSha = await f.pushPull(2, {
      "secrets/db.yaml": sealedSecret("db", "password", copied),
      "secrets/plain.yaml": sealedSecret("plain", "password", CANARY),
    });
    await f.deliver(pullRequestPayload("synchronize", badSha));
    const failed = await answered(badSha);
    t.equal(failed.state, "failure");
    const findings = f.github.reviews.flatMap(
      (r) => (r.body as { comments?: { path: string; body: string }[] }).comments ?? [],
    );
    t.match(findings, [
      { path: "secrets/db.yaml", body: /does not open on this hub/ },
      { path: "secrets/plain.yaml", body: /never a plain value \(got a value not shown here\)/ },
    ]);

    const badBody = [...f.github.comments.values()].map((c) => c.body).join("\n");
    t.match(badBody, /password: "\(not shown: not a sealed value\)"/, "the plan hides what is not sealed");
    const everything = JSON.stringify({
      comments: [...f.github.comments.values()],
      reviews: f.github.reviews,
      statuses: f.github.statuses,
    });
    t.notOk(everything.includes(CANARY), "no plain value in comments, reviews or statuses");
    t.notOk(everything.includes(Buffer.from(CANARY).toString("base64")));
  },
);
