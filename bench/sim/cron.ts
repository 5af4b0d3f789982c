/** Runs per day of a cron expression, from its minute and hour fields (enough for the schedules wrangler.jsonc uses). */
export function cronRunsPerDay(cron: string): number {
  const [min = "*", hour = "*"] = cron.trim().split(/\s+/);
  const perField = (f: string, size: number) => (f === "*" ? size : f.startsWith("*/") ? Math.ceil(size / Number(f.slice(2))) : f.split(",").length);
  return perField(min, 60) * perField(hour, 24);
}
