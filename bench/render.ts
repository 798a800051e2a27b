// The CPU of rendering one reminder email (src/company-clock/reminder-email.ts) in each language,
// with links, notes and a company template: a focused micro-measure, in Node's V8 and ICU (the
// engine and ICU workerd embeds), outside any request. The first render of a language builds its
// Intl formatters (cached per locale and options, src/i18n/format.ts); the steady state reuses them.
//
//   node bench/render.ts [--renders N]      (bash scripts/dev.sh node bench/render.ts)
//
// src/ imports without extensions, so the renderer is bundled first with esbuild (wrangler's own).
import { build } from "esbuild";

const renders = Number(process.argv[process.argv.indexOf("--renders") + 1]) || 5000;

const bundled = await build({
  entryPoints: ["src/company-clock/reminder-email.ts", "src/i18n/language.ts"],
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
