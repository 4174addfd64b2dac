// The robot config file: the robot controllers a node offers, which no bus can discover. Read
// whole (bounded), checked field by field; every error names file:line and the field.
import { readFileSync, statSync } from "node:fs";
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from "yaml";
import type { DeviceKind } from "../paths.ts";

export interface Robot {
  /** DNS label; the device ID is `robot-<name>`. */
  name: string;
  kind: Extract<DeviceKind, "ros" | "ros2">;
}

/** A robot config is a short list; anything larger is a mistake, not a config. */
const MAX_BYTES = 64 * 1024;
const MAX_ROBOTS = 256;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const ROBOT_KINDS = ["ros", "ros2"] as const;

export class RobotConfigError extends Error {}

/** The robots of `file`; a missing file means none. Throws RobotConfigError naming file:line. */
export function readRobotConfig(file: string): Robot[] {
  let size: number;
  try {
    size = statSync(file).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  if (size > MAX_BYTES) throw new RobotConfigError(`${file}: larger than ${MAX_BYTES} bytes`);
  return parseRobotConfig(readFileSync(file, "utf8"), file);
}

export function parseRobotConfig(text: string, file: string): Robot[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const fail = (offset: number, message: string): never => {
    throw new RobotConfigError(`${file}:${lines.linePos(offset).line}: ${message}`);
  };
  const first = doc.errors[0];
  if (first) fail(first.pos[0], first.message.split("\n")[0] ?? "invalid YAML");
  const offsetOf = (node: YamlNode | null | undefined) => node?.range?.[0] ?? 0;
  const root = doc.contents;
  if (root === null) return [];
  if (!isMap(root)) return fail(offsetOf(root), "expected a mapping with a `robots` list");
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : "";
    if (key !== "robots") fail(offsetOf(pair.key as YamlNode), `unknown field "${key}" (expected robots)`);
  }
  const list = root.get("robots", true);
  if (list === undefined || (isScalar(list) && list.value === null)) return [];
  if (!isSeq(list)) return fail(offsetOf(list as YamlNode), "robots: expected a list");
  if (list.items.length > MAX_ROBOTS) fail(offsetOf(list), `robots: more than ${MAX_ROBOTS} entries`);
  const seen = new Set<string>();
  return list.items.map((item, index) => {
    const where = `robots[${index}]`;
    if (!isMap(item))
      return fail(offsetOf(item as YamlNode), `${where}: expected a mapping with name and kind`);
    for (const pair of item.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : "";
      if (key !== "name" && key !== "kind")
        fail(offsetOf(pair.key as YamlNode), `${where}: unknown field "${key}" (expected name, kind)`);
    }
    const nameNode = item.get("name", true);
    const kindNode = item.get("kind", true);
    const name = isScalar(nameNode) ? nameNode.value : undefined;
    const kind = isScalar(kindNode) ? kindNode.value : undefined;
    if (typeof name !== "string" || !DNS_LABEL.test(name))
      fail(offsetOf(nameNode ?? item), `${where}.name: expected a DNS label (a-z, 0-9, -; at most 63)`);
    if (seen.has(name as string)) fail(offsetOf(nameNode), `${where}.name: "${name}" is listed twice`);
    seen.add(name as string);
    if (!ROBOT_KINDS.includes(kind as Robot["kind"]))
      fail(offsetOf(kindNode ?? item), `${where}.kind: expected one of ${ROBOT_KINDS.join(", ")}`);
    return { name: name as string, kind: kind as Robot["kind"] };
  });
}
