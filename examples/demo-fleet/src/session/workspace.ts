import type { Telemetry } from "@agent-oncall/telemetry";

/** How long a backup is kept. */
export const BACKUP_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export type BackupScope = { tenant: string; environment: string; sessionName: string };
export type BackupInfo = { handle: string; createdAt: number; expiresAt: number; bytes: number };

const prefix = (s: BackupScope) => `workspaces/${encodeURIComponent(s.tenant)}/${encodeURIComponent(s.environment)}/${encodeURIComponent(s.sessionName)}/`;

/**
 * A session's workspace: files in the agent's SQLite, backed up to R2.
 * Backups are JSON objects named by creation time; their expiry travels in
 * the object's custom metadata, so restore and sweep need only R2.
 */
export class Workspace {
  constructor(
    private readonly sql: SqlStorage,
    private readonly bucket: R2Bucket,
    private readonly scope: BackupScope,
    private readonly telemetry: Pick<Telemetry, "record">,
  ) {}

  write(path: string, content: string): void {
    this.sql.exec(
      "INSERT INTO session_workspace (path, content, updated_at) VALUES (?, ?, ?) ON CONFLICT(path) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
      path,
      content,
      Date.now(),
    );
  }

  read(path: string): string | null {
    const [r] = this.sql.exec<{ content: string }>("SELECT content FROM session_workspace WHERE path = ?", path).toArray();
    return r?.content ?? null;
  }

  files(): Record<string, string> {
    return Object.fromEntries(
      this.sql
        .exec<{ path: string; content: string }>("SELECT path, content FROM session_workspace ORDER BY path")
        .toArray()
        .map((r) => [r.path, r.content]),
    );
  }

  /** Newest change to any file, or null for an empty workspace. */
  lastChange(): number | null {
    const [r] = this.sql.exec<{ t: number | null }>("SELECT MAX(updated_at) AS t FROM session_workspace").toArray();
    return r?.t ?? null;
  }

  /** Writes the workspace to R2 now and reports `backup.created`. */
  async snapshotNow(reason: string, now = Date.now()): Promise<BackupInfo> {
    const body = JSON.stringify({ v: 1, reason, files: this.files() });
    const handle = `${prefix(this.scope)}${String(now).padStart(15, "0")}-${crypto.randomUUID().slice(0, 8)}.json`;
    const expiresAt = now + BACKUP_TTL_MS;
    await this.bucket.put(handle, body, { customMetadata: { createdAt: String(now), expiresAt: String(expiresAt), reason } });
    const bytes = new TextEncoder().encode(body).byteLength;
    this.telemetry.record("backup.created", { ...this.#scopePayload(handle), expiresAt, bytes }, { sessionName: this.scope.sessionName });
    return { handle, createdAt: now, expiresAt, bytes };
  }

  /** Restores the newest unexpired backup into an empty workspace. Returns it, or null when there is none. */
  async restoreLatest(now = Date.now()): Promise<BackupInfo | null> {
    const backups = (await this.list()).filter((b) => b.expiresAt > now);
    const latest = backups[backups.length - 1];
    if (!latest) return null;
    const obj = await this.bucket.get(latest.handle);
    if (!obj) return null;
    const parsed = JSON.parse(await obj.text()) as { files?: Record<string, string> };
    for (const [path, content] of Object.entries(parsed.files ?? {})) this.write(path, content);
    this.telemetry.record("backup.restored", this.#scopePayload(latest.handle), { sessionName: this.scope.sessionName });
    return latest;
  }

  /** Deletes expired backups and reports each as `backup.expired`. */
  async sweepExpired(now = Date.now()): Promise<string[]> {
    const expired = (await this.list()).filter((b) => b.expiresAt <= now).map((b) => b.handle);
    if (expired.length) await this.bucket.delete(expired);
    for (const handle of expired) this.telemetry.record("backup.expired", this.#scopePayload(handle), { sessionName: this.scope.sessionName });
    return expired;
  }

  /** This session's backups, oldest first. */
  async list(): Promise<BackupInfo[]> {
    const out: BackupInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.bucket.list({ prefix: prefix(this.scope), cursor, include: ["customMetadata"] });
      for (const o of page.objects) {
        out.push({ handle: o.key, createdAt: Number(o.customMetadata?.createdAt ?? 0), expiresAt: Number(o.customMetadata?.expiresAt ?? 0), bytes: o.size });
      }
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    return out.sort((a, b) => a.createdAt - b.createdAt || (a.handle < b.handle ? -1 : 1));
  }

  #scopePayload(handle: string) {
    return { handle, tenant: this.scope.tenant, environment: this.scope.environment, sessionName: this.scope.sessionName };
  }
}
