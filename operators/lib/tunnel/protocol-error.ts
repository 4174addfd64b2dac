/** A message that does not parse: the peer said something the protocol does not allow. */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProtocolError";
  }
}
