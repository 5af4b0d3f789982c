import { z } from "zod";
import { workspaceBackups } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { flag, parseFilters, text } from "./filters";
import { type AccessPath, choosePath, cond, keysetPage, type ListOrder, type Page, type PageOptions } from "./paging";

/** Backups: last seen, newest first. The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const BACKUP_ORDER: ListOrder<BackupRow> = { tag: "backups", keyOf: (r) => [r.lastSeen, r.handle, r.agentClass, r.agentName] };
/** Backups by expiry (the `expired` filter). The cursor's tag and sort key; merged reads (merged.ts) merge pages by it. */
export const BACKUP_EXPIRY_ORDER: ListOrder<BackupRow> = { tag: "backups:expiry", keyOf: (r) => [r.expiresAt!, r.handle, r.agentClass, r.agentName] };

/**
 * Workspace backups, per reporting agent. "Expired" is derived at read time (expires_at ≤ now),
 * never stored. Without `expired` the list is newest activity first
 * (last_seen DESC, handle DESC, then the agent); with it, it is ordered by expiry
 * (expires_at DESC, handle DESC, then the agent), because that is the order whose index
 * serves the filter. Backups with no known expiry (only seen through a
 * restore) match neither expired=true nor expired=false.
 */

export const backupFilters = z.object({
  tenant: text("tenant"),
  environment: text("environment"),
  sessionName: text("sessionName"),
  expired: flag("expired"),
});
export type BackupFilters = z.output<typeof backupFilters>;
export type BackupFilterInput = { [K in keyof BackupFilters]?: unknown };

export type BackupRow = {
  handle: string;
  tenant: string;
  environment: string;
  sessionName: string;
  agentClass: string;
  agentName: string;
  createdAt: number | null;
  expiresAt: number | null;
  bytes: number | null;
  restoredAt: number | null;
  /** When a backup.expired event reported the object removed. */
  expiredAt: number | null;
  lastSeen: number;
  /** Derived: expires_at ≤ now. */
  expired: boolean;
};

const B = names(workspaceBackups);
const SELECT = selectList(workspaceBackups, [
  "handle",
  "tenant",
  "environment",
  "sessionName",
  "agentClass",
  "agentName",
  "createdAt",
  "expiresAt",
  "bytes",
  "restoredAt",
  "expiredAt",
  "lastSeen",
]);

/** Any two scope filters together scan the most selective one's index and test the rest per row (bounded by SCAN_BUDGET). */
const PATHS: AccessPath<ColumnKey<typeof workspaceBackups>>[] = [
  { index: "workspace_backups_session", cols: ["sessionName"] },
  { index: "workspace_backups_environment", cols: ["environment"] },
  { index: "workspace_backups_tenant", cols: ["tenant"] },
  { index: "workspace_backups_last_seen", cols: [] },
];

/** Lists backups; `now` decides what counts as expired. */
export async function listBackups(db: D1Database, filters: BackupFilterInput, page: PageOptions = {}, now = Date.now()): Promise<Page<BackupRow>> {
  const f = parseFilters(backupFilters, filters);
  const scope = {
    sessionName: f.sessionName === undefined ? undefined : cond(`${B.sessionName} = ?`, f.sessionName),
    environment: f.environment === undefined ? undefined : cond(`${B.environment} = ?`, f.environment),
    tenant: f.tenant === undefined ? undefined : cond(`${B.tenant} = ?`, f.tenant),
  };
  const map = (r: BackupRow): BackupRow => ({ ...r, expired: r.expiresAt !== null && r.expiresAt <= now });
  if (f.expired === undefined) {
    const p = choosePath(PATHS, scope);
    return keysetPage<BackupRow>(
      db,
      {
        ...BACKUP_ORDER,
        table: B.$table,
        index: p.index,
        select: SELECT,
        order: [B.lastSeen, B.handle, B.agentClass, B.agentName],
        types: ["number", "string", "string", "string"],
        dir: "DESC",
        where: p.where,
        residual: p.residual,
        map,
      },
      page,
    );
  }
  // By expiry: the filter is a range of workspace_backups_expires; scope filters are tested per row (bounded).
  const p = choosePath([{ index: "workspace_backups_expires", cols: [] }], scope);
  return keysetPage<BackupRow>(
    db,
    {
      ...BACKUP_EXPIRY_ORDER,
      table: B.$table,
      index: p.index,
      select: SELECT,
      order: [B.expiresAt, B.handle, B.agentClass, B.agentName],
      types: ["number", "string", "string", "string"],
      dir: "DESC",
      where: [],
      residual: p.residual,
      range: f.expired ? { max: now } : { min: now + 1 },
      map,
    },
    page,
  );
}
