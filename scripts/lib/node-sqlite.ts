// Node's SQLite (node:sqlite), for the scripts that read local state files. It prints an
// ExperimentalWarning when loaded; that one is expected and silenced, others still print.
const defaultWarning = process.listeners("warning");
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name === "ExperimentalWarning" && /SQLite/i.test(warning.message)) return;
  for (const listener of defaultWarning) listener(warning);
});
export const { DatabaseSync } = await import("node:sqlite");
export type Database = InstanceType<typeof DatabaseSync>;
