// The SSH login name carries the target: `<user>+<pod>[+<container>]`, where `<pod>` may be
// `<namespace>/<pod>` or `task/<task-name>` (the Task's first ready replica). A bare `<user>`
// reaches no pod by itself (port forwarding names its pod in each request).

export type PodSelector = { kind: "pod"; name: string; namespace?: string } | { kind: "task"; task: string };

export interface LoginName {
  user: string;
  target?: PodSelector;
  container?: string;
}

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export function parseLoginName(login: string): LoginName {
  const parts = login.split("+");
  if (parts.length > 3) throw new Error("expected <user>+<pod>[+<container>]");
  const [user = "", target, container] = parts;
  if (!NAME.test(user)) throw new Error(`"${user}" is not a user name`);
  if (container !== undefined && !NAME.test(container))
    throw new Error(`"${container}" is not a container name`);
  if (target === undefined) return { user };
  return { user, target: parsePodSelector(target), ...(container ? { container } : {}) };
}

/** `pod`, `namespace/pod` or `task/<task-name>`. */
export function parsePodSelector(text: string): PodSelector {
  const slash = text.split("/");
  if (slash.length === 1 && NAME.test(text)) return { kind: "pod", name: text };
  if (slash.length === 2) {
    const [first = "", second = ""] = slash;
    if (NAME.test(second)) {
      if (first === "task") return { kind: "task", task: second };
      if (NAME.test(first)) return { kind: "pod", namespace: first, name: second };
    }
  }
  throw new Error(`"${text}" is not <pod>, <namespace>/<pod> or task/<task-name>`);
}
