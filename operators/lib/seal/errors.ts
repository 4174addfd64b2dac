/** A sealed value that cannot be opened or is not well formed; the message names why, never the value. */
export class SealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealError";
  }
}
