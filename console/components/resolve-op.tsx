import { ADMIN_ACTIONS } from "../../src/admin-rpc/actions";
import type { OpRow } from "../../src/store/read-models";

/** Why an op cannot be resolved from here, when the console knows: the agent's own words, or null to offer the control. */
export type ResolveAvailability = { kind: "offer" } | { kind: "read_only"; why: string };

/** The sentence a viewer reads instead of the control. */
export const RESOLVE_NEEDS_OPERATOR = "Resolving an op needs the operator role; you are signed in as a viewer.";

/**
 * The Resolve control of one open ambiguous op: behind a disclosure, the operator says what happened (it ran,
 * with a reference to the result; it did not run; or re-run it now, offered only when the op reported an
 * idempotency key), gives a reason, and confirms. The result lands in the row's own result box. `uid` makes
 * the ids unique on a page that lists several ops.
 */
export function ResolveOp(props: {
  op: Pick<OpRow, "opId" | "agentClass" | "agentName" | "opKind" | "idempotent" | "open">;
  role: "viewer" | "operator";
  uid: string;
  availability?: ResolveAvailability;
}) {
  const o = props.op;
  if (!o.open) return null;
  if (props.availability?.kind === "read_only")
    return (
      <p class="muted" data-testid="resolve-read-only">
        {props.availability.why}
      </p>
    );
  if (props.role !== "operator")
    return (
      <p class="muted" data-testid="resolve-viewer">
        {RESOLVE_NEEDS_OPERATOR}
      </p>
    );
  const { slug, label } = ADMIN_ACTIONS.resolve_op;
  const id = `resolve-${props.uid}`;
  return (
    <div class="resolve-op" data-testid="resolve-op" data-op-id={o.opId}>
      {/* One tab stop: a disclosure button console.js toggles ([data-disclosure]), as for every action. */}
      <button type="button" data-disclosure aria-expanded="false" aria-controls={`${id}-form`} aria-label={`Resolve op ${o.opId}`}>
        Resolve…
      </button>
      <form
        id={`${id}-form`}
        hidden
        hx-post={`/actions/${slug}`}
        hx-target={`#${id}-result`}
        hx-swap="innerHTML"
        hx-request='{"timeout": 30000}'
        data-action-label={label}
      >
        <input type="hidden" name="agentClass" value={o.agentClass} />
        <input type="hidden" name="agentName" value={o.agentName} />
        <input type="hidden" name="opId" value={o.opId} />
        <fieldset>
          <legend>{`What happened to ${o.opKind ?? "the op"}?`}</legend>
          <label>
            <input type="radio" name="resolution" value="verified_ran" required /> It ran (I checked upstream)
          </label>
          <label class="indent">
            Reference to its result (required when it ran)
            <input type="text" name="resultRef" maxlength={500} placeholder="e.g. the payment provider's charge id" />
          </label>
          <label>
            <input type="radio" name="resolution" value="verified_not_ran" /> It did not run (I checked upstream)
          </label>
          {o.idempotent === true ? (
            <label>
              <input type="radio" name="resolution" value="rerun" /> Re-run it now with its idempotency key (the upstream dedupes)
            </label>
          ) : (
            <p class="muted" data-testid="rerun-withheld" data-idempotent={o.idempotent === false ? "false" : "unknown"}>
              Re-run is not offered:{" "}
              {o.idempotent === false ? "this op is not idempotent, so running it again could do it twice." : "this op did not say it is idempotent."}
            </p>
          )}
        </fieldset>
        <label>
          Reason (goes to the audit log)
          <textarea name="reason" required minlength={1} maxlength={2000} placeholder="e.g. checked with the payment provider: no charge with this key" />
        </label>
        <button type="submit">Confirm resolution</button>
      </form>
      <div id={`${id}-result`} class="result" aria-live="polite" />
    </div>
  );
}
