import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { CompanyClock } from "../../src/company-clock/object";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { env } from "./helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("CompanyClock Durable Object", () => {
  it("is reachable through clockFor and answers status()", async () => {
    const status = await clockFor(env, 1).status(1);
    expect(status).toEqual({ companyId: 1, queued: 0, alarm: null });
  });

  it("addresses one object per company, the same one on every call", () => {
    expect(clockFor(env, 1).id.equals(clockFor(env, 1).id)).toBe(true);
    expect(clockFor(env, 1).id.equals(clockFor(env, 2).id)).toBe(false);
    expect(clockFor(env, 7).id.equals(env.COMPANY_CLOCK.idFromName("company:7"))).toBe(true);
  });

  it("keeps its state in its SQLite meta table", async () => {
    const stub = clockFor(env, 42);
    await stub.status(42);
    const rows = await runInDurableObject(stub, (instance, state) => {
      expect(instance).toBeInstanceOf(CompanyClock);
      return state.storage.sql
        .exec<{ key: string; value: string }>("SELECT key, value FROM meta ORDER BY key")
        .toArray();
    });
    expect(rows).toEqual([
      { key: "company_id", value: "42" },
      { key: "queued_revision", value: "0" },
      { key: "schema_version", value: "11" },
    ]);
  });

  it("creates its versioned schema on construction, before any call", async () => {
    const stub = clockFor(env, 43);
    const tables = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name",
        )
        .toArray(),
    );
    expect(tables.map((t) => t.name)).toEqual([
      "applied_requests",
      "audit_outbox",
      "bounces",
      "channel_pace",
      "deliveries",
      "digests",
      "events",
      "items",
      "meta",
      "reminders",
      "renewals",
      "suppressed_addresses",
      "triggered",
      "webhook_deliveries",
    ]);
  });

  it("has no alarm by default: runDurableObjectAlarm returns false", async () => {
    const stub = clockFor(env, 3);
    await stub.status(3);
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("reports and runs an alarm once one is set", async () => {
    const stub = clockFor(env, 4);
    const at = Date.now() + 60 * 60 * 1000;
    await runInDurableObject(stub, (_instance, state) => state.storage.setAlarm(at));
    expect((await stub.status(4)).alarm).toBe(at);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await stub.status(4)).alarm).toBeNull();
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });
});

describe("scheduled handler (cron)", () => {
  it("runs the reminder sweep without throwing and logs the cron and time", async () => {
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    const scheduledTime = Date.UTC(2026, 10, 20, 9, 15, 0);
    const controller = createScheduledController({ scheduledTime, cron: "*/15 * * * *" });
    const ctx = createExecutionContext();
    await expect(worker.scheduled(controller, env, ctx)).resolves.toBeUndefined();
    await waitOnExecutionContext(ctx);
    const lines = log.mock.calls.map((args) => String(args[0]));
    const sweep = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === "reminder sweep");
    expect(sweep).toMatchObject({ level: "info", cron: "*/15 * * * *", at: "2026-11-20T09:15:00.000Z" });
  });
});

describe("bindings", () => {
  it("reaches the R2 bucket", async () => {
    await env.FILES.put("platform-test/hello.txt", "hello");
    const object = await env.FILES.get("platform-test/hello.txt");
    expect(await object?.text()).toBe("hello");
    await env.FILES.delete("platform-test/hello.txt");
    expect(await env.FILES.get("platform-test/hello.txt")).toBeNull();
  });

  it("reaches the migrated and seeded D1", async () => {
    const row = await env.DB.prepare("SELECT name FROM companies WHERE id = 1").first<{ name: string }>();
    expect(row?.name).toBe("Demo Company");
  });
});
