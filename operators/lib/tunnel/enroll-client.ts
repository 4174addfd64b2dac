import ssh2 from "ssh2";
import {
  certificateFingerprint,
  fingerprintsEqual,
  generateKeyPair,
  type KeyPair,
  PkiError,
  sshPublicKeyBlob,
  verifyCertificate,
} from "../pki/index.ts";
import { dialNoDelay } from "./connect.ts";
import type { AgentCredentials } from "./credentials.ts";
import { checkHubIdentity, parseHubAddresses } from "./hub-identity.ts";
import { MessageChannel } from "./message-channel.ts";
import { type EnrollRequest, type EnrollResponse, parseEnrollResponse } from "./protocol.ts";
import {
  CIPHERS,
  ENROLL_SUBSYSTEM,
  ENROLL_USER,
  IDENTITY_MARKER,
  MACS,
  pemCertificates,
} from "./ssh-options.ts";

export interface EnrollOptions {
  /** `host:port` of the hub's SSH endpoint. */
  hub: string;
  token: string;
  /** `sha256:<hex>` of the hub CA certificate, printed by `rlark token create`. */
  caHash: string;
  keyPair?: KeyPair;
  timeoutMs?: number;
  now?: () => number;
}

/**
 * Enrolls an agent: checks the hub against the pinned CA fingerprint inside the
 * keyboard-interactive exchange, answers with the token only if it matches, then sends its
 * public key and receives a certificate bound to the token's cluster.
 */
export async function enrollAgent(options: EnrollOptions): Promise<AgentCredentials> {
  // The option stays `now` while operators/agent/enroll.ts passes one (issue 23: one clock style).
  const clock = { now: options.now ?? Date.now };
  const timeoutMs = options.timeoutMs ?? 30_000;
  // Enrollment goes to the first of several hub addresses (it is retried by the caller).
  const { host, port } = parseHubAddresses(options.hub)[0]!;
  const keys = options.keyPair ?? generateKeyPair();
  const sock = await dialNoDelay(host, port, timeoutMs);
  const client = new ssh2.Client();
  let handshakeKey: Buffer | undefined;
  let caCertPem: string | undefined;
  let hubCertPem: string | undefined;
  let identityError: Error | undefined;

  const result = new Promise<AgentCredentials>((resolve, reject) => {
    const fail = (err: Error) => {
      client.end();
      reject(err);
    };
    client.on("error", (err) => fail(identityError ?? err));
    client.on("close", () => reject(identityError ?? new Error("the hub closed the enrollment connection")));
    client.on("ready", () => {
      client.subsys(ENROLL_SUBSYSTEM, (err, stream) => {
        if (err) return fail(new Error(`the hub refused enrollment: ${err.message}`));
        const channel = new MessageChannel<EnrollResponse, EnrollRequest>(stream, {
          parse: parseEnrollResponse,
          maxLineBytes: 64 * 1024,
        });
        channel.on("invalid", fail);
        channel.once("message", (answer) => {
          channel.close();
          if (answer.type === "error") return fail(new Error(answer.message));
          try {
            const pinned = caCertPem!;
            if (certificateFingerprint(answer.caCert) !== certificateFingerprint(pinned)) {
              throw new PkiError("untrusted", "the hub answered with another CA");
            }
            const id = verifyCertificate(answer.cert, { role: "agent" }, { caCertPem: pinned, clock });
            if (!sshPublicKeyBlob(id.publicKeyPem).equals(sshPublicKeyBlob(keys.privateKeyPem))) {
              throw new PkiError("untrusted", "the hub certified a different key");
            }
            client.end();
            resolve({
              cluster: id.cluster ?? id.name,
              privateKeyPem: keys.privateKeyPem,
              certPem: answer.cert,
              caCertPem: answer.caCert,
              ...(hubCertPem ? { hubCertPem } : {}),
            });
          } catch (e) {
            fail(e as Error);
          }
        });
        channel.send({ type: "csr", publicKey: keys.publicKeyPem });
      });
    });
  });

  client.connect({
    sock,
    username: ENROLL_USER,
    readyTimeout: timeoutMs,
    algorithms: { cipher: CIPHERS, hmac: MACS },
    hostVerifier: (key: Buffer) => {
      handshakeKey = Buffer.from(key);
      return true;
    },
    authHandler: (_methodsLeft, _partial, next) => {
      if (caCertPem || identityError) return next(false as never);
      next({
        type: "keyboard-interactive",
        username: ENROLL_USER,
        prompt: (_name, instructions, _lang, _prompts, finish) => {
          try {
            if (!instructions.startsWith(IDENTITY_MARKER)) {
              throw new PkiError("untrusted", "the server did not present an rlark hub identity");
            }
            const [ca, hostCert] = pemCertificates(instructions);
            if (!ca || !hostCert) throw new PkiError("untrusted", "the hub identity lacks its certificates");
            const seen = certificateFingerprint(ca);
            if (!fingerprintsEqual(seen, options.caHash)) {
              throw new PkiError(
                "untrusted",
                `the hub's CA is ${seen}, not the pinned ${options.caHash}: refusing to send the token`,
              );
            }
            checkHubIdentity({ caCertPem: ca, hostCertPem: hostCert, handshakeHostKey: handshakeKey, clock });
            caCertPem = ca;
            hubCertPem = hostCert;
          } catch (err) {
            identityError = err as Error;
            client.end();
            return;
          }
          finish([options.token]);
        },
      });
    },
  });
  return result;
}
