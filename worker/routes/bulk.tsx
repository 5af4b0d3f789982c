import { type Context, Hono } from "hono";
import { z } from "zod";
import { batchHref } from "../../console/links";
import { BatchPage, BatchProgressView, BulkPage } from "../../console/pages/bulk";
import { bulkTargetWhy } from "../../console/stuck-words";
import { bulkFilterWords, bulkRoleRefusalSentence, noBulkTargetsSentence } from "../../console/words";
import { ADMIN_ACTIONS, actionBySlug } from "../../src/admin-rpc/actions";
import { bulkFilter, bulkFilterQuery } from "../../src/store/console-store";
import { parseFilters } from "../../src/store/read-models/filters";
import { BULK_ACTIONS, type BulkAction, recordRefusedBatch, startBatch } from "../jobs";
import { type ConsoleEnv, pageContext, storeOf, wantsJson } from "./context";
import { page, problem, refuse } from "./render";
import { stuckConfigOf } from "./stuck";

/**
 * Bulk actions: GET /bulk previews the agents a filter selects (no state change; JSON for the CLI), POST /bulk
 * starts the batch (operators; CSRF-checked by the app), GET /bulk/batches/:batchId shows its progress, and
 * /progress is the fragment the page polls.
 */
export const bulk = new Hono<ConsoleEnv>();

const FILTER_KEYS = ["agentClass", "incidentReason", "openOnly", "status", "stuckRule"] as const;

/** The filter fields of a query or form, as strings ("" kept as unset by the read model). */
function filterFields(src: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(FILTER_KEYS.filter((k) => src[k] !== undefined).map((k) => [k, src[k]]));
}

/** The action (by name, or by its route slug as the CLI says it) and the operator's reason. */
const startForm = z.object({
  action: z.preprocess(
    (v) => (typeof v === "string" ? (actionBySlug(v) ?? v) : v),
    z.enum(BULK_ACTIONS, {
      error: `action must be one of ${BULK_ACTIONS.join(", ")} (or their CLI verbs ${BULK_ACTIONS.map((a) => ADMIN_ACTIONS[a].slug).join(", ")})`,
    }),
  ),
  reason: z
    .string({ error: "a reason is required: it goes to the audit log for the batch and every agent" })
    .trim()
    .min(1, "a reason is required: it goes to the audit log for the batch and every agent")
    .max(2000, "the reason is longer than 2000 characters"),
  expected: z.preprocess((v) => (v === "" || v === undefined ? undefined : Number(v)), z.number().int().min(0).optional()),
});

const message = (e: z.ZodError) => e.issues.map((i) => i.message).join("; ");

async function readForm(c: Context<ConsoleEnv>): Promise<Record<string, unknown> | null> {
  try {
    return await c.req.parseBody();
  } catch {
    return null;
  }
}

/** A refusal of a batch, in the caller's form (worker/http): 400 for bad input, 403 for a role that may not act. */
function refuseBatch(c: Context<ConsoleEnv>, status: 400 | 403, text: string) {
  return status === 400 ? problem(c, 400, text) : refuse(c, { status, code: "not_permitted", message: text });
}

bulk.get("/bulk", async (c) => {
  const q = c.req.query() as Record<string, string | undefined>;
  const fields = filterFields(q);
  const given = Object.values(fields).some((v) => v !== "" && v !== undefined);
  // No filter yet: the empty form (JSON callers get the reason it needs one).
  const ctx = pageContext(c);
  const stuckConfig = stuckConfigOf(c.env);
  const selection = given || wantsJson(c) ? await storeOf(c).bulk.targets(ctx.now, fields, { stuckConfig }) : null;
  if (wantsJson(c)) {
    // The facts (`matched`, `stuck`) plus `why` in words: the CLI (scripts/cli.mjs bulk) prints `why` as it comes.
    const targets = selection!.targets.map((t) => ({ ...t, why: bulkTargetWhy(t, ctx.now, stuckConfig) }));
    return c.json({ ok: true, value: { ...selection!, targets, describe: bulkFilterWords(selection!.filter) } });
  }
  return page(c, <BulkPage ctx={ctx} query={q} selection={selection} stuckConfig={stuckConfig} />);
});

bulk.post("/bulk", async (c) => {
  const body = await readForm(c);
  if (!body) return problem(c, 400, "the request body could not be read as a form: send application/x-www-form-urlencoded");
  const user = c.var.user;
  const who = { email: user.email, role: user.role };
  const filter = parseFilters(bulkFilter, filterFields(body));
  const filterQuery = bulkFilterQuery(filter);
  const rawAction = (typeof body.action === "string" ? (actionBySlug(body.action) ?? body.action) : "force_idle") as BulkAction;
  const rawReason = typeof body.reason === "string" ? body.reason : "";
  const auditAction: BulkAction = (BULK_ACTIONS as readonly string[]).includes(rawAction) ? rawAction : "force_idle";
  if (user.role !== "operator") {
    const text = bulkRoleRefusalSentence(user);
    await recordRefusedBatch(c.env, who, auditAction, rawReason, filterQuery, "denied", text);
    return refuseBatch(c, 403, text);
  }
  const form = startForm.safeParse(body);
  if (!form.success) {
    await recordRefusedBatch(c.env, who, auditAction, rawReason, filterQuery, "invalid", message(form.error));
    return refuseBatch(c, 400, message(form.error));
  }
  // The server selects again: what is acted on is what matches now, recorded in the batch's audit row.
  const selection = await storeOf(c).bulk.targets(Date.now(), filter, { stuckConfig: stuckConfigOf(c.env) });
  if (selection.targets.length === 0) {
    return refuseBatch(c, 400, noBulkTargetsSentence(filter));
  }
  const batchId = await startBatch(c.env, executionContext(c), who, form.data.action, form.data.reason, selection);
  const href = batchHref(batchId);
  if (wantsJson(c)) {
    return c.json(
      {
        ok: true,
        value: { batchId, href, total: selection.targets.length, capped: selection.capped, matched: selection.total, previewed: form.data.expected ?? null },
      },
      202,
    );
  }
  return c.redirect(href, 303);
});

/** The request's execution context, when there is one (there is none when the app is called directly in tests). */
function executionContext(c: Context<ConsoleEnv>): ExecutionContext | null {
  try {
    return c.executionCtx as ExecutionContext;
  } catch {
    return null;
  }
}

/** The batch named in the path (a malformed id is a 400 through BadRequest), or null. */
const progressOf = (c: Context<ConsoleEnv>) => storeOf(c).bulk.progress(c.req.param("batchId") ?? "");

bulk.get("/bulk/batches/:batchId", async (c) => {
  const p = await progressOf(c);
  if (!p) return problem(c, 404, `There is no batch ${c.req.param("batchId")}.`);
  if (wantsJson(c)) return c.json({ ok: true, value: p });
  return page(c, <BatchPage ctx={pageContext(c)} progress={p} />);
});

bulk.get("/bulk/batches/:batchId/progress", async (c) => {
  const p = await progressOf(c);
  if (!p) return problem(c, 404, `There is no batch ${c.req.param("batchId")}.`);
  return c.html(<BatchProgressView progress={p} />);
});
