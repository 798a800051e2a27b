// The CPU of rendering one reminder email (src/company-clock/reminder-email.ts) in each language,
// with links, notes and a company template, and of one 200-item digest email
// (src/company-clock/digest-email.ts; issue 34's target: <= 10 ms): focused micro-measures, in
// Node's V8 and ICU (the engine and ICU workerd embeds), outside any request. The first render of a language builds its
// Intl formatters (cached per locale and options, src/i18n/format.ts); the steady state reuses them.
//
//   node bench/render.ts [--renders N] [--digests N]      (bash scripts/dev.sh node bench/render.ts)
//
// src/ imports without extensions, so the renderer is bundled first with esbuild (wrangler's own).
import { build } from "esbuild";

const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(name);
  return (at >= 0 && Number(process.argv[at + 1])) || fallback;
};
const renders = option("--renders", 5000);
const digests = option("--digests", 50);

const bundled = await build({
  entryPoints: ["src/company-clock/reminder-email.ts", "src/i18n/language.ts", "src/company-clock/digest-email.ts"],
  bundle: true,
  write: false,
  format: "esm",
  platform: "neutral",
  outdir: "out",
  splitting: false,
});
const load = (i: number) =>
  import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[i]!.text).toString("base64")}`);
const { reminderMessage } = await load(0);
const { speechFor } = await load(1);
const { digestMessage, DIGEST_MAX_ITEMS } = await load(2);

const links = {
  page: "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w",
  acknowledge: "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/acknowledge",
  complete: "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/complete",
  renew: "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/renew",
  snooze: "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/snooze",
};
const input = (language: string, i: number) => ({
  companyName: "Acme Facilities Ltd",
  itemTitle: `Fire inspection, building ${i % 50}`,
  itemType: "exp",
  documentType: "Fire inspection",
  expiryDate: "2027-03-14",
  today: i % 2 ? "2027-03-11" : "2027-01-02",
  dateFormat: i % 3 ? "DD.MM.YYYY" : "D MMM YYYY",
  recipientName: "Jana Weber",
  recipientFirstName: "Jana",
  recipientLastName: "Weber",
  itemId: 1000 + i,
  notes: "Call the inspector first.\nKeys at the front desk.",
  links,
  speech: speechFor(language),
  template:
    i % 2
      ? {
          subject: "{item.title}: {item.when} ({item.date})",
          intro: "{contact.first_name},\n\n{item.title} — {days}.",
          footer: "{company.name}",
        }
      : null,
});

const cpuMs = (start: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
};

const LANGUAGES = ["en", "de", "fr", "es", "pt", "ar"];
const ROUNDS = 5;
console.log(
  `rendering one reminder email, ${renders} renders per language and round, median of ${ROUNDS} interleaved rounds (Node ${process.version})`,
);
const first = new Map<string, number>();
for (const language of LANGUAGES) {
  const start = process.cpuUsage();
  reminderMessage(input(language, 0));
  first.set(language, cpuMs(start));
}
// Warm-up over every language, so the JIT has seen them all before any is measured.
for (let i = 0; i < 2000; i++) reminderMessage(input(LANGUAGES[i % LANGUAGES.length]!, i));
const samples = new Map<string, number[]>(LANGUAGES.map((l) => [l, []]));
const bytes = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const language of LANGUAGES) {
    const start = process.cpuUsage();
    for (let i = 0; i < renders; i++) bytes.set(language, reminderMessage(input(language, i)).html.length);
    samples.get(language)!.push((cpuMs(start) * 1000) / renders);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log("language  first render (ms CPU)  steady state (µs CPU per email)  bytes (html)");
for (const language of LANGUAGES) {
  console.log(
    `${language.padEnd(9)} ${first.get(language)!.toFixed(2).padStart(20)}  ${median(samples.get(language)!).toFixed(1).padStart(31)}  ${String(bytes.get(language)).padStart(12)}`,
  );
}

// ---- a 200-item digest: every kind, overdue to 30 days ahead, document types on half, five links each ----
const TYPES = ["exp", "due", "apt", "evt"];
const addDays = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
const digestInput = (language: string, i: number) => ({
  speech: speechFor(language),
  kind: i % 2 ? "daily" : "weekly",
  today: "2027-03-11",
  dateFormat: i % 3 ? "DD.MM.YYYY" : "D MMM YYYY",
  companyName: "Acme Facilities Ltd",
  recipientFirstName: "Jana",
  recipientLastName: "Weber",
  entries: Array.from({ length: DIGEST_MAX_ITEMS }, (_, n) => ({
    itemId: 1000 + n,
    title: `Fire inspection, building ${n}`,
    itemType: TYPES[n % TYPES.length],
    documentType: n % 2 ? "Fire inspection" : null,
    expiryDate: addDays("2027-03-11", Math.floor((n * 40) / DIGEST_MAX_ITEMS) - 10),
    links,
  })),
  total: 237,
  preferencesUrl: "https://reminders.example/u/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/preferences",
});
const DIGEST_ROUNDS = 3;
const inputs = new Map(LANGUAGES.map((l) => [l, [digestInput(l, 0), digestInput(l, 1)]]));
// The first digest of each language: the digest's code is cold (the languages' Intl formatters were built above).
const firstDigest = new Map<string, number>();
for (const language of LANGUAGES) {
  const start = process.cpuUsage();
  digestMessage(inputs.get(language)![0]);
  firstDigest.set(language, cpuMs(start));
}
for (let i = 0; i < 10; i++) for (const language of LANGUAGES) digestMessage(inputs.get(language)![i % 2]);
const digestSamples = new Map<string, number[]>(LANGUAGES.map((l) => [l, []]));
const digestBytes = new Map<string, { text: number; html: number }>();
for (let round = 0; round < DIGEST_ROUNDS; round++) {
  for (const language of LANGUAGES) {
    const start = process.cpuUsage();
    for (let i = 0; i < digests; i++) {
      const m = digestMessage(inputs.get(language)![i % 2]);
      digestBytes.set(language, { text: Buffer.byteLength(m.text), html: Buffer.byteLength(m.html) });
    }
    digestSamples.get(language)!.push(cpuMs(start) / digests);
  }
}
console.log(
  `\nrendering one ${DIGEST_MAX_ITEMS}-item digest email, ${digests} renders per language and round, median of ${DIGEST_ROUNDS} interleaved rounds (target <= 10 ms)`,
);
console.log("language  first (ms CPU)  ms CPU per digest (rounds)      bytes (text)  bytes (html)");
for (const language of LANGUAGES) {
  const values = digestSamples.get(language)!;
  const size = digestBytes.get(language)!;
  const cpu = `${median(values).toFixed(2).padStart(6)} (${values.map((v) => v.toFixed(2)).join(" ")})`;
  console.log(
    `${language.padEnd(9)} ${firstDigest.get(language)!.toFixed(2).padStart(13)}  ${cpu.padEnd(30)}${String(size.text).padStart(12)}  ${String(size.html).padStart(12)}`,
  );
}
