// A Job with one Raw task as a repository holds it: YAML text, for tests that go through the
// manifest parser (and so name lines in it: the layout below is what their line numbers count).

export type RawJobYaml = {
  name: string;
  /** The task's name; "main" unless given. */
  task?: string;
  command: string[];
  /** A repository file the task runs, and the SHA-256 the manifest declares for it. */
  artifact?: { url: string; sha256: string };
};

/** `artifact.url` is on line 12, column 16. */
export function rawJobYaml({ name, task = "main", command, artifact }: RawJobYaml): string {
  const artifactLines = artifact
    ? `        artifact:\n          url: ${artifact.url}\n          sha256: "${artifact.sha256}"\n`
    : "";
  return `apiVersion: rlinf.io/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  tasks:
    - name: ${task}
      role: Actor
      agentType: Raw
      raw:
${artifactLines}        command: [${command.map((word) => JSON.stringify(word)).join(", ")}]
`;
}
