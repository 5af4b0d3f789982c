import type { RunDetail } from "../../src/admin-rpc/contract";
import type { RunWithSnapshot } from "../../src/store/read-models";
import { JsonView, parsePreview } from "../components/json-view";
import { duration, iso } from "../format";
import { Layout, type PageContext } from "../layout";
import { agentHref, LISTS } from "../links";

/** Said wherever a snapshot is shown: what was masked is gone for everyone, not hidden from some. */
const MASKED_NOTE = "Credential-looking values (API keys, tokens, passwords, private keys) are masked for everyone.";

/**
 * The snapshot viewer: the live row's full (capped) snapshot, or the last-known one once the row is gone.
 * Both arrive masked (the admin client masks live snapshots; telemetry masked the last-known preview).
 */
export function RunPage(props: {
  ctx: PageContext;
  agentClass: string;
  agentName: string;
  live: RunDetail | null;
  lastKnown: RunWithSnapshot | null;
  liveError?: string | null;
}) {
  const back = agentHref(props);
  if (props.live) {
    const r = props.live;
    return (
      <Layout ctx={props.ctx} title={`Run ${r.name}`} active={LISTS.runs}>
        <p>
          <a href={back}>
            « {props.agentClass} · {props.agentName}
          </a>
        </p>
        <dl class="facts">
          <dt>run</dt>
          <dd class="mono">{r.id}</dd>
          <dt>kind</dt>
          <dd>{r.kind}</dd>
          <dt>started</dt>
          <dd>
            {iso(r.createdAt)} ({duration(r.ageMs)} ago)
          </dd>
        </dl>
        <h2 data-testid="snapshot" data-source="live">
          Snapshot (live)
        </h2>
        <p class="muted" data-testid="masked-note">
          {MASKED_NOTE}
        </p>
        <JsonView value={r.truncated ? undefined : r.snapshot} rawText={r.snapshotText} size={r.snapshotBytes} truncated={r.truncated} />
      </Layout>
    );
  }
  const f = props.lastKnown!;
  const snap = parsePreview(f.snapshotPreview);
  return (
    <Layout ctx={props.ctx} title={`Run ${f.name}`} active={LISTS.runs}>
      <p>
        <a href={back}>
          « {props.agentClass} · {props.agentName}
        </a>
      </p>
      {props.liveError ? (
        <p class="error-message" data-testid="live-error">
          Live state unavailable: {props.liveError}. Showing the last-known snapshot reported through telemetry.
        </p>
      ) : (
        <p class="muted">This run is no longer live (its row is gone). Showing the last-known snapshot reported through telemetry.</p>
      )}
      <h2 data-testid="snapshot" data-source="last_known">
        Last-known snapshot
      </h2>
      <p class="muted" data-testid="masked-note">
        {MASKED_NOTE}
      </p>
      {f.snapshotPreview !== null ? <JsonView value={snap.value} rawText={snap.rawText} size={f.snapshotBytes} /> : <p class="muted">None reported.</p>}
    </Layout>
  );
}
