// The Domain data path end to end on real network namespaces (as root): pods in two "clusters"
// reach each other by virtual IP through sidecar -> nodeserver -> hub relay -> nodeserver ->
// sidecar, with unmodified programs (curl, Python, redis).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import t from "tap";
import { DomainBed } from "../helpers/domain-net.ts";
import { waitFor } from "../helpers/wait-for.ts";

const sha256 = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(file)
      .on("data", (c) => hash.update(c))
      .on("end", () => resolve(hash.digest("hex")))
      .on("error", reject);
  });

t.test("pods of one Domain in two clusters talk by virtual IP; others are refused", async (t) => {
  const bed = new DomainBed();
  t.teardown(() => bed.close());
  await bed.start();
  const net = `100.${64 + (bed.subnet % 60)}`;
  await bed.domain("train", `${net}.0.0/24`);
  await bed.domain("other", `${net}.1.0/24`);
  bed.startNodeserver("c1");
  bed.startNodeserver("c2");
  const a = await bed.pod("a", "c1", "train", `${net}.0.10`);
  const b = await bed.pod("b", "c2", "train", `${net}.0.20`);
  const c = await bed.pod("c", "c1", "train", `${net}.0.30`);
  const x = await bed.pod("x", "c1", "other", `${net}.1.10`);
  const loner = await bed.pod("loner", "c1");
  await bed.publish();
  for (const pod of [a, b, c, x]) bed.startSidecar(pod);
  await bed.ready();

  const file = path.join(bed.dir, "payload.bin");
  b.exec("dd", ["if=/dev/urandom", `of=${file}`, "bs=1M", "count=100", "status=none"]);
  const want = await sha256(file);
  const web = b.spawn("python3", ["-m", "http.server", "8000", "--bind", "0.0.0.0", "--directory", bed.dir]);
  const redis = b.spawn("redis-server", [
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--protected-mode",
    "no",
  ]);
  t.teardown(() => {
    web.kill();
    redis.kill();
  });
  await waitFor(
    "B's servers listening",
    () => b.exec("ss", ["-Htln"]).includes(":8000") && b.exec("ss", ["-Htln"]).includes(":6379"),
    { attempts: 200, everyMs: 50 },
  );

  await t.test("100 MB A (c1) -> B (c2) with curl, byte for byte", async (t) => {
    const out = path.join(bed.dir, "curl.bin");
    await a.run("curl", ["-sSf", "-o", out, `http://${b.vip}:8000/payload.bin`]);
    t.equal(await sha256(out), want, "sha256 matches");
    t.ok((bed.hub.domainRelay?.stats().relayedBytes ?? 0) >= 100 * 1024 * 1024, "the hub relayed it");
  });

  await t.test("100 MB A -> B with a Python client", async (t) => {
    const digest = (
      await a.run("python3", [
        "-c",
        `import hashlib,urllib.request\nh=hashlib.sha256()\nr=urllib.request.urlopen("http://${b.vip}:8000/payload.bin")\nwhile True:\n  c=r.read(1<<20)\n  if not c: break\n  h.update(c)\nprint(h.hexdigest())`,
      ])
    ).trim();
    t.equal(digest, want, "sha256 matches");
  });

  await t.test("an unmodified redis-cli reaches redis-server across clusters", async (t) => {
    t.equal(
      (await a.run("redis-cli", ["-h", b.vip as string, "-p", "6379", "set", "greeting", "hello"])).trim(),
      "OK",
    );
    t.equal(
      (await a.run("redis-cli", ["-h", b.vip as string, "-p", "6379", "get", "greeting"])).trim(),
      "hello",
    );
  });

  await t.test("same-cluster traffic stays local: the hub relays nothing", async (t) => {
    const small = path.join(bed.dir, "small.txt");
    writeFileSync(small, "local bytes\n".repeat(1000));
    const cweb = c.spawn("python3", [
      "-m",
      "http.server",
      "8001",
      "--bind",
      "0.0.0.0",
      "--directory",
      bed.dir,
    ]);
    t.teardown(() => cweb.kill());
    await waitFor("C listening", () => c.exec("ss", ["-Htln"]).includes(":8001"), {
      attempts: 200,
      everyMs: 50,
    });
    const before = bed.hub.domainRelay?.stats().relayedBytes;
    const body = await a.run("curl", ["-sSf", `http://${c.vip}:8001/small.txt`]);
    t.equal(body, "local bytes\n".repeat(1000));
    t.equal(bed.hub.domainRelay?.stats().relayedBytes, before, "relayed bytes unchanged");
    const pair = () => {
      const stats = JSON.parse(
        execFileSync(
          "curl",
          ["-s", "--unix-socket", `${bed.socketDir("c1")}/nodeserver.sock`, "http://nodeserver/stats"],
          { encoding: "utf8" },
        ),
      ) as Record<
        string,
        { peers: { source: string; target: string; directConnections: number; bytesSent: number }[] }
      >;
      return stats.train?.peers.find((p) => p.source === a.vip && p.target === c.vip);
    };
    t.ok((pair()?.directConnections ?? 0) >= 1, "A dialled C itself");
    t.equal(pair()?.bytesSent, 0, "no byte went through the nodeserver");

    // Without a route between the pods the nodeserver carries the connection instead.
    const route = [`10.${bed.subnet}.0.0/16`, "via", a.localIP.replace(/\.2$/, ".1")];
    a.exec("ip", ["route", "del", ...route]);
    t.teardown(() => a.exec("ip", ["route", "add", ...route]));
    t.equal(await a.run("curl", ["-sSf", `http://${c.vip}:8001/small.txt`]), "local bytes\n".repeat(1000));
    t.ok((pair()?.bytesSent ?? 0) > 0, "the nodeserver carried it");
    t.equal(bed.hub.domainRelay?.stats().relayedBytes, before, "still nothing through the hub");
  });

  await t.test("a pod of another Domain and a pod in no Domain cannot reach B", async (t) => {
    const fds = () => readdirSync(`/proc/${bed.nodeservers.get("c1")?.pid}/fd`).length;
    const before = fds();
    await t.rejects(
      x.run("python3", [
        "-c",
        `import socket\nc=socket.create_connection(("${b.vip}",8000))\nc.sendall(b"GET /")\nassert c.recv(1)`,
      ]),
      "other Domain refused to a program that writes first",
    );
    // A refused connection is closed on the nodeserver's side too, not left open unread.
    await waitFor("c1's nodeserver back to its fd count", () => fds() <= before, {
      attempts: 100,
      everyMs: 50,
    });
    await t.rejects(
      x.run("curl", ["-sSf", "--max-time", "5", `http://${b.vip}:8000/small.txt`]),
      "other Domain refused",
    );
    await t.rejects(
      loner.run("curl", ["-sSf", "--max-time", "5", `http://${b.vip}:8000/small.txt`]),
      "no Domain refused",
    );
  });
});
