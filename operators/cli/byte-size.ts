import { InvalidArgumentError } from "commander";

const UNITS: Record<string, number> = {
  "": 1,
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};

/** "0", "500KiB", "20MB", "1.5GiB" → bytes; a commander argument parser. */
export function parseByteSize(value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?$/.exec(value);
  const unit = UNITS[match?.[2] ?? ""];
  if (!match || unit === undefined)
    throw new InvalidArgumentError(`"${value}" is not a size (examples: 0, 512KiB, 20MiB, 1GB)`);
  return Math.round(Number(match[1]) * unit);
}
