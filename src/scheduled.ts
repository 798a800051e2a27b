import type { Env } from "./env";

/** Cron trigger: the reminder sweep. A no-op until reminders exist. */
export async function handleScheduled(controller: ScheduledController, _env: Env, _ctx: ExecutionContext): Promise<void> {
  console.log(JSON.stringify({ level: "info", msg: "reminder sweep", cron: controller.cron, at: new Date(controller.scheduledTime).toISOString() }));
}
