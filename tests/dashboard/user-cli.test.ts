import { Command } from "commander";
import t from "tap";
import { DEFAULT_COST, registerUser } from "../../operators/cli/user.ts";
import { DEFAULT_SCRYPT, verifyPassword } from "../../operators/dashboard/auth/index.ts";

t.test(
  "the CLI's default cost is the dashboard's (written out so `rlark` starts without the hub's code)",
  async (t) => {
    t.equal(DEFAULT_COST, DEFAULT_SCRYPT.ln);
  },
);

t.test("rlark user hash-password prints a hash the login verifies", async (t) => {
  const out: string[] = [];
  const program = new Command("rlark").exitOverride();
  registerUser(program, { readPassword: async () => "correct horse\n", stdout: (s) => out.push(s) });
  await program.parseAsync(["user", "hash-password", "--cost", "14"], { from: "user" });
  const hash = out.join("").trim();
  t.match(hash, /^\$scrypt\$ln=14,r=8,p=1\$/);
  t.ok(await verifyPassword("correct horse", hash), "the shell's trailing newline is not part of it");
  t.notOk(await verifyPassword("correct horse\n", hash));
});

t.test("an empty password or a weak cost is refused", async (t) => {
  const program = new Command("rlark").exitOverride();
  registerUser(program, { readPassword: async () => "\n", stdout: () => {} });
  await t.rejects(program.parseAsync(["user", "hash-password"], { from: "user" }), /no password/);
  const weak = new Command("rlark").exitOverride();
  registerUser(weak, { readPassword: async () => "x", stdout: () => {} });
  await t.rejects(weak.parseAsync(["user", "hash-password", "--cost", "8"], { from: "user" }), /--cost/);
});
