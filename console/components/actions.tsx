/**
 * Force idle and trigger alarm, each behind a confirmation that needs a
 * reason. Operators only: viewers see why the buttons are not there.
 */
export function AdminActions(props: { agentClass: string; agentName: string; role: "viewer" | "operator" }) {
  if (props.role !== "operator") {
    return <p class="muted actions">Force idle and trigger alarm need the operator role; you are signed in as a viewer.</p>;
  }
  const hidden = (
    <>
      <input type="hidden" name="agentClass" value={props.agentClass} />
      <input type="hidden" name="agentName" value={props.agentName} />
    </>
  );
  return (
    <section class="actions" id="admin-actions">
      <h2>Actions</h2>
      <details>
        <summary>
          <button type="button" onclick="this.closest('details').toggleAttribute('open')">Force idle…</button>
        </summary>
        <form hx-post="/actions/force-idle" hx-target="#action-result" hx-swap="innerHTML">
          {hidden}
          <label>
            Reason (goes to the audit log)
            <textarea name="reason" required minlength={1} maxlength={2000} placeholder="e.g. turn stuck for 20 minutes, customer waiting" />
          </label>
          <p class="muted">Aborts the active turn and fibers, removes their run rows so nothing is recovered, and clears recovery counters.</p>
          <button class="danger" type="submit">Confirm force idle</button>
        </form>
      </details>
      <details>
        <summary>
          <button type="button" onclick="this.closest('details').toggleAttribute('open')">Trigger alarm…</button>
        </summary>
        <form hx-post="/actions/trigger-alarm" hx-target="#action-result" hx-swap="innerHTML">
          {hidden}
          <label>
            Reason (goes to the audit log)
            <textarea name="reason" required minlength={1} maxlength={2000} placeholder="e.g. recover the evicted fiber now" />
          </label>
          <p class="muted">Runs the agent's alarm now: housekeeping and fiber recovery.</p>
          <button type="submit">Confirm trigger alarm</button>
        </form>
      </details>
      <div id="action-result" class="result" aria-live="polite" />
    </section>
  );
}

/** The inline result of an action (an htmx fragment). */
export function ActionResult(props: { ok: boolean; title: string; detail: string; auditHref?: string }) {
  return (
    <div class={`result ${props.ok ? "ok" : "bad"}`} data-testid="action-result">
      <strong>{props.title}</strong> {props.detail} {props.auditHref ? <a href={props.auditHref}>See the audit log</a> : null}
    </div>
  );
}
