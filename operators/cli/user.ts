import type { Command } from "commander";
import { usageError } from "./cli-error.ts";
import { requireExistingPaths } from "./existing-paths.ts";

/**
 * DEFAULT_SCRYPT.ln of dashboard/auth, written out: the dashboard is loaded only when the command
 * runs, so that `rlark` starts without the hub's code (the agent's image does not carry it).
 */
export const DEFAULT_COST = 15;

export interface UserCommandDeps {
  /** The password source; default: standard input (one line). */
  readPassword?: () => Promise<string>;
  stdout?: (text: string) => void;
}

export const HASH_PASSWORD_HELP = `
Reads a password from standard input and prints its scrypt hash for a User's spec.passwordHash:

  printf '%s' "$PASSWORD" | rlark user hash-password
  # $scrypt$ln=15,r=8,p=1$<salt>$<key>

Commit the hash, never the password. The dashboard's login verifies it (docs/dashboard.md).
`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export const KEYS_HELP = `
Prints each User's SSH public keys with their SHA256 fingerprints (the form \`ssh-keygen -l\`
prints), one line each: user, fingerprint, type, comment, and where the key is written.
A key that does not parse, or that two Users list, is reported with its file and line, and the
exit status is 1 (\`rlark validate\` refuses the same).
`;

export function registerUser(program: Command, deps: UserCommandDeps = {}): void {
  const user = program.command("user").description("helpers for User objects in git");
  user
    .command("keys")
    .description("list the Users' SSH public keys with their fingerprints")
    .argument("[paths...]", "files or directories of the repository", ["."])
    .addHelpText("after", KEYS_HELP)
    .action(async (paths: string[]) => {
      requireExistingPaths(paths, process.cwd());
      const [{ formatDiagnostic, parseSshPublicKey }, { validatePaths }] = await Promise.all([
        import("../api/index.ts"),
        import("../source/index.ts"),
      ]);
      const result = await validatePaths(paths, { baseDir: process.cwd() });
      const out = deps.stdout ?? ((text: string) => process.stdout.write(text));
      for (const object of result.objects) {
        if (object.kind !== "User" || !object.schemaValid) continue;
        const spec = object.object.spec as { sshPublicKeys?: string[] };
        (spec.sshPublicKeys ?? []).forEach((line, i) => {
          const key = parseSshPublicKey(line);
          if ("error" in key) return;
          const at = object.document.locate(`/spec/sshPublicKeys/${i}`).line;
          out(
            `${object.name}\t${key.fingerprint}\t${key.type}\t${key.comment}\t${object.document.file}:${at}\n`,
          );
        });
      }
      const problems = result.errors.filter((e) => e.rule.startsWith("cross/ssh-key-"));
      for (const problem of problems) process.stderr.write(`${formatDiagnostic(problem)}\n`);
      if (problems.length > 0) process.exitCode = 1;
    });
  user
    .command("hash-password")
    .description("print the scrypt hash of a password read from standard input")
    .option("--cost <ln>", "log2 of scrypt's cost N", String(DEFAULT_COST))
    .addHelpText("after", HASH_PASSWORD_HELP)
    .action(async (options: { cost: string }) => {
      const ln = Number(options.cost);
      if (!Number.isInteger(ln) || ln < 14 || ln > 20)
        throw usageError("--cost must be an integer from 14 to 20");
      // One trailing newline is the shell's, not the password's.
      const password = (await (deps.readPassword ?? readStdin)()).replace(/\r?\n$/, "");
      if (password.length === 0) throw usageError("no password on standard input");
      const { DEFAULT_SCRYPT, hashPassword } = await import("../dashboard/index.ts");
      const hash = await hashPassword(password, { ...DEFAULT_SCRYPT, ln });
      (deps.stdout ?? ((text: string) => process.stdout.write(text)))(`${hash}\n`);
    });
}
