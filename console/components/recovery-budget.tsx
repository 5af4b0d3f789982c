import type { ForecastScore, IncidentBudget } from "../../src/store/read-models/budget";
import { againstWords, budgetSourceWords, forecastScoreWords, forecastWords, timerWords } from "../budget-words";

/**
 * An open incident's recovery budget: attempts, work and interrupted attempts against the SDK's bounds, the time
 * left on its stable and no-progress timers, and when it is forecast to exhaust. The figures travel in data-*
 * attributes for checks; the words come from console/budget-words.ts.
 */
export function RecoveryBudget(props: { budget: IncidentBudget }) {
  const b = props.budget;
  const n = (v: number | null) => (v === null ? undefined : String(v));
  return (
    <section id="recovery-budget" data-testid="recovery-budget" data-source={b.source}>
      <h2>Recovery budget</h2>
      <p class="muted" data-testid="budget-source">
        {budgetSourceWords(b)}
      </p>
      {b.source === "none" ? null : (
        <dl class="facts">
          <dt>attempts</dt>
          <dd data-testid="budget-attempts" data-used={n(b.attempts.used)} data-limit={n(b.attempts.limit)}>
            {againstWords(b.attempts)}
          </dd>
          <dt>work</dt>
          <dd data-testid="budget-work" data-used={n(b.work.used)} data-limit={n(b.work.limit)}>
            {againstWords(b.work, "stream segments")}
          </dd>
          <dt>interrupted attempts</dt>
          <dd data-testid="budget-interrupted" data-used={n(b.interruptedAttempts.used)} data-limit={n(b.interruptedAttempts.limit)}>
            {againstWords(b.interruptedAttempts)}
          </dd>
          <dt>transient retries</dt>
          <dd data-testid="budget-transient" data-used={n(b.transientRetries.used)} data-limit={n(b.transientRetries.limit)}>
            {againstWords(b.transientRetries)}
          </dd>
          <dt>stable timer</dt>
          <dd data-testid="budget-stable-timer" data-left-ms={b.stableTimer ? String(b.stableTimer.leftMs) : undefined}>
            {timerWords(b.stableTimer)}
          </dd>
          <dt>no-progress timer</dt>
          <dd data-testid="budget-no-progress-timer" data-left-ms={b.noProgressTimer ? String(b.noProgressTimer.leftMs) : undefined}>
            {timerWords(b.noProgressTimer)}
          </dd>
          <dt>forecast</dt>
          <dd data-testid="budget-forecast" data-basis={b.forecast.basis} data-at={b.forecast.at === null ? undefined : String(b.forecast.at)}>
            {forecastWords(b.forecast, b.now)}
          </dd>
        </dl>
      )}
    </section>
  );
}

/**
 * A closed chat incident's forecast against what happened (scoreForecast): the first and the latest forecast the
 * card could show, and the outcome. The times travel in data-* attributes for checks.
 */
export function ForecastScoreFacts(props: { score: ForecastScore }) {
  const s = props.score;
  const w = forecastScoreWords(s);
  return (
    <section
      id="forecast-score"
      data-testid="forecast-score"
      data-first-made-at={String(s.first.madeAt)}
      data-first-at={String(s.first.at)}
      data-latest-made-at={String(s.latest.madeAt)}
      data-latest-at={String(s.latest.at)}
      data-outcome={s.outcome}
      data-outcome-at={String(s.outcomeAt)}
      data-error-ms={s.errorMs === null ? undefined : String(s.errorMs)}
    >
      <h2>Forecast against outcome</h2>
      <p class="muted">Replayed from the incident's attempt events: what the "likely to exhaust" card could show, and when.</p>
      <dl class="facts">
        <dt>first forecast</dt>
        <dd>{w.first}</dd>
        <dt>latest forecast</dt>
        <dd>{w.latest}</dd>
        <dt>outcome</dt>
        <dd data-testid="forecast-outcome">{w.outcome}</dd>
      </dl>
    </section>
  );
}
