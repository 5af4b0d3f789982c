import type { HistoryScan, HistoryStop } from "../src/store/history/read";
import type { BulkCount, BulkFilter, BulkStatus, BulkTarget, IncidentRow, SearchField, SearchMatch, SearchVia } from "../src/store/read-models";
import type { AmbiguousOwner, OwnedKind } from "../src/store/read-models/errors";
import { type Shelf, VIEWS_PER_SHELF } from "../src/store/views";
import { count } from "./format";
import { detailHref } from "./links";

/**
 * Sentences for operators, keyed by the typed codes and facts the store and the packages return. The store says
 * what is true (a status, a reason or its absence); the console says it in words.
 */

/** The incident status as the console labels it: a failure the SDK gave no reason for says so. */
export function incidentStatusLabel(i: Pick<IncidentRow, "status" | "reason">): string {
  return i.status === "failed" && !i.reason ? "failed (no reason given)" : i.status;
}

/** The detail page each kind of owned row has. */
const DETAIL_PAGE: Record<OwnedKind, "runs" | "incidents" | "sessions"> = { run: "runs", incident: "incidents", session: "sessions" };

/** The refusal when several agents reported an id: who did, each with the link to its own page for that id. */
export function ambiguousOwnerSentence(e: Pick<AmbiguousOwner, "what" | "id" | "candidates" | "more">): string {
  const links = e.candidates.map((owner) => detailHref(DETAIL_PAGE[e.what], e.id, owner));
  return `Several agents reported ${e.what} "${e.id}"; choose one by opening it for its agent: ${links.join(" , ")}${e.more ? " , …" : ""}`;
}

/** Run kinds as operators say them; an unknown kind is shown as stored. */
const RUN_KIND_WORDS: Record<string, string> = { fiber: "fiber", managed_fiber: "managed fiber", task: "task run", chat_turn: "chat turn" };

/** A run's kind in words ("task run", "chat turn"). */
export function runKindWords(kind: string): string {
  return RUN_KIND_WORDS[kind] ?? kind;
}

/** A search match in a few words: its kind, its status or outcome, and its reason or session. */
export function searchMatchLabel(m: SearchMatch): string {
  switch (m.kind) {
    case "incident":
      return `${m.incidentKind} incident · ${m.status}${m.reason ? ` (${m.reason})` : ""}`;
    case "run":
      return `${runKindWords(m.runKind)} ${m.runName} · ${m.outcome ?? "running"}`;
    case "op":
      return `ambiguous op${m.opKind ? ` ${m.opKind}` : ""} · ${m.resolution ?? "open"}${m.sessionName ? ` · session ${m.sessionName}` : ""}`;
    case "session":
      return `session · ${m.status ?? "no status reported"}`;
    case "agent":
      return `agent ${m.agentClass} · ${m.agentName}`;
  }
}

/** A capped count as shown: "3", or "100+" when the store stopped counting. */
const countWords = (c: BulkCount) => `${count(c.count)}${c.capped ? "+" : ""}`;

/** What a bulk status counts, in words. */
const BULK_STATUS_NOUNS: Record<BulkStatus, string> = {
  running_runs: "running run(s)",
  open_incidents: "open incident(s)",
  running_sessions: "running session(s)",
};

/**
 * A bulk target's "why it matched" from the store's facts (BulkMatch), one clause per criterion it met, e.g.
 * `class Support; 2 open incident(s) with reason loop; 1 running run(s); stuck (no_progress) since …`.
 */
export function bulkMatchWords(t: Pick<BulkTarget, "agentClass" | "matched" | "stuck">): string {
  const m = t.matched;
  return [
    m.agentClass ? `class ${t.agentClass}` : null,
    m.incidentReason ? `${countWords(m.incidentReason)} ${m.incidentReason.openOnly ? "open " : ""}incident(s) with reason ${m.incidentReason.reason}` : null,
    m.status ? `${countWords(m.status)} ${BULK_STATUS_NOUNS[m.status.status]}` : null,
    t.stuck ? `stuck (${t.stuck.rule}) since ${new Date(t.stuck.since).toISOString()}` : null,
  ]
    .filter(Boolean)
    .join("; ");
}

/**
 * A bulk filter in words, one clause per criterion given, e.g.
 * `class DurableWorkAgent, incident reason max_attempts_exceeded (open), status running_runs` (the CLI prints it).
 */
export function bulkFilterWords(f: BulkFilter): string {
  return [
    f.agentClass ? `class ${f.agentClass}` : null,
    f.incidentReason ? `incident reason ${f.incidentReason}${f.openOnly ? " (open)" : ""}` : null,
    f.status ? `status ${f.status}` : null,
    f.stuckRule ? `stuck rule ${f.stuckRule}` : null,
  ]
    .filter(Boolean)
    .join(", ");
}

