export const STUCK_RULES = ["no_progress", "incident_no_attempt", "alarm_overdue", "skipped_no_reason"] as const;
export type StuckRule = (typeof STUCK_RULES)[number];
export type StuckConfig = Record<StuckRule, number>;
export type StuckEntry = { rule: StuckRule; agentClass: string; agentName: string; subjectKind: "run" | "incident" | "agent" | "session"; subjectId: string; since: number; detail: string; href: string };
export declare function stuckConfigFrom(env: Record<string, unknown>): StuckConfig;
export declare function listStuck(db: D1Database, now: number, config?: StuckConfig, filter?: { rule?: StuckRule; agentClass?: string; limit?: number }): Promise<StuckEntry[]>;
