// The CPU of building one reminder message for each channel type (src/channels/messages/), in
// English and Arabic, with links, notes and a company template every other message: a focused
// micro-measure in Node's V8 and ICU (the engine and ICU workerd embeds), outside any request,
// like bench/render.ts for the email. Target: at most 2 ms of CPU per message for any type.
//
//   node bench/channels.ts [--messages N]      (bash scripts/dev.sh node bench/channels.ts)
//
// src/ imports without extensions, so the builders are bundled first with esbuild (wrangler's own).
import { build } from "esbuild";

const messages = Number(process.argv[process.argv.indexOf("--messages") + 1]) || 3000;

const bundled = await build({
  entryPoints: ["src/channels/messages/index.ts", "src/i18n/language.ts", "src/lib/recipient-links.ts"],
  bundle: true,
  write: false,
  format: "esm",
  platform: "neutral",
  outdir: "out",
  splitting: false,
});
const load = (i: number) =>
  import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[i]!.text).toString("base64")}`);
const { channelMessage, CHANNEL_TYPES } = await load(0);
const { speechFor } = await load(1);
const { linksOfPage } = await load(2);
const TYPES = CHANNEL_TYPES as string[];

const page = "https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w";
const links = linksOfPage(page);
const LANGUAGES = ["en", "ar"];
const speeches = new Map(LANGUAGES.map((l) => [l, speechFor(l)]));
const input = (language: string, i: number) => ({
  speech: speeches.get(language),
  companyName: "Acme Facilities Ltd",
  itemId: 1000 + i,
  itemTitle: `Fire inspection, building ${i % 50}`,
  itemType: i % 4 ? "exp" : "due",
  documentType: "Fire inspection",
  expiryDate: "2027-03-14",
  today: i % 2 ? "2027-03-11" : "2027-01-02",
  dateFormat: i % 3 ? "DD.MM.YYYY" : "D MMM YYYY",
  recipientName: "Jana Weber",
  recipientFirstName: "Jana",
  recipientLastName: "Weber",
  notes: "Call the inspector first.\nKeys at the front desk.",
  links,
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

const ROUNDS = 5;
console.log(
  `building one channel message, ${messages} per type, language and round, median of ${ROUNDS} interleaved rounds (Node ${process.version})`,
);
const first = new Map<string, number>();
for (const type of TYPES) {
  const start = process.cpuUsage();
  channelMessage(type, input("en", 0));
  first.set(type, cpuMs(start));
}
// Warm-up over every type and language, so the JIT has seen them all before any is measured.
for (let i = 0; i < 2000; i++) channelMessage(TYPES[i % TYPES.length], input(LANGUAGES[i % 2]!, i));
const key = (type: string, language: string) => `${type} ${language}`;
const samples = new Map<string, number[]>();
const bytes = new Map<string, number>();
for (let round = 0; round < ROUNDS; round++) {
  for (const type of TYPES) {
    for (const language of LANGUAGES) {
      const start = process.cpuUsage();
      let size = 0;
      for (let i = 0; i < messages; i++) size = channelMessage(type, input(language, i)).body.length;
      (samples.get(key(type, language)) ?? samples.set(key(type, language), []).get(key(type, language))!).push(
        (cpuMs(start) * 1000) / messages,
      );
      bytes.set(key(type, language), size);
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(
  "type         first message (ms CPU)  en (µs CPU per message)  ar (µs CPU per message)  body chars (en / ar)",
);
let worst = 0;
for (const type of TYPES) {
  const en = median(samples.get(key(type, "en"))!);
  const ar = median(samples.get(key(type, "ar"))!);
  worst = Math.max(worst, en, ar);
  console.log(
    `${type.padEnd(12)} ${first.get(type)!.toFixed(2).padStart(22)}  ${en.toFixed(1).padStart(23)}  ${ar.toFixed(1).padStart(23)}  ${`${bytes.get(key(type, "en"))} / ${bytes.get(key(type, "ar"))}`.padStart(20)}`,
  );
}
console.log(`worst steady state: ${(worst / 1000).toFixed(3)} ms per message (target ≤ 2 ms)`);

// The longest input: 10,000-character title, company, recipient and notes, and long template texts
// (everything is cut; this is the cost of cutting).
const longest = {
  ...input("ar", 1),
  itemTitle: "😀".repeat(10_000),
  companyName: "C".repeat(10_000),
  recipientName: "R".repeat(10_000),
  notes: "<&>".repeat(3_400),
  template: { subject: "S".repeat(5000), intro: `{item.title} ${"i".repeat(5000)}`, footer: "*".repeat(5000) },
};
const worstCase: string[] = [];
for (const type of TYPES) {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < 200; i++) channelMessage(type, longest);
    rounds.push((cpuMs(start) * 1000) / 200);
  }
  worstCase.push(`${type} ${median(rounds).toFixed(0)} µs`);
}
console.log(`longest input (10,000-character texts, Arabic, a long template): ${worstCase.join(", ")}`);
