// Ahead-of-time ajv validators: standalone ES module code for every kind, so `rlark validate`
// loads compiled functions instead of compiling the schemas on every start.
import standaloneModule from "ajv/dist/standalone/index.js";
import { createAjv } from "../../operators/api/ajv-setup.ts";
import { kinds } from "../../operators/api/kinds.ts";
import { SCHEMA_ID_BASE } from "../../operators/api/source-schemas.ts";
import { HEADER } from "./types.ts";

// CommonJS module; Node hands its module.exports over as the default import.
const standaloneCode = standaloneModule as unknown as typeof standaloneModule.default;

export function renderValidators(): { js: string; dts: string } {
  const ajv = createAjv({ standalone: true });
  const refs = Object.fromEntries(kinds.map((info) => [info.kind, SCHEMA_ID_BASE + info.schemaFile]));
  const code = standaloneCode(ajv, refs);
  // The standalone code pulls ajv's runtime helpers and ajv-formats' checks with require().
  const js =
    `${HEADER}import { createRequire } from "node:module";\n` +
    "const require = createRequire(import.meta.url);\n" +
    `${code.replace(/^"use strict";/, "")}\n`;
  const dts =
    `${HEADER}import type { ValidateFunction } from "ajv";\n\n` +
    kinds.map((info) => `export declare const ${info.kind}: ValidateFunction;\n`).join("");
  return { js, dts };
}
