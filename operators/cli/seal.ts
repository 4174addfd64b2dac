import { open } from "node:fs/promises";
import path from "node:path";
import type { Command } from "commander";
import { stringify } from "yaml";
import {
  clusterKubeconfigContext,
  MAX_SEALED_PLAIN_BYTES,
  SealError,
  type SealTarget,
  sealValue,
  secretValueContext,
} from "../lib/seal/index.ts";
import { usageError } from "./cli-error.ts";
import { type HubKeyFlags, loadHubKey } from "./hub-key.ts";

export const SEAL_HELP = `
Encrypts values to the hub's public key so they can be committed to git; only that hub opens
them, and only for the place (context) they were sealed for (docs/secrets.md). Plain values are
read from stdin or files and never printed. --hub-key is a PEM file (\`rlark seal-key show\`) or
the hub's URL (the token comes from --token, --token-file, RLARK_TOKEN or <data-dir>/admin-token).

Three forms:
  one value, stdin to stdout, for a context such as cluster/<cluster>/secret/<namespace>/<name>/<key>:
    rlark seal --hub-key hub-seal.pem --context cluster/gpu-a/secret/ml/registry/password < password.txt

  a whole SealedSecret manifest (the Secret ml/registry on cluster gpu-a, or on every Cluster
  whose labels match --cluster-selector; the values open only for that cluster or selector):
    rlark seal --hub-key hub-seal.pem --secret registry --namespace ml --cluster gpu-a \\
      --from-file password=- --from-file .dockerconfigjson=config.json < password.txt \\
      > clusters/gpu-a/registry.sealed.yaml

  a kubeconfig for an agentless Cluster (spec.kubeconfig):
    rlark seal --hub-key https://rlark.example.com --kubeconfig gpu-b.kubeconfig --cluster gpu-b

--from-literal key=value also works, but puts the value on the command line (shell history,
ps): prefer --from-file.

After \`rlark seal-key rotate\`, seal what is in git again to the new key (admin token; the hub
opens each value and seals it again, the files are rewritten in place):
    rlark seal --hub-key https://rlark.example.com --reseal secrets/*.yaml
`;

