// Writes a GitOps repository of N manifests (mixed kinds, realistic sizes, about 10 % invalid)
// for the validate benchmark. Deterministic: the same N gives the same files.
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { stringify } from "yaml";

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const API = "rlinf.io/v1alpha1";

/** An ed25519 key line of its own for user `i`: one key on two Users is refused (cross/ssh-key-duplicate). */
function userKey(i: number): string {
  const string = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const key = createHash("sha256").update(`user-${i}`).digest();
  return `ssh-ed25519 ${Buffer.concat([string(Buffer.from("ssh-ed25519")), string(key)]).toString("base64")} u@h`;
}

function podTemplate(image: string, gpu: boolean) {
  return {
    namespace: "rlark-system",
    metadata: { labels: { app: "trainer" } },
    spec: {
      containers: [
        {
          name: "main",
          image,
          command: ["python", "-m", "rlinf.train"],
          args: ["--algo", "ppo", "--env", "CartPole-v1", "--steps", "1000000"],
          env: [
            { name: "RAY_ADDRESS", value: "auto" },
            { name: "WANDB_MODE", value: "offline" },
          ],
          ports: [{ containerPort: 8265, name: "dashboard" }],
          resources: {
            requests: { cpu: "4", memory: "16Gi", ...(gpu ? { "nvidia.com/gpu": "1" } : {}) },
            limits: gpu ? { "nvidia.com/gpu": "1" } : { memory: "16Gi" },
          },
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
      volumes: [
        {
          name: "data",
          ephemeral: {
            volumeClaimTemplate: {
              spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "10Gi" } } },
            },
          },
        },
      ],
    },
  };
}

function job(i: number, domains: number, invalid: boolean, random: () => number) {
  const kind = invalid && random() < 0.5 ? "Deploymnet" : "Deployment";
  const replicas = invalid && kind === "Deployment" ? "two" : 2;
  return {
    apiVersion: API,
    kind: "Job",
    metadata: { name: `job-${i}`, labels: { framework: "ppo", team: `team-${i % 17}` } },
    spec: {
      domain: `domain-${i % domains}`,
      tasks: [
        {
          name: "actor-head",
          head: true,
          role: "Actor",
          agentType: "Kubernetes",
          nodeSelector: { "nvidia.com/gpu": "true" },
          annotations: { "rlinf.io/ray-role": "head", "rlinf.io/ray-total-nodes": "3" },
          kubernetes: {
            workload: { kind, replicas: 1, template: podTemplate("pytorch/pytorch:2.3.0", true) },
          },
        },
        {
          name: "rollout",
          role: "Rollout",
          agentType: "Kubernetes",
          annotations: { "rlinf.io/ray-role": "worker", "rlinf.io/ray-head-task-name": "actor-head" },
          kubernetes: {
            workload: { kind: "StatefulSet", replicas, template: podTemplate("rlark/rollout:1.0", false) },
          },
        },
        {
          name: "env",
          role: "Env",
          agentType: "Raw",
          raw: { command: ["python", "env.py"], args: ["--port", "9000"], replicas: 1 },
        },
      ],
    },
  };
}

export async function generateRepository(dir: string, count: number): Promise<{ invalid: number }> {
  const random = rng(42);
  const domains = Math.max(1, Math.floor(count * 0.05));
  const clusters = Math.max(1, Math.floor(count * 0.01));
  let invalid = 0;
  const docs: [string, unknown][] = [];
  for (let i = 0; i < domains; i++) {
    docs.push([
      `domains/domain-${i}.yaml`,
      {
        apiVersion: API,
        kind: "Domain",
        metadata: { name: `domain-${i}` },
        spec: { cidr: `10.${Math.floor(i / 256)}.${i % 256}.0/24` },
      },
    ]);
  }
  for (let i = 0; i < clusters; i++) {
    docs.push([
      `clusters/cluster-${i}.yaml`,
      {
        apiVersion: API,
        kind: "Cluster",
        metadata: { name: `cluster-${i}`, labels: { "rlark.io/city": `city-${i % 7}` } },
        spec: { runtime: "kubernetes", description: "benchmark cluster" },
      },
    ]);
  }
  while (docs.length < count) {
    const i = docs.length;
    const bad = random() < 0.1;
    if (bad) invalid++;
    const pick = random();
    if (pick < 0.75) docs.push([`jobs/job-${i}.yaml`, job(i, domains, bad, random)]);
    else if (pick < 0.9) {
      docs.push([
        `nodes/node-${i}.yaml`,
        {
          apiVersion: API,
          kind: "Node",
          metadata: {
            name: `node-${i}`,
            namespace: `agent-cluster-${i % clusters}`,
            labels: { "rlark.io/node-category-cloud": "true" },
            annotations: { "rlark.io/gpu-model": "NVIDIA A100" },
          },
          spec: { unschedulable: bad ? "yes" : false },
        },
      ]);
    } else {
      docs.push([
        `users/user-${i}.yaml`,
        {
          apiVersion: API,
          kind: "User",
          metadata: { name: `user-${i}` },
          spec: {
            roles: [bad ? "superuser" : "user"],
            sshPublicKeys: [userKey(i)],
          },
        },
      ]);
    }
  }
  for (const sub of ["domains", "clusters", "jobs", "nodes", "users"])
    await mkdir(path.join(dir, sub), { recursive: true });
  for (const [file, doc] of docs) await writeFile(path.join(dir, file), stringify(doc));
  return { invalid };
}
