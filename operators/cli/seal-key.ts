import type { Command } from "commander";
import { escapeControl } from "../lib/terminal-text.ts";
import { loadHubKey } from "./hub-key.ts";
import { callHub, resolveToken, type TokenFlags } from "./hub-token.ts";

export const SEAL_KEY_HELP = `
The hub's sealing key (docs/secrets.md). \`show\` prints its public key as PEM, for CI
(\`rlark validate --hub-key\`) and for sealing without access to the hub (\`rlark seal --hub-key
FILE\`); \`rotate\` (admin token) makes a new key that new values are sealed to. Values sealed to
older keys keep opening: the hub never deletes a key.

Examples:
  rlark seal-key show --hub https://rlark.example.com > hub-seal.pem
  rlark seal-key rotate --hub https://rlark.example.com --token-file ~/.rlark-admin-token
`;

interface KeyFlags extends TokenFlags {
  hub: string;
}

function hubFlags(command: Command): Command {
  return command
    .option("--hub <url>", "the hub's HTTP address", "http://127.0.0.1:8080")
    .option("--data-dir <dir>", "where to find admin-token when no token is given", ".rlark")
    .option("--token <token>", "bearer token (or RLARK_TOKEN)")
    .option("--token-file <file>", "file holding the bearer token");
}

export function registerSealKey(program: Command): void {
  const command = program
    .command("seal-key")
    .description("show or rotate the hub's sealing key")
    .addHelpText("after", SEAL_KEY_HELP);
  hubFlags(command.command("show").description("print the hub's public sealing key (PEM)"))
    .addHelpText("after", SEAL_KEY_HELP)
    .action(async (flags: KeyFlags) => {
      const key = await loadHubKey({ ...flags, hubKey: flags.hub });
      process.stdout.write(key.pem);
      process.stderr.write(`key ids the hub opens: ${key.keyIds.join(", ")}\n`);
    });
  hubFlags(command.command("rotate").description("make a new sealing key (values sealed before still open)"))
    .addHelpText("after", SEAL_KEY_HELP)
    .action(async (flags: KeyFlags) => {
      const token = await resolveToken(flags);
      const url = new URL("/api/v1/seal-key/rotate", flags.hub);
      const response = await callHub("POST", url, token);
      const { keyId, keyIds } = (await response.json()) as { keyId: string; keyIds: string[] };
      process.stdout.write(
        `new sealing key ${escapeControl(keyId)}; the hub opens ${escapeControl(keyIds.join(", "))}\n`,
      );
    });
}
