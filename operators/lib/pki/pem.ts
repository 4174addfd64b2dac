// node-forge writes PEM with CRLF line ends, node:crypto with LF. The hub's PEMs are LF
// everywhere (made, or read back from files earlier hubs wrote with CRLF): status files then show
// a certificate as a clean YAML block, and PEM text is the same whichever library produced it.
export function lfPem(pem: string): string {
  return pem.replace(/\r\n?/g, "\n");
}
