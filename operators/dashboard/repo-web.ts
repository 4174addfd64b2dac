/** How to link an object's `path:line` at a revision to the repository's web view. */
export interface RepoWeb {
  /** https://host/owner/repo */
  base: string;
  /** GitHub and most forges: /blob/<rev>/<path>#L<line>; Gitea and Forgejo: /src/commit/<rev>/<path>#L<line>. */
  style: "github" | "gitea";
}

/**
 * The web view of an https repository URL, or undefined for file://, ssh and git:// remotes
 * (nothing to link to). Credentials in the URL are dropped: the link is shown to everyone.
 */
export function repoWebUrl(repoUrl: string | undefined): RepoWeb | undefined {
  if (!repoUrl) return undefined;
  let url: URL;
  try {
    url = new URL(repoUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:") return undefined;
  const path = url.pathname.replace(/\/+$/, "").replace(/\.git$/, "");
  if (path.split("/").filter(Boolean).length < 2) return undefined;
  const style = /gitea|forgejo|codeberg/i.test(url.hostname) ? "gitea" : "github";
  return { base: `https://${url.host}${path}`, style };
}