/** The refusal when a bulk filter selects no agent at start time. */
export function noBulkTargetsSentence(f: BulkFilter): string {
  return `No agent matches this filter (${bulkFilterWords(f)}), so no batch was started.`;
}

/** The refusal of a bulk action to a role that may not act (also the audit row's error). */
export function bulkRoleRefusalSentence(who: { email: string; role: string }): string {
  return `Refused: ${who.email} has the ${who.role} role; bulk actions need operator. The attempt is in the audit log.`;
}

/** The fields a search matches in, as operators name them. */
const SEARCH_FIELD_WORDS: Record<SearchField, string> = {
  incident: "incident id",
  request: "request id",
  task: "task id",
  op: "op id",
  fiber: "fiber id",
  trace: "trace id",
  run: "run id",
  session: "session name",
  agent_key: "agent class/name",
  agent_name: "agent name",
};

/** How a search matched, in words: "request id", "trace id (an event of it)", "prefix of an incident id". */
export function searchViaWords(via: SearchVia): string {
  const field = SEARCH_FIELD_WORDS[via.field];
  switch (via.by) {
    case "id":
      return field;
    case "event":
      return `${field} (an event of it)`;
    case "prefix":
      return `prefix of ${/^[aeiou]/.test(field) ? "an" : "a"} ${field}`;
  }
}

/** The last line of a CSV download that the row cap cut (worker/routes/export.ts); a `#` line, so a reader can skip it. */
export function exportCutLine(rows: number): string {
  return `# cut at ${rows} rows: the list has more. Narrow the filters (e.g. since / until) to download the rest.`;
}

/**
 * The line after a runs download's rows (worker/export/stream.ts): the span of the R2 history its completed runs were
 * read from, and, when the read stopped short of the span's start, where (older completed runs are not in the file).
 */
export function exportHistoryLine(h: {
  from: number;
  to: number;
  coveredFrom: number | null;
  coveredTo: number | null;
  complete: boolean;
  objects: number;
}): string {
  const at = (t: number) => new Date(t).toISOString();
  const read = h.coveredFrom === null ? "nothing of it was read" : `read from ${at(h.coveredFrom)} to ${at(h.coveredTo ?? h.to)}`;
  return `# completed runs from the R2 history, span ${at(h.from)} to ${at(h.to)}: ${read} (${h.objects} objects)${
    h.complete ? "" : "; the read stopped before the span's start, so older completed runs are not in this file"
  }.`;
}

/** The last line of a download that could not be read to its end (worker/export/stream.ts): the file is incomplete. */
export function exportFailedLine(rows: number): string {
  return `# incomplete: reading the list failed after ${rows} rows. This file is not the whole list; download it again.`;
}

/** Why `cols=` was refused: the list's columns are these (worker/routes/columns.ts). */
export function colsRefusalSentence(list: string, ids: readonly string[]): string {
  return `cols must name columns of the ${list} list among ${ids.join(", ")}`;
}

/** Why `cols=` was refused on a download of a list that has no column choice (the events timeline). */
export function noColumnChoiceSentence(list: string): string {
  return `The ${list} list has no column choice: leave cols out to download every field.`;
}

/** A shelf of saved views in words: whose views they are. */
export function viewShelfWords(shelf: Shelf): string {
  return shelf === "team" ? "team" : "personal";
}

/** Why a view was not saved (src/store/views.ts SaveResult), in one sentence. */
export function viewSaveRefusalSentence(r: { reason: "name_taken" | "shelf_full"; shelf: Shelf; name: string }): string {
  const where = r.shelf === "team" ? "the team's views" : "your personal views";
  return r.reason === "name_taken"
    ? `There is already a view named "${r.name}" in ${where}: choose another name, or delete the old view first.`
    : `${where[0]!.toUpperCase()}${where.slice(1)} already hold ${VIEWS_PER_SHELF} views, the most a shelf holds: delete one first.`;
}

/** Why a view cannot be deleted or opened (src/store/views.ts DeleteResult), in one sentence. */
export function viewRefusalSentence(reason: "not_found" | "not_permitted", viewId: string, who: { email: string; role: string }): string {
  return reason === "not_found"
    ? `There is no view "${viewId}" that ${who.email} can see: it was deleted, or it is someone else's personal view.`
    : `${who.email} (${who.role}) may not delete this view: a personal view only by its owner, a team view by its owner or an operator.`;
}

