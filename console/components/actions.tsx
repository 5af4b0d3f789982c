/**
 * Force idle and trigger alarm, each behind a confirmation that needs a
 * reason. Operators only: viewers see why the buttons are not there.
 */
export function AdminActions(props: { agentClass: string; agentName: string; role: "viewer" | "operator" }) {
  if (props.role !== "operator") {
    return <p class="muted actions">Force idle and trigger alarm need the operator role; you are signed in as a viewer.</p>;
  }
  return (
    <section class="actions" id="admin-actions">
      <h2>Actions</h2>
      <ActionForm {...props} path="/actions/force-idle" label="Force idle" danger placeholder="e.g. turn stuck for 20 minutes, customer waiting"
        help="Aborts the active turn and fibers, removes their run rows so nothing is recovered, and clears recovery counters." />
      <ActionForm {...props} path="/actions/trigger-alarm" label="Trigger alarm" placeholder="e.g. recover the evicted fiber now"
        help="Runs the agent's alarm now: housekeeping and fiber recovery." />
      <div id="action-result" class="result" aria-live="polite" />
    </section>
  );
}

/** One action behind a disclosure: a required reason, then an explicit confirm button. */
function ActionForm(props: { agentClass: string; agentName: string; path: string; label: string; help: string; placeholder: string; danger?: boolean }) {
  return (
    <details>
      <summary>
        {/* A button inside <summary> does not toggle it by itself; console.js does, for every [data-toggle-details] (no inline handlers under our CSP). */}
        <button type="button" data-toggle-details>{`${props.label}…`}</button>
      </summary>
      <form hx-post={props.path} hx-target="#action-result" hx-swap="innerHTML">
        <input type="hidden" name="agentClass" value={props.agentClass} />
        <input type="hidden" name="agentName" value={props.agentName} />
        <label>
          Reason (goes to the audit log)
          <textarea name="reason" required minlength={1} maxlength={2000} placeholder={props.placeholder} />
        </label>
        <p class="muted">{props.help}</p>
        <button class={props.danger ? "danger" : ""} type="submit">{`Confirm ${props.label.toLowerCase()}`}</button>
      </form>
    </details>
  );
}

/** The inline result of an action (an htmx fragment). Every value is text, escaped by the renderer. */
export function ActionResult(props: { ok: boolean; title: string; detail: string; auditHref?: string }) {
  return (
    <div class={`result ${props.ok ? "ok" : "bad"}`} data-testid="action-result">
      <strong>{props.title}</strong> {props.detail} {props.auditHref ? <a href={props.auditHref}>See the audit log</a> : null}
    </div>
  );
}
