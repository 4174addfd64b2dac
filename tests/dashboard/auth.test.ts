// Password hashes, session JWTs and the rate limiter, exhaustively where the logic is pure.
import t from "tap";
import {
  createRateLimiter,
  hashPassword,
  highestRole,
  parsePasswordHash,
  signJwt,
  verifyJwt,
  verifyPassword,
} from "../../operators/dashboard/auth/index.ts";
import { FakeClock } from "../../operators/lib/clock.ts";

t.test("a scrypt hash verifies its password and nothing else", async (t) => {
  const hash = await hashPassword("s3cret", { ln: 10, r: 8, p: 1 });
  t.match(hash, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
  t.ok(await verifyPassword("s3cret", hash));
  t.notOk(await verifyPassword("s3cret ", hash));
  t.notOk(await verifyPassword("", hash));
  t.not(
    await hashPassword("s3cret", { ln: 10, r: 8, p: 1 }),
    hash,
    "salted: the same password hashes differently",
  );
});

t.test("hashes this hub cannot or should not verify are refused, not guessed", async (t) => {
  t.notOk(
    await verifyPassword("x", "$2b$10$abcdefghijklmnopqrstuuabcdefghijklmnopqrstuvwxyz01234"),
    "bcrypt",
  );
  t.notOk(
    parsePasswordHash("$scrypt$ln=30,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"),
    "cost too high",
  );
  t.notOk(parsePasswordHash("$scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA"), "salt and key too short");
  t.notOk(await verifyPassword("x", "plain text"));
});

t.test("a session JWT verifies until it expires; tampering, other keys and other algorithms fail", (t) => {
  const secret = Buffer.alloc(32, 7);
  const claims = { sub: "carol", role: "user" as const, iat: 1000, exp: 2800 };
  const token = signJwt(claims, secret);
  t.same(verifyJwt(token, secret, 1500), claims);
  t.equal(verifyJwt(token, secret, 2800), undefined, "expired at exp");
  t.equal(verifyJwt(token, Buffer.alloc(32, 8), 1500), undefined, "another hub's key");
  const [h, , s] = token.split(".");
  const forged = Buffer.from(JSON.stringify({ ...claims, role: "admin" })).toString("base64url");
  t.equal(verifyJwt(`${h}.${forged}.${s}`, secret, 1500), undefined, "a changed role breaks the signature");
  const none = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
  t.equal(verifyJwt(`${none}.${forged}.`, secret, 1500), undefined, "alg none");
  t.equal(verifyJwt("a.b", secret, 1500), undefined);
  t.end();
});

t.test("the limiter refuses past the limit until the window passes", (t) => {
  const clock = new FakeClock(0);
  const limiter = createRateLimiter({ max: 2, windowMs: 10_000, clock });
  t.equal(limiter.retryAfter("a"), 0);
  limiter.hit("a");
  limiter.hit("a");
  t.equal(limiter.retryAfter("a"), 10);
  t.equal(limiter.retryAfter("b"), 0, "per key");
  clock.advance(9_500);
  t.equal(limiter.retryAfter("a"), 1);
  clock.advance(500);
  t.equal(limiter.retryAfter("a"), 0);
  t.end();
});

t.test("a User's strongest role is its session role", (t) => {
  t.equal(highestRole(["viewer", "admin"]), "admin");
  t.equal(highestRole(["user"]), "user");
  t.equal(highestRole(["root"]), undefined);
  t.equal(highestRole(undefined), undefined);
  t.end();
});
