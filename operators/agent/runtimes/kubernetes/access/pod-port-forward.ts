// One TCP connection to a port of a kubernetes pod through the apiserver's pods/portforward
// subresource, as a byte Duplex (for `ssh -L` and the hub's HTTP proxies). One WebSocket per
// connection, as kubectl over WebSockets does: channel 0 carries the data, channel 1 the
// kubelet's error for it; the first message of each starts with the port (2 bytes).
import { Duplex } from "node:stream";
import type { KubeConfig } from "@kubernetes/client-node";
import { type ChannelSocket, openChannelSocket } from "./channel-socket.ts";

const DATA = 0;
const ERROR = 1;
/** The port prefix of a channel's first message. */
const PORT_PREFIX = 2;
/** An error message longer than this is cut: it only goes into an error. */
const MAX_ERROR = 4096;

export async function podPortForward(
  kubeConfig: KubeConfig,
  pod: { namespace: string; name: string },
  port: number,
): Promise<Duplex> {
  const what = `port ${port} of pod ${pod.namespace}/${pod.name}`;
  const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/portforward?ports=${port}`;
  let socket: ChannelSocket | undefined;
  const prefixed = new Set<number>();
  const duplex = new Duplex({
    write(chunk: Buffer, _encoding, done) {
      if (!socket) return done();
      if (socket.send(DATA, chunk)) done();
      else void socket.drain().then(() => done());
    },
    final(done) {
      // the channel protocol cannot half-close: the connection ends when the pod's side does
      done();
    },
    read() {
      socket?.resume();
    },
    destroy(err, done) {
      socket?.close();
      done(err);
    },
  });
  socket = await openChannelSocket(kubeConfig, `forward to ${what}`, path, ["v4.channel.k8s.io"], {
    message(channel, data) {
      if (!prefixed.has(channel)) {
        prefixed.add(channel);
        data = data.subarray(PORT_PREFIX);
      }
      if (data.length === 0) return;
      if (channel === DATA) {
        if (!duplex.push(data)) socket?.pause();
      } else if (channel === ERROR) {
        // the kubelet could not reach the port (or lost it): this connection is over
        const message = data.toString("utf8", 0, Math.min(data.length, MAX_ERROR)).trim();
        duplex.destroy(new Error(`forward to ${what}: ${message}`));
      }
    },
    closed(closeError) {
      if (closeError) duplex.destroy(closeError);
      else duplex.push(null);
    },
  });
  // the hub gave up (its client left) while the apiserver was answering
  if (duplex.destroyed) socket.close();
  return duplex;
}
