// Dashboard session tokens (JWTs) and the cookies a browser sends: anyone can send either.
import fc from "fast-check";
import { cookieValues, podCookies, podSetCookie } from "../../../operators/access/index.ts";
import { signJwt, verifyJwt } from "../../../operators/dashboard/index.ts";
import { clearly, type FuzzTarget } from "../target.ts";

const SECRET = Buffer.from("fuzz-secret-fuzz-secret-fuzz-sec");
const NOW = 1_800_000_000;
const claims = fc.record({
  sub: fc.oneof(fc.string(), fc.integer()),
  role: fc.oneof(fc.constantFrom("admin", "user", "viewer"), fc.string()),
  iat: fc.oneof(fc.integer({ min: NOW - 1000, max: NOW + 1000 }), fc.string()),
  exp: fc.oneof(fc.integer({ min: NOW - 1000, max: NOW + 100000 }), fc.constant(null)),
});
const b64 = (s: string) => Buffer.from(s).toString("base64url");
const token = fc.oneof(
  // signed right: claims of any shape reach the claims check
  claims.map((c) => signJwt(c as never, SECRET)),
  fc.anything({ maxDepth: 2 }).map((c) => {
    const signed = signJwt({ sub: "x", role: "admin", iat: NOW, exp: NOW + 10 }, SECRET).split(".");
    return [signed[0], b64(JSON.stringify(c) ?? ""), signed[2]].join(".");
  }),
  fc.array(fc.string({ maxLength: 40 }), { maxLength: 5 }).map((parts) => parts.join(".")),
  fc.string({ unit: "binary", maxLength: 200 }),
);

export const jwt: FuzzTarget<string> = {
  name: "jwt",
  about: "dashboard session tokens: dashboard/auth/jwt.ts verifyJwt",
  input: token,
  async run(t) {
    await clearly(() => verifyJwt(t, SECRET, NOW));
  },
};

const pair = fc.tuple(
  fc.oneof(fc.constant("rlark-proxy"), fc.string({ maxLength: 12 })),
  fc.string({ maxLength: 30 }),
);
const header = fc.oneof(
  fc.array(pair, { maxLength: 5 }).map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join("; ")),
  fc.string({ unit: "binary", maxLength: 200 }),
);
const setCookie = fc
  .tuple(
    pair,
    fc.array(
      fc.constantFrom(
        "Path=/",
        "Path=/x/../..",
        "Domain=evil",
        "Secure",
        "HttpOnly",
        "SameSite=None",
        "Max-Age=-1",
        "__Host-",
        ";;",
        "Path",
      ),
      { maxLength: 4 },
    ),
  )
  .map(([[k, v], attrs]) => [`${k}=${v}`, ...attrs].join("; "));

export const cookies: FuzzTarget<[string, string, string]> = {
  name: "cookies",
  about:
    "Cookie and Set-Cookie headers through the pod proxy: access/proxy cookieValues, podCookies, podSetCookie",
  input: fc.tuple(
    header,
    fc.oneof(setCookie, fc.string({ unit: "binary", maxLength: 100 })),
    fc.string({ maxLength: 40 }),
  ),
  async run([h, set, prefix]) {
    await clearly(() => cookieValues(h, "rlark-proxy"));
    await clearly(() => podCookies([h, h]));
    await clearly(() => podSetCookie(set, `/api/v1/pods/${prefix}/`));
  },
};
