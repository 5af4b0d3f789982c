import { evictionPlan, type PlannedEviction, SessionAgent, type TurnPoint } from "../session";

/**
 * The runtime's SessionAgent as the demo runs it: the driver plans evictions
 * at points of a turn, so the console shows real recoveries, ambiguous ops and
 * exhausted turns.
 */
export class DemoSessionAgent extends SessionAgent {
  async planEviction(plan: PlannedEviction | null): Promise<void> {
    evictionPlan.set(this.ctx.storage.sql, plan);
  }

  protected override faultPoint(point: TurnPoint, detail: { turnSeq: number; kind?: string }): Promise<void> {
    return evictionPlan.hit(this.ctx, point, detail);
  }

  protected override idleSnapshotSeconds(): number {
    return 20;
  }
}
