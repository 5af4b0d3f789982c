import type { Deploy, DeployStormConfig, VersionFigures } from "../../src/store/read-models/deploys";
import { HotSpan } from "../components/hot-span";
import { Time } from "../components/time";
import { count } from "../format";
import { Layout, type PageContext } from "../layout";
import { LISTS, listHref } from "../links";

/** One row of the deploys page: a version, when it was first seen, and what its incidents came to. */
export type DeployRow = { deploy: Deploy; figures: VersionFigures };

/** Figures that reached the per-version cap say so: "5000+". */
const cappedCount = (n: number, capped: boolean) => `${count(n)}${capped ? "+" : ""}`;

/**
 * Deploys, newest first: each Worker version agents reported, when its first event happened, and the incidents that
 * opened under it (exhausted ones and the tokens their recoveries re-spent too). Each count links to those incidents.
 */
export function DeploysPage(props: { ctx: PageContext; rows: DeployRow[]; storm: DeployStormConfig }) {
  const minutes = Math.round(props.storm.windowMs / 60_000);
  return (
    <Layout ctx={props.ctx} title="Deploys" active={LISTS.deploys}>
      <HotSpan list="deploys" hours={props.ctx.hotWindowHours} />
      <p>
        <a href={listHref("incidents", { groupBy: "version" })} data-testid="incidents-by-version">
          All incidents grouped by version
        </a>
      </p>
      {props.rows.length ? (
        <table data-testid="deploys">
          <thead>
            <tr>
              <th scope="col">version</th>
              <th scope="col">first seen</th>
              <th scope="col" class="num">
                incidents opened
              </th>
              <th scope="col" class="num">
                exhausted
              </th>
              <th scope="col" class="num">
                tokens re-spent
              </th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map(({ deploy, figures: f }) => (
              <tr data-version={deploy.version}>
                <td>
                  <code>{deploy.version}</code>
                </td>
                <td>
                  <Time t={deploy.firstSeen} />
                </td>
                <td class="num">
                  <a href={listHref("incidents", { version: deploy.version })} data-figure={String(f.incidents)} data-testid="version-incidents">
                    {cappedCount(f.incidents, f.capped)}
                  </a>
                </td>
                <td class="num">
                  <a
                    href={listHref("incidents", { version: deploy.version, status: "exhausted" })}
                    data-figure={String(f.exhausted)}
                    data-testid="version-exhausted"
                  >
                    {cappedCount(f.exhausted, f.capped)}
                  </a>
                </td>
                <td class="num" data-figure={String(f.respentTokens)} data-testid="version-respent">
                  {cappedCount(f.respentTokens, f.capped)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No deploys yet: no event has carried a Worker version (the version_metadata binding, or the telemetry option version).</p>
      )}
      <p class="muted">
        A recovery storm alert fires when a version opens incidents more than {props.storm.factor}× as fast in its first {minutes} minutes as the previous
        version did in its first {minutes} (and at least {props.storm.minIncidents} of them).
      </p>
    </Layout>
  );
}
