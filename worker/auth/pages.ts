import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { asset } from "../../console/assets";

export type ProblemPageProps = {
  status: number;
  /** The refusal's code (the JSON body's `error.code`), for checks: data-code. */
  code?: string;
  title: string;
  message: string;
  /** The signed-in user, when known (403 pages). */
  email?: string;
  /** Offer Access's sign-out link, so a person can switch to another account. */
  signOut?: boolean;
};

/**
 * A complete, self-contained HTML page for an auth refusal. Every value is escaped by the `html` helper;
 * nothing here includes internals or stack traces.
 */
export function problemPage(p: ProblemPageProps): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="robots" content="noindex" />
    <title>${p.title} · Agent on-call console</title>
    <link rel="stylesheet" href="${asset("console.css")}" />
  </head>
  <body>
    <main class="auth-problem" data-testid="auth-problem" data-status="${p.status}" data-code="${p.code ?? ""}">
      <h1>${p.title}</h1>
      <p class="auth-problem-message" data-testid="auth-problem-message">${p.message}</p>
      ${p.email ? html`<p class="auth-problem-user">Signed in as <strong>${p.email}</strong>.</p>` : ""}
      ${p.signOut ? html`<p><a href="/cdn-cgi/access/logout">Sign out of Cloudflare Access</a> to use another account.</p>` : ""}
      <p class="auth-problem-status">HTTP ${p.status}</p>
    </main>
  </body>
</html>`;
}
