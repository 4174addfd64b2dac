// `rlark seal`, `rlark seal-key` and `rlark validate --hub-key` as a user runs them, against a
// real hub (its key by URL and token) and a PEM file; the plain values never reach the output.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { parse } from "yaml";
import { clusterKubeconfigContext, sealValue, secretValueContext } from "../../operators/lib/seal/index.ts";
import { startHubOnGit } from "../helpers/hub-on-git.ts";
import { rlark } from "../helpers/rlark-cli.ts";

interface SealedSecretYaml {
  metadata: { name: string; namespace?: string };
  spec: { namespace: string; clusterSelector?: unknown; encryptedData: Record<string, string> };
}

/** The least a kubeconfig needs for the hub to take it: a current context with inline credentials. */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://10.0.0.1:6443" } }]
users: [{ name: u, user: { token: kube-token-plain } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

t.test(
  "rlark seal prints sealed values and SealedSecrets the hub opens, and never a plain value",
  async (t) => {
    const { hub } = await startHubOnGit(t);
    const dir = t.testdir({
      "password.txt": "pa55-w0rd-plain\n",
      "kube.yaml": KUBECONFIG,
    });
    const pem = path.join(dir, "hub.pem");
    const token = { env: { RLARK_TOKEN: hub.adminToken } };

    const show = await rlark(["seal-key", "show", "--hub", hub.url], token);
    t.equal(show.code, 0, show.stderr);
    t.equal(show.stdout, hub.sealKeys.currentPublicKeyPem());
    writeFileSync(pem, show.stdout);

    const one = await rlark(["seal", "--hub-key", pem, "--context", "secret/ml/db/password"], {
      input: "stdin-plain-value",
    });
    t.equal(one.code, 0, one.stderr);
    t.match(one.stdout, /^rlark-sealed:v1:[0-9a-f]{16}:\S+\n$/);
    t.equal(hub.sealKeys.unseal(one.stdout.trim(), "secret/ml/db/password").toString(), "stdin-plain-value");

    const manifest = await rlark(
      [
        "seal",
        "--hub-key",
        hub.url,
        "--secret",
        "registry",
        "--namespace",
        "ml",
        "--cluster",
        "gpu-a",
        "--from-file",
        `password=${path.join(dir, "password.txt")}`,
        "--from-file",
        "token=-",
      ],
      { ...token, input: "token-from-stdin" },
    );
    t.equal(manifest.code, 0, manifest.stderr);
    t.notMatch(manifest.stdout + manifest.stderr, /pa55-w0rd-plain|token-from-stdin/);
    const sealed = parse(manifest.stdout) as SealedSecretYaml;
    t.match(sealed, { apiVersion: "rlinf.io/v1alpha1", kind: "SealedSecret" });
    t.same(sealed.metadata, { name: "registry", namespace: "agent-gpu-a" });
    t.same(Object.keys(sealed.spec.encryptedData), ["password", "token"]);
    const open = (key: string) =>
      hub.sealKeys
        .unseal(
          sealed.spec.encryptedData[key] as string,
          secretValueContext({ cluster: "gpu-a" }, "ml", "registry", key),
        )
        .toString();
    t.equal(open("password"), "pa55-w0rd-plain\n");
    t.equal(open("token"), "token-from-stdin");

    const bySelector = await rlark(
      [
        "seal",
        "--hub-key",
        pem,
        "--name",
        "api",
        "--namespace",
        "web",
        "--cluster-selector",
        "env=prod,gpu=a100",
      ],
      { input: "" },
    );
    t.equal(bySelector.code, 2, "no values is a usage error");
    const selected = await rlark([
      "seal",
      "--hub-key",
      pem,
      "--name",
      "api",
      "--namespace",
      "web",
      "--cluster-selector",
      "env=prod,gpu=a100",
      "--from-literal",
      "k=literal-value",
    ]);
    t.equal(selected.code, 0, selected.stderr);
    const selectedYaml = parse(selected.stdout) as SealedSecretYaml;
    t.same(selectedYaml.metadata, { name: "api" });
    t.same(selectedYaml.spec.clusterSelector, { matchLabels: { env: "prod", gpu: "a100" } });
    t.notMatch(selected.stdout, /literal-value/);
    t.equal(
      hub.sealKeys
        .unseal(
          selectedYaml.spec.encryptedData.k as string,
          secretValueContext(
            { clusterSelector: { matchLabels: { gpu: "a100", env: "prod" } } },
            "web",
            "api",
            "k",
          ),
        )
        .toString(),
      "literal-value",
      "sealed for the selector, whatever the order of its labels",
    );

    const kubeconfig = await rlark([
      "seal",
      "--hub-key",
      pem,
      "--kubeconfig",
      path.join(dir, "kube.yaml"),
      "--cluster",
      "gpu-b",
    ]);
    t.equal(kubeconfig.code, 0, kubeconfig.stderr);
    t.equal(
      hub.sealKeys.unseal(kubeconfig.stdout.trim(), clusterKubeconfigContext("gpu-b")).toString(),
      KUBECONFIG,
    );
  },
);

t.test("rlark seal refuses unclear or bad input with exit 2, before asking the hub", async (t) => {
  const run = (args: string[]) => rlark(["seal", "--hub-key", "http://127.0.0.1:9", ...args]);
  const cases: Array<[string[], RegExp]> = [
    [[], /exactly one of --context/],
    [["--context", "a", "--secret", "b"], /exactly one of/],
    [["--secret", "Bad_Name", "--namespace", "ml", "--cluster", "a"], /DNS-1123 subdomain/],
    [["--secret", "s", "--cluster", "a", "--from-literal", "k=v"], /needs --namespace/],
    [["--secret", "s", "--namespace", "ml", "--from-literal", "k=v"], /exactly one of --cluster/],
    [
      ["--secret", "s", "--namespace", "ml", "--cluster", "a", "--from-literal", "bad key=hidden-v"],
      /not a Secret key/,
    ],
    [
      [
        "--secret",
        "s",
        "--namespace",
        "ml",
        "--cluster",
        "a",
        "--from-literal",
        "k=hidden-v",
        "--from-literal",
        "k=x",
      ],
      /given twice/,
    ],
    [
      ["--secret", "s", "--namespace", "ml", "--cluster", "a", "--from-file", "k=/no/such/file"],
      /cannot be read \(ENOENT\)/,
    ],
    [["--kubeconfig", "/no/such", "--cluster", "Bad"], /needs --cluster/],
  ];
  for (const [args, message] of cases) {
    const result = await run(args);
    t.equal(result.code, 2, args.join(" "));
    t.match(result.stderr, message, args.join(" "));
    t.notMatch(result.stderr, /hidden-v/, "a value is never echoed");
  }
  const unreachable = await rlark(["seal", "--hub-key", "http://127.0.0.1:9", "--context", "c"], {
    env: { RLARK_TOKEN: "x" },
  });
  t.equal(unreachable.code, 2);
  t.match(unreachable.stderr, /cannot reach http:\/\/127.0.0.1:9/);
  const notAKey = await rlark(["seal", "--hub-key", "package.json", "--context", "c"]);
  t.equal(notAKey.code, 2);
  t.match(notAKey.stderr, /--hub-key package.json: not a public key/);
});

t.test(
  "rlark validate --hub-key accepts values sealed to the hub's keys, old ones too, and names others",
  async (t) => {
    const { hub } = await startHubOnGit(t);
    const token = { env: { RLARK_TOKEN: hub.adminToken } };
    const dir = t.testdir({ "v.txt": "value" });
    const seal = async (name: string) => {
      const run = await rlark(
        [
          "seal",
          "--hub-key",
          hub.url,
          "--secret",
          name,
          "--namespace",
          "ml",
          "--cluster",
          "a",
          "--from-file",
          `k=${path.join(dir, "v.txt")}`,
        ],
        token,
      );
      t.equal(run.code, 0, run.stderr);
      return run.stdout;
    };
    writeFileSync(path.join(dir, "old.yaml"), await seal("old"));
    t.equal((await rlark(["seal-key", "rotate", "--hub", hub.url], token)).code, 0);
    writeFileSync(path.join(dir, "new.yaml"), await seal("new"));
    const ok = await rlark(["validate", "--hub-key", hub.url, dir], token);
    t.equal(ok.code, 0, ok.stdout);

    const other = t.testdir({ "v.txt": "value" });
    const { hub: stranger } = await startHubOnGit(t);
    const foreign = await rlark(
      [
        "seal",
        "--hub-key",
        stranger.url,
        "--secret",
        "foreign",
        "--namespace",
        "ml",
        "--cluster",
        "a",
        "--from-file",
        `k=${path.join(other, "v.txt")}`,
      ],
      { env: { RLARK_TOKEN: stranger.adminToken } },
    );
    writeFileSync(path.join(dir, "foreign.yaml"), foreign.stdout);
    const refused = await rlark(["validate", "--hub-key", hub.url, dir], token);
    t.equal(refused.code, 1);
    t.match(
      refused.stdout,
      /foreign\.yaml:\d+:\d+.*\/spec\/encryptedData\/k.*is sealed to key [0-9a-f]{16}, which is not one of the hub's/,
    );
    const formOnly = await rlark(["validate", dir]);
    t.equal(formOnly.code, 0, "without --hub-key only the form is checked");
  },
);

t.test("rlark seal --reseal seals a file's old values again to the current key, in place", async (t) => {
  const { hub } = await startHubOnGit(t);
  const token = { env: { RLARK_TOKEN: hub.adminToken } };
  const dir = t.testdir({ "v.txt": "reseal-plain" });
  const made = await rlark(
    [
      "seal",
      "--hub-key",
      hub.url,
      "--secret",
      "db",
      "--namespace",
      "ml",
      "--cluster",
      "a",
      "--from-file",
      `k=${path.join(dir, "v.txt")}`,
    ],
    token,
  );
  const file = path.join(dir, "db.yaml");
  writeFileSync(file, `# the database password\n${made.stdout}`);
  const oldKid = hub.sealKeys.currentKeyId();
  t.equal((await rlark(["seal-key", "rotate", "--hub", hub.url], token)).code, 0);

  const run = await rlark(["seal", "--hub-key", hub.url, "--reseal", file], token);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stderr, new RegExp(`1 value sealed again to key ${hub.sealKeys.currentKeyId()}`));
  const text = readFileSync(file, "utf8");
  t.match(text, /^# the database password\n/, "comments are kept");
  const sealed = (parse(text) as SealedSecretYaml).spec.encryptedData.k as string;
  t.notMatch(sealed, new RegExp(oldKid), "no longer sealed to the old key");
  t.equal(
    hub.sealKeys.unseal(sealed, secretValueContext({ cluster: "a" }, "ml", "db", "k")).toString(),
    "reseal-plain",
  );
  t.notMatch(run.stdout + run.stderr, /reseal-plain/);

  const again = await rlark(["seal", "--hub-key", hub.url, "--reseal", file], token);
  t.match(again.stderr, /every value is sealed to the current key/);
  t.equal(readFileSync(file, "utf8"), text, "a value sealed as it should be is left as it is");

  // a value an older rlark sealed for a context without its cluster is bound to its cluster
  const legacy = sealValue("legacy-plain", hub.sealKeys.currentPublicKeyPem(), "secret/ml/db/k");
  writeFileSync(file, text.replace(sealed, legacy));
  const bound = await rlark(["seal", "--hub-key", hub.url, "--reseal", file], token);
  t.equal(bound.code, 0, bound.stderr);
  t.match(bound.stderr, /1 value sealed again/);
  const rebound = (parse(readFileSync(file, "utf8")) as SealedSecretYaml).spec.encryptedData.k as string;
  t.equal(
    hub.sealKeys.unseal(rebound, secretValueContext({ cluster: "a" }, "ml", "db", "k")).toString(),
    "legacy-plain",
    "now opens only for the cluster the file names",
  );
  const byFile = await rlark(["seal", "--hub-key", "package.json", "--reseal", file]);
  t.equal(byFile.code, 2);
  t.match(byFile.stderr, /--reseal needs --hub-key <hub url>/);
});
