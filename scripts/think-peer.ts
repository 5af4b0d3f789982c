// A precondition of the dev stack on the user's Worker, checked before wrangler bundles it. Pure, so it is tested alone.

/**
 * Think (`@cloudflare/think`) imports `just-bash` at build time (through `agents/skills/runner`, where the agents SDK
 * declares it an optional peer), so a Worker with Think and without just-bash fails to bundle with a bare
 * "Could not resolve" line. Returns the sentence to show instead, or null. `deps`: the app's package.json
 * dependencies and devDependencies; `installed`: whether a package resolves from the app's directory.
 */
export function thinkPeerProblem(deps: Record<string, unknown>, installed: (name: string) => boolean, appDir: string): string | null {
  if (!("@cloudflare/think" in deps) || installed("just-bash")) return null;
  return `your Worker depends on @cloudflare/think, which needs just-bash installed to build (imported by agents/dist/skills/runner.js): run \`npm install just-bash\` in ${appDir}`;
}
