import { type DeadLetterRow, LOSS_KINDS, type LossKind } from "../../src/store/read-models/dead-letters";
import type { Page } from "../../src/store/read-models/paging";
import { FilterForm, SelectFilter, TextFilter } from "../components/filters";
import { ListPager } from "../components/pager";
import { Ago } from "../components/time";
import { Layout, type PageContext } from "../layout";
import { LISTS } from "../links";

type Query = Record<string, string | undefined>;

/** What each kind of loss means, in the words the overview's possible losses use too. */
export const LOSS_KIND_WORDS: Record<LossKind, string> = {
  truncated: "cut short by the Workers runtime (the invocation's events passed its limit; the later ones never arrived)",
  unreadable: "a diagnostics message the tail could not read",
  refused: "captured from the tail, but the telemetry Queue refused the send (tail events are not retried)",
  undelivered: "the telemetry Queue gave up delivering it after its retries",
  ingest: "refused at ingest (not a valid event, unsigned, or outside the accepted time window)",
};

/**
 * Dead letters: what never became an event in the store, newest first, with why. The message bodies are kept in the
 * store but not shown here: they are the agent's data as it arrived, unredacted when it could not be read.
 */
export function DeadLettersPage(props: { ctx: PageContext; query: Query; page: Page<DeadLetterRow> }) {
  const q = props.query;
  return (
    <Layout ctx={props.ctx} title="Dead letters: events lost on the way" active={LISTS.deadLetters}>
      <p class="muted">
        Each row is a message that never became an event in the console, and why. Every dead letter is one of these kinds:{" "}
        {LOSS_KINDS.map((k, i) => (
          <>
            {i ? "; " : ""}
            <strong>{k}</strong>: {LOSS_KIND_WORDS[k]}
          </>
        ))}
        .
      </p>
      <FilterForm action={LISTS.deadLetters}>
        <SelectFilter name="kind" label="kind" value={q.kind} options={LOSS_KINDS} />
        <TextFilter name="since" label="received since" value={q.since} placeholder="24h, or a time" />
        <TextFilter name="until" label="received until" value={q.until} placeholder="a time" />
      </FilterForm>
      {props.page.items.length ? (
        <table data-testid="dead-letters">
          <thead>
            <tr>
              <th>received</th>
              <th>kind</th>
              <th>event type</th>
              <th>reason</th>
              <th>message id</th>
            </tr>
          </thead>
          <tbody>
            {props.page.items.map((d) => (
              <tr data-testid="dead-letter" data-kind={d.kind}>
                <td data-label="received">
                  <Ago t={d.receivedAt} now={props.ctx.now} />
                </td>
                <td data-label="kind">{d.kind}</td>
                <td data-label="event type">{d.eventType ?? "(unknown)"}</td>
                <td data-label="reason" class="breakable">
                  {d.reason}
                </td>
                <td data-label="message id" class="mono breakable">
                  {d.messageId}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <ListPager path={LISTS.deadLetters} query={q} page={props.page} noun="dead letters" empty="No dead letters match." />
    </Layout>
  );
}
