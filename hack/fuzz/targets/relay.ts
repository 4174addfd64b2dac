// The hub's domain relay reads a ticket line from anyone who reaches its port, and a dial's
// `:authority` from a nodeserver: both checked by lib/relay's protocol before anything is looked up.
import fc from "fast-check";
import { isTicket, splitTarget } from "../../../operators/lib/relay/index.ts";
import { clearly, type FuzzTarget } from "../target.ts";

const line = fc.oneof(
  fc.stringMatching(/^[0-9a-f]{32}$/),
  fc.stringMatching(/^[0-9a-fA-F]{30,34}\r?$/),
  fc.string({ unit: "binary", maxLength: 64 }),
);
const authority = fc.oneof(
  fc.tuple(fc.ipV4(), fc.integer({ min: -1, max: 70000 })).map(([ip, port]) => `${ip}:${port}`),
  fc.stringMatching(/^[0-9.]{1,20}:[0-9]{0,7}$/),
  fc.string({ unit: "binary", maxLength: 64 }),
);

export const relayTicketLines: FuzzTarget<[string, string]> = {
  name: "relay-ticket-lines",
  about: "the relay's ticket lines and dial authorities: lib/relay isTicket, splitTarget",
  input: fc.tuple(line, authority),
  async run([ticket, target]) {
    await clearly(() => isTicket(ticket));
    const split = await clearly(() => splitTarget(target));
    if (split && (split.port < 1 || split.port > 65535))
      throw new Error(`splitTarget accepted port ${split.port}`);
  },
};
