// Certificates and keys for one local cluster, made on the fly: a CA, the apiserver's serving
// certificate, client certificates for each component and the admin, and the service-account key
// pair. Keys come from node:crypto (fast, native); node-forge only assembles and signs the X.509.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";

export interface KeyPair {
  keyPem: string;
  publicPem: string;
}

export interface CertKey {
  certPem: string;
  keyPem: string;
}

export function rsaKeyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return { keyPem: privateKey, publicPem: publicKey };
}

function serial(): string {
  // positive 128-bit serial: clear the top bit of the first byte
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f;
  return b.toString("hex");
}

interface Subject {
  commonName: string;
  organizations?: string[];
}

function subjectAttrs(s: Subject): forge.pki.CertificateField[] {
  return [
    { name: "commonName", value: s.commonName },
    ...(s.organizations ?? []).map((o) => ({ name: "organizationName", value: o })),
  ];
}

function validity(cert: forge.pki.Certificate, days: number): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  cert.validity.notAfter = new Date(now + days * 24 * 60 * 60 * 1000);
}

export interface Ca extends CertKey {
  cert: forge.pki.Certificate;
  key: forge.pki.rsa.PrivateKey;
}

export function makeCa(commonName: string, days = 365): Ca {
  const pair = rsaKeyPair();
  const key = forge.pki.privateKeyFromPem(pair.keyPem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(pair.publicPem);
  cert.serialNumber = serial();
  validity(cert, days);
  const attrs = subjectAttrs({ commonName });
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  cert.sign(key, forge.md.sha256.create());
  return { cert, key, certPem: forge.pki.certificateToPem(cert), keyPem: pair.keyPem };
}

export interface LeafOptions extends Subject {
  server?: { dnsNames: string[]; ips: string[] };
  client?: boolean;
  days?: number;
}

export function makeLeaf(ca: Ca, opts: LeafOptions): CertKey {
  const pair = rsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(pair.publicPem);
  cert.serialNumber = serial();
  validity(cert, opts.days ?? 365);
  cert.setSubject(subjectAttrs(opts));
  cert.setIssuer(ca.cert.subject.attributes);
  const extensions: object[] = [
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: Boolean(opts.server), clientAuth: Boolean(opts.client) },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() },
  ];
  if (opts.server) {
    extensions.push({
      name: "subjectAltName",
      altNames: [
        ...opts.server.dnsNames.map((value) => ({ type: 2, value })),
        ...opts.server.ips.map((ip) => ({ type: 7, ip })),
      ],
    });
  }
  cert.setExtensions(extensions);
  cert.sign(ca.key, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: pair.keyPem };
}
