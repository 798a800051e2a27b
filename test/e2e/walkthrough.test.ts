// The README's walk-through, run as written (scripts/lib/walkthrough.ts) against a fresh service
// that starts as on a machine without network access.
import { expect, it } from "vitest";
import { runReadmeWalkthrough } from "../../scripts/lib/walkthrough.ts";
import { freePort } from "./support/service.ts";

// wrangler's and miniflare's https requests (the update check, the `request.cf` download) go to a
// closed port, as they fail offline. The walk-through's curl calls are http, which HTTPS_PROXY
// does not touch, and the service gets it alone.
const OFFLINE = { HTTPS_PROXY: "http://127.0.0.1:9" };

it("runs from top to bottom on a fresh start offline, on the port it is given: every command succeeds, step 6's email arrives, no stack trace", async () => {
  // What `npm run walkthrough -- --port N` passes. As startService does for the ports it picks: a
  // port another service took between freePort() and wrangler's bind fails the start before
  // anything ran, so the walk-through starts again on another (seen in CI, three services starting at once).
  let port = 0;
  let result: Awaited<ReturnType<typeof runReadmeWalkthrough>> | undefined;
  for (let attempt = 1; !result; attempt++) {
    port = await freePort();
    try {
      result = await runReadmeWalkthrough({ serviceEnv: OFFLINE, port });
    } catch (error) {
      if (attempt >= 3 || !String((error as Error).message).includes("Address already in use")) throw error;
    }
  }
  expect(result.base).toBe(`http://127.0.0.1:${port}`);
  const context = `${result.failures.join("\n")}\n--- walk-through output ---\n${result.transcript.slice(-6000)}\n--- service log ---\n${result.serviceLog.slice(-6000)}`;
  expect(result.serviceLog, "wrangler saw no proxy: the run was not offline").toContain(
    "Proxy environment variables detected",
  );
  expect(result.failures, context).toEqual([]);
  expect(result.calls.length).toBeGreaterThan(40);
}, 480_000);
