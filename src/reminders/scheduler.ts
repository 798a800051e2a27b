import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

/**
 * Per-company reminder state (SQLite-backed). One object per company, addressed by
 * `schedulerFor`. An empty shell for now: the reminders work fills in the queue and the alarm.
 */
export class ReminderScheduler extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    });
  }

  /** Records which company this object serves and reports its queue state. */
  async status(companyId: number): Promise<{ companyId: number; queued: number; alarm: number | null }> {
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO meta (key, value) VALUES ('company_id', ?)", String(companyId));
    return { companyId, queued: 0, alarm: await this.ctx.storage.getAlarm() };
  }

  override async alarm(): Promise<void> {
    // Nothing is queued yet.
  }
}

export function schedulerFor(env: Env, companyId: number) {
  return env.REMINDERS.get(env.REMINDERS.idFromName(`company:${companyId}`));
}
