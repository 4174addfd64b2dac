// Imported first by main.ts. Node 22 calls node:sqlite (the hub's store, loaded by most commands
// through shared modules) experimental and says so on stderr, in every CI log that runs
// `rlark plan`; Node 24 does not. Every other warning still prints through Node's own printer.
const printers = process.listeners("warning");
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name === "ExperimentalWarning" && warning.message.startsWith("SQLite is an experimental"))
    return;
  for (const print of printers) print(warning);
});
