// The bastion's Go SSH front: users' SFTP and port forwards carried by `rlark-net ssh-front`,
// every decision made here in TypeScript (ADR 0011).
export { createSshFront, type HopStats, type SshFront, type SshFrontOptions } from "./front.ts";
