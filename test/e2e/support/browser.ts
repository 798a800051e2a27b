// Headless Chromium for the e2e tests: Debian's `chromium` (/usr/bin/chromium, or CHROMIUM_PATH)
// driven by playwright-core, which downloads no browser. `bash scripts/dev.sh test` installs it
// when it is missing; without it these tests fail with a message that says so (they never skip).
// A page opened here may reach only the service's origin: every other request is aborted and kept
// in `foreign`, with the console errors and uncaught exceptions, for the test to assert on.
import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: the browser tests need Debian's chromium (apt-get install chromium; ` +
        "bash scripts/dev.sh test installs it when apt-get is available) or CHROMIUM_PATH pointing at a Chromium.",
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

export interface OriginPage {
  page: Page;
  /** URLs of requests to any other origin (aborted). */
  foreign: string[];
  /** Console messages of type error, and uncaught exceptions. */
  errors: string[];
  close(): Promise<void>;
}

/**
 * A new page in its own context that may only talk to `base`'s origin. `options`: the viewport,
 * and JavaScript off (a page that must work without it).
 */
export async function originPage(
  browser: Browser,
  base: string,
  options: { viewport?: { width: number; height: number }; javaScript?: boolean } = {},
): Promise<OriginPage> {
  const origin = new URL(base).origin;
  const context = await browser.newContext({
    viewport: options.viewport ?? { width: 1400, height: 1000 },
    serviceWorkers: "block",
    javaScriptEnabled: options.javaScript ?? true,
  });
  const foreign: string[] = [];
  const errors: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`exception: ${error.message}`));
  return { page, foreign, errors, close: () => context.close() };
}