/** Why a viewer cannot save a team view. */
export function teamViewRoleSentence(who: { email: string; role: string }): string {
  return `${who.email} has the ${who.role} role; saving a team view needs operator. Save it as a personal view instead.`;
}

/** Labels as one phrase: "a", "a and b", "a, b and c". */
export function listWords(labels: readonly string[]): string {
  return labels.length < 2 ? (labels[0] ?? "") : `${labels.slice(0, -1).join(", ")} and ${labels.at(-1)}`;
}

/** What a role may not do on this page, and why, in one sentence: "Force idle and trigger alarm need the operator role; …". */
export function withheldActionsSentence(labels: readonly string[], role: string): string {
  const phrase = listWords(labels.map((l, i) => (i ? l.toLowerCase() : l)));
  return `${phrase} need${labels.length === 1 ? "s" : ""} the operator role; you are signed in as a ${role}.`;
}

/** Over the per-attempt table when the incident re-spent tokens in more attempts than it lists. */
export function respentAttemptsCapped(shown: number): string {
  return `The first ${count(shown)} attempts; later attempts re-spent tokens too (the total above counts them all).`;
}

/**
 * Under a timeline page: more events follow (`next`), and whether this page stopped reading before it was full (a
 * sparse timeline: its reading is bounded per page, so a short page does not mean the timeline ended).
 */
export function timelineMoreWords(dir: "older" | "later", partial: boolean): { link: string; note: string | null } {
  return {
    link: `${dir} events »`,
    note: partial ? `This page stopped reading before it was full: ${dir} events may follow.` : null,
  };
}

/**
 * Under a list page that holds fewer rows than its size and still has a next page: its reading is bounded per page
 * (a filter no index serves is tested row by row), so a short page does not mean the list ended.
 */
export function listPartialWords(noun: string, shown: number): string {
  return shown === 0
    ? `None in the ${noun} this page read: it stops reading at a bound, and older ${noun} may match (next page).`
    : `This page stopped reading before it was full: older ${noun} may follow.`;
}

/** A run neither the hot store nor the history (as far as it was read: `looked`, null without a bucket) holds. */
export function runNotFoundWords(id: string, looked: { scan: HistoryScan; from: number; to: number } | null): string {
  return notInEitherTier(`No run with id "${id}" (a fiber id, a Tasks run id, or a chat turn's request id)`, looked);
}

/** An incident neither the hot store nor the history (as far as it was read: `looked`, null without a bucket) holds. */
export function incidentNotFoundWords(id: string, looked: { scan: HistoryScan; from: number; to: number } | null): string {
  return notInEitherTier(`No incident with id "${id}"`, looked);
}

/** "<what> in the hot store or in the R2 history, which was read from <span>.": how far the history looked. */
function notInEitherTier(what: string, looked: { scan: HistoryScan; from: number; to: number } | null): string {
  if (!looked) return `${what} in the hot store, and no R2 history is bound.`;
  const s = looked.scan;
  const span = s.coveredFrom === null ? "nothing of it" : `${new Date(s.coveredFrom).toISOString()} to ${new Date(s.coveredTo ?? looked.to).toISOString()}`;
  return `${what} in the hot store or in the R2 history, which was read from ${span}${s.stop ? ` (${historyStopWords(s.stop)})` : ""}.`;
}

/** What stopped a read of the R2 history short, in words ("stopped at 100 objects fetched"). */
export function historyStopWords(stop: HistoryStop): string {
  switch (stop.limit) {
    case "lists":
      return `stopped at ${stop.at} list calls`;
    case "objects":
      return `stopped at ${stop.at} objects fetched`;
    case "events":
      return `stopped at ${stop.at} events`;
    case "hours":
      return `looked at ${stop.at} hours of ${stop.of}`;
  }
}

/** The lists whose closed rows leave the hot store after the hot window. */
export type HotSpanList = "incidents" | "deploys" | "ops" | "backups";

/** What a list spans, in words, given HOT_WINDOW_HOURS (components/hot-span.tsx). */
export function hotSpanWords(list: HotSpanList, hours: number): string {
  switch (list) {
    case "incidents":
      return `Open incidents are listed whatever their age; the others for ${hours} hours after their last activity. An older one opens from the R2 history by its id (with its agent in the link).`;
    case "deploys":
      return `Counts cover the incidents the hot store holds: every open one, and the others for ${hours} hours after their last activity; the storm rule compares inside that window.`;
    case "ops":
      return `Resolved ops are listed for ${hours} hours after their last activity; unresolved ones whatever their age.`;
    case "backups":
      return `Backups are listed until ${hours} hours after they expire (and at most the retention period after their last activity).`;
  }
}
