// Compiled by `npm run typecheck` (test/types/tsconfig.json: exactOptionalPropertyTypes). Every call here is one the
// READMEs show, fed the way they show it: values that may be undefined (`this.activeTurn?.requestId`, an optional
// env var) must be accepted where the option is optional. A type error here fails the typecheck.
import { type WithAdminRpcOptions, withAdminRpc } from "@agent-oncall/admin-rpc";
import { type UsageContext, type WithTelemetryOptions, withTelemetry } from "@agent-oncall/telemetry";
import { otlpTracing } from "@agent-oncall/telemetry/otlp";
import { Agent } from "agents";

type Env = { TELEMETRY_QUEUE: Queue<unknown>; ALARM_BUDGET_MS?: string };
type Step = { usage: { inputTokens: number; outputTokens: number }; model?: { modelId: string } };

const maybe = <T>(v: T): T | undefined => (Math.random() > 0.5 ? v : undefined);

// Options fed from values that may be absent.
const telemetryOptions: WithTelemetryOptions = { tracing: maybe(otlpTracing), queueBinding: maybe("TELEMETRY_QUEUE"), redact: maybe([/acct_[0-9]{8}/]) };
const adminOptions: WithAdminRpcOptions = { alarmBudgetMs: maybe(1000), evictToStop: maybe(true), settleMs: maybe(500) };

export class SupportAgent extends withAdminRpc(withTelemetry(Agent<Env>, telemetryOptions), adminOptions) {
  /** As Think and AIChatAgent expose it: no turn between turns. */
  activeTurn: { requestId: string } | undefined;

  onStepFinish(step: Step): void {
    this.telemetry.usage(step.usage, { requestId: this.activeTurn?.requestId, model: step.model?.modelId });
  }

  async research(): Promise<void> {
    await this.runFiber("research", async (ctx) => {
      this.telemetry.usage({ inputTokens: 1, outputTokens: 2 }, { fiberId: ctx.id });
    });
  }

  sessionTurn(turnSeq: number | undefined): void {
    const where: UsageContext = { sessionName: this.name, turnSeq };
    this.telemetry.usage({ inputTokens: 1, outputTokens: 2 }, where);
  }

  reportAmbiguous(opId: string | undefined): void {
    this.telemetry.record(
      "op.ambiguous",
      { opKind: "charge", detail: "timed out after the provider accepted it" },
      { opId, requestId: this.activeTurn?.requestId },
    );
  }
}

export class OtlpAgent extends withAdminRpc(withTelemetry(Agent<Env>, { tracing: otlpTracing })) {}
