import type { Child } from "hono/jsx";
import { type AssetName, asset } from "./assets";
import { type ListViewContext, ViewBar, ViewsMenu } from "./components/views";
import { HTMX_CONFIG } from "./htmx-config";
import { LISTS } from "./links";

export type PageContext = {
  user: { email: string; role: "viewer" | "operator" };
  /** Local dev auth is on: show the banner on every page. */
  devBanner: string | null;
  /** JSON for `hx-headers`, carrying the CSRF token on every htmx request. */
  hxHeaders: string;
  csrfToken: string;
  /** Seconds between live refreshes (paused while the tab is hidden). */
  pollSeconds: number;
  /** Link template to the user's APM for a trace, with `{traceId}`; null hides the links. */
  traceUrl: string | null;
  now: number;
  /** HOT_WINDOW_HOURS: how long closed incidents, resolved ops and finished runs stay listed (components/hot-span.tsx). */
  hotWindowHours?: number;
  /** On a list page: its saved-view state (the save form, and the view it shows); absent elsewhere. */
  listView?: ListViewContext;
};

const NAV: [string, string][] = [
  [LISTS.overview, "Overview"],
  [LISTS.incidents, "Incidents"],
  [LISTS.stuck, "Stuck"],
  [LISTS.awake, "Awake"],
  [LISTS.agents, "Agents"],
  [LISTS.runs, "Runs"],
  [LISTS.sessions, "Sessions"],
  [LISTS.ops, "Ambiguous ops"],
  [LISTS.backups, "Backups"],
  [LISTS.deploys, "Deploys"],
  [LISTS.alerts, "Alerts"],
  [LISTS.audit, "Audit log"],
  [LISTS.bulk, "Bulk"],
];

/** Same-origin scripts every page loads, in order: htmx, how answers are shown, then our client behaviour (served under hashed names: console/assets.ts). */
export const LAYOUT_SCRIPTS = ["htmx.min.js", "response-text.js", "time.js", "console.js", "shortcuts.js"] as const satisfies readonly AssetName[];

/** The keyboard shortcuts shortcuts.js implements, as the help overlay lists them (keys, then what they do). */
export const SHORTCUTS: [string[], string][] = [
  [["/"], "Search"],
  [["g", "o"], "Go to the overview"],
  [["g", "i"], "Go to incidents"],
  [["g", "r"], "Go to runs"],
  [["g", "s"], "Go to sessions"],
  [["j"], "Select the next row of the list"],
  [["k"], "Select the previous row of the list"],
  [["Enter"], "Open the selected row"],
  [["?"], "Show this help"],
  [["Esc"], "Close this help"],
];

/** The page shell: navigation, who is signed in, the dev-auth banner, htmx and our small client script. No inline script or handler. */
export function Layout(props: { ctx: PageContext; title: string; active: string; children: Child; scripts?: AssetName[] }) {
  const { ctx } = props;
  const [htmx, ...ours] = LAYOUT_SCRIPTS;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <title>{`${props.title} · Agent on-call`}</title>
        <link rel="icon" href={asset("favicon.svg")} type="image/svg+xml" />
        <link rel="stylesheet" href={asset("console.css")} />
        <script src={asset(htmx)} defer />
        {(props.scripts ?? []).map((s) => (
          <script src={asset(s)} defer />
        ))}
        {ours.map((s) => (
          <script src={asset(s)} defer />
        ))}
      </head>
      <body hx-headers={ctx.hxHeaders} data-poll-seconds={String(ctx.pollSeconds)}>
        <a class="skip-link" href="#content">
          Skip to content
        </a>
        {ctx.devBanner ? (
          <div class="dev-banner" role="alert" data-testid="dev-banner">
            {ctx.devBanner}
          </div>
        ) : null}
        <header class="top">
          <a class="brand" href="/">
            Agent on-call
          </a>
          <nav aria-label="Main">
            {NAV.map(([path, label]) => (
              <a href={path} class={props.active === path ? "active" : ""} aria-current={props.active === path ? "page" : undefined}>
                {label}
              </a>
            ))}
          </nav>
          <ViewsMenu />
          {/* biome-ignore lint/a11y/useSemanticElements: hono/jsx types no <search> element; role="search" on the form is its ARIA equivalent */}
          <form class="search" method="get" action={LISTS.search} role="search">
            <label for="global-search" class="visually-hidden">
              Search any id
            </label>
            <input id="global-search" type="search" name="q" placeholder="Search any id (/)" maxlength={200} autocomplete="off" spellcheck={false} />
          </form>
          {/* Times are rendered in UTC; time.js shows the toggle and rewrites them in the reader's zone (kept in localStorage). */}
          <span class="tz">
            <button type="button" id="tz-toggle" aria-pressed="false" hidden>
              Local time
            </button>{" "}
            <span id="tz-name" data-testid="tz-name" title="The time zone of the times on this page">
              UTC
            </span>
          </span>
          <span class="who">
            {ctx.user.email} · {ctx.user.role}
          </span>
        </header>
        {/* tabindex -1: the skip link moves keyboard focus here, not only the scroll position. */}
        <main id="content" tabindex={-1}>
          <h1>{props.title}</h1>
          {ctx.listView ? <ViewBar here={ctx.listView} csrfToken={ctx.csrfToken} canSaveTeam={ctx.user.role === "operator"} /> : null}
          {props.children}
        </main>
        <ShortcutHelp />
      </body>
    </html>
  );
}

/** The keyboard shortcuts' help, hidden until `?` (shortcuts.js shows it; Escape or its button closes it). */
function ShortcutHelp() {
  return (
    <div class="shortcut-help" id="shortcut-help" role="dialog" aria-modal="true" aria-labelledby="shortcut-help-title" hidden>
      <div class="shortcut-help-box">
        <h2 id="shortcut-help-title">Keyboard shortcuts</h2>
        <dl>
          {SHORTCUTS.map(([keys, what]) => (
            <>
              <dt>
                {keys.map((k, i) => (
                  <>
                    {i ? " then " : ""}
                    <kbd>{k}</kbd>
                  </>
                ))}
              </dt>
              <dd>{what}</dd>
            </>
          ))}
        </dl>
        <button type="button" data-close-shortcut-help>
          Close
        </button>
      </div>
    </div>
  );
}

/** An error page (404, 400) in the same shell, with a way back. */
export function ErrorPage(props: { ctx: PageContext; status: number; title: string; message: string; code?: string }) {
  return (
    // No view bar on an error: its filters are what was refused, not something to save.
    <Layout ctx={{ ...props.ctx, listView: undefined }} title={props.title} active="">
      <p class="error-message" data-testid="error-message" data-status={String(props.status)} data-code={props.code}>
        {props.message}
      </p>
      <p>
        <a href="/">Back to the overview</a>
      </p>
    </Layout>
  );
}
