// hops.ts's ssh2 client, on its own thread as an agent is its own process: it connects with the
// suite it is given, asks for stream channels (forwardIn, as the agent does) and answers each
// with the bytes of a local TCP source, piped as the agent's serveStream pipes a target.
import { connect } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import ssh2 from "ssh2";
import { coalesceWrites, dialNoDelay } from "../../../operators/lib/tunnel/index.ts";

interface HopClientData {
  port: number;
  sourcePort: number;
  cipher: string;
  mac: string;
  coalesce: boolean;
  privateKey: string;
}

const data = workerData as HopClientData;
const sock = await dialNoDelay("127.0.0.1", data.port, 10_000);
if (data.coalesce) coalesceWrites(sock);
const client = new ssh2.Client();
client.on("tcp connection", (_info, accept) => {
  const channel = accept();
  const source = connect(data.sourcePort, "127.0.0.1");
  source.setNoDelay(true);
  source.pipe(channel).pipe(source);
  source.on("error", () => channel.destroy());
  channel.on("close", () => source.destroy());
});
client.on("ready", () =>
  client.forwardIn("bench", 0, (err) => {
    if (err) throw err;
    parentPort?.postMessage("ready");
  }),
);
client.on("error", (err) => {
  throw err;
});
client.connect({
  sock,
  username: "bench",
  privateKey: data.privateKey,
  algorithms: {
    cipher: [data.cipher as ssh2.CipherAlgorithm],
    hmac: [data.mac as ssh2.MacAlgorithm],
  },
});
parentPort?.once("message", () => {
  client.end();
  parentPort?.close();
});