interface SealFlags extends HubKeyFlags {
  context?: string;
  secret?: string;
  name?: string;
  namespace?: string;
  cluster?: string;
  clusterSelector?: string;
  fromLiteral: string[];
  fromFile: string[];
  kubeconfig?: string;
  reseal?: string[];
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function registerSeal(program: Command): void {
  program
    .command("seal")
    .description("encrypt values (a SealedSecret, a kubeconfig) to the hub's key for committing to git")
    .requiredOption("--hub-key <pem file|hub url>", "the hub's public sealing key, or the hub's URL")
    .option(
      "--context <context>",
      "seal stdin for this context (e.g. cluster/<cluster>/secret/<namespace>/<name>/<key>)",
    )
    .option("--secret <name>", "print a SealedSecret manifest for the Secret of this name")
    .option("--name <name>", "the same as --secret")
    .option("--namespace <namespace>", "with --secret: the Secret's namespace in the clusters")
    .option(
      "--cluster <name>",
      "with --secret: deliver to this Cluster; with --kubeconfig: the Cluster it is for",
    )
    .option("--cluster-selector <k=v,...>", "with --secret: deliver to every Cluster with these labels")
    .option("--from-literal <key=value>", "with --secret: a key and its value (repeatable)", collect, [])
    .option(
      "--from-file <[key=]path>",
      "with --secret: a key and the file holding its value, - for stdin (repeatable)",
      collect,
      [],
    )
    .option("--kubeconfig <file>", "seal this kubeconfig for the agentless Cluster --cluster")
    .option(
      "--reseal <files...>",
      "after a key rotation: seal the SealedSecrets in these files again, in place",
    )
    .option(
      "--data-dir <dir>",
      "where to find admin-token when --hub-key is a URL and no token is given",
      ".rlark",
    )
    .option("--token <token>", "bearer token (or RLARK_TOKEN) when --hub-key is a URL")
    .option("--token-file <file>", "file holding the bearer token")
    .addHelpText("after", SEAL_HELP)
    .action(async (flags: SealFlags) => {
      const secret = flags.secret ?? flags.name;
      const forms = [
        flags.context !== undefined,
        secret !== undefined,
        flags.kubeconfig !== undefined,
        flags.reseal !== undefined,
      ];
      if (forms.filter(Boolean).length !== 1)
        throw usageError(
          "give exactly one of --context (stdin), --secret (a SealedSecret), --kubeconfig or --reseal",
        );
      // Loaded only for --reseal: it brings the source loader, which every other command would pay for.
      if (flags.reseal) return (await import("./reseal.ts")).resealFiles(flags.reseal, flags);
      if (flags.secret && flags.name && flags.secret !== flags.name)
        throw usageError("--secret and --name are the same flag: give one");
      // Checked before the key is fetched, so a mistake costs no request to the hub.
      const build = flags.kubeconfig
        ? await kubeconfigForm(flags, flags.kubeconfig)
        : secret
          ? await secretForm(flags, secret)
          : await contextForm(flags.context ?? "");
      const { pem } = await loadHubKey(flags);
      try {
        process.stdout.write(build(pem));
      } catch (error) {
        if (error instanceof SealError) throw usageError(error.message);
        throw error;
      }
    });
}

type Build = (pem: string) => string;

async function contextForm(context: string): Promise<Build> {
  if (!context) throw usageError("--context must not be empty");
  const plain = await readBounded(process.stdin, "stdin");
  return (pem) => `${sealValue(plain, pem, context)}\n`;
}

async function kubeconfigForm(flags: SealFlags, file: string): Promise<Build> {
  if (!flags.cluster || !DNS1123_LABEL.test(flags.cluster))
    throw usageError("--kubeconfig needs --cluster <name>, the Cluster's name (a DNS-1123 label)");
  if (flags.fromLiteral.length || flags.fromFile.length || flags.namespace || flags.clusterSelector)
    throw usageError("--kubeconfig takes only --cluster (and --hub-key)");
  const plain = await readFileBounded(file, "--kubeconfig");
  // what the hub would refuse (plugins, file paths, no inline credentials) is refused here first
  const { KubeconfigError, kubeConfigFrom } = await import("../agent/agentless/index.ts");
  try {
    kubeConfigFrom(plain.toString("utf8"));
  } catch (error) {
    if (error instanceof KubeconfigError) throw usageError(`--kubeconfig ${file}: ${error.message}`);
    throw error;
  }
  const cluster = flags.cluster;
  return (pem) => `${sealValue(plain, pem, clusterKubeconfigContext(cluster))}\n`;
}

async function secretForm(flags: SealFlags, name: string): Promise<Build> {
  if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253)
    throw usageError(`--secret ${name}: must be a DNS-1123 subdomain (lowercase letters, digits, '-', '.')`);
  const namespace = flags.namespace;
  if (!namespace || !DNS1123_LABEL.test(namespace))
    throw usageError("--secret needs --namespace <namespace>, a DNS-1123 label");
  if (Boolean(flags.cluster) === Boolean(flags.clusterSelector))
    throw usageError("--secret needs exactly one of --cluster <name> or --cluster-selector <k=v,...>");
  if (flags.cluster && !DNS1123_LABEL.test(flags.cluster))
    throw usageError(`--cluster ${flags.cluster}: must be a Cluster name (a DNS-1123 label)`);
  const values = new Map<string, Buffer>();
  const add = (key: string, value: Buffer, flag: string) => {
    if (!SECRET_KEY.test(key) || key.length > 253)
      throw usageError(`${flag}: "${key}" is not a Secret key (letters, digits, '-', '_', '.')`);
    if (values.has(key)) throw usageError(`${flag}: key "${key}" is given twice`);
    values.set(key, value);
  };
  for (const literal of flags.fromLiteral) {
    const eq = literal.indexOf("=");
    // The value itself is never echoed back, not even in an error.
    if (eq <= 0) throw usageError("--from-literal takes key=value");
    add(literal.slice(0, eq), Buffer.from(literal.slice(eq + 1), "utf8"), "--from-literal");
  }
  if (flags.fromFile.filter((spec) => spec === "-" || spec.endsWith("=-")).length > 1)
    throw usageError("--from-file: only one value can come from stdin (-)");
  for (const spec of flags.fromFile) {
    const eq = spec.indexOf("=");
    const [key, file] = eq > 0 ? [spec.slice(0, eq), spec.slice(eq + 1)] : [path.basename(spec), spec];
    add(key, await readFileBounded(file, `--from-file ${spec}`), "--from-file");
  }
  if (values.size === 0) throw usageError("--secret needs at least one --from-file or --from-literal");
  const matchLabels = flags.clusterSelector ? parseLabels(flags.clusterSelector) : undefined;
  // the values open only for these clusters: the manifest's target, sealed in
  const target: SealTarget = flags.cluster
    ? { cluster: flags.cluster }
    : { clusterSelector: { matchLabels } };
  return (pem) => {
    const encryptedData: Record<string, string> = {};
    for (const key of [...values.keys()].sort())
      encryptedData[key] = sealValue(
        values.get(key) as Buffer,
        pem,
        secretValueContext(target, namespace, name, key),
      );
    return stringify({
      apiVersion: "rlinf.io/v1alpha1",
      kind: "SealedSecret",
      metadata: { name, ...(flags.cluster ? { namespace: `agent-${flags.cluster}` } : {}) },
      spec: { namespace, ...(matchLabels ? { clusterSelector: { matchLabels } } : {}), encryptedData },
    });
  };
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw usageError(`--cluster-selector: "${pair}" is not key=value`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

async function readFileBounded(file: string, flag: string): Promise<Buffer> {
  // stdin may be a pipe or socket that open() cannot reopen: read the stream itself.
  if (file === "-" || file === "/dev/stdin") return readBounded(process.stdin, flag);
  const handle = await open(file, "r").catch((error: NodeJS.ErrnoException) => {
    throw usageError(`${flag}: cannot be read (${error.code ?? error.message})`);
  });
  try {
    return await readBounded(handle.createReadStream({ autoClose: false }), flag);
  } finally {
    await handle.close();
  }
}

/** All of `stream`, refused past the largest value a Secret holds. */
async function readBounded(stream: AsyncIterable<Buffer | string>, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_SEALED_PLAIN_BYTES)
      throw usageError(`${what}: larger than ${MAX_SEALED_PLAIN_BYTES} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
