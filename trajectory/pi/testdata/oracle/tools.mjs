// Runs pi's real built-in tools on a list of calls and prints what pi would
// store as each toolResult ({content, details, isError}), one JSON per line.
// Used only to regenerate tools.golden (one result per line):
//   go test ./trajectory/pi -run TestToolsGolden -pi-dist=<…/pi-coding-agent/dist>
// (one oracle file per release: tools@<version>.golden)
// Usage: node tools.mjs <pi dist dir> <cwd> < cases.jsonl
import { createInterface } from "node:readline";
const [dist, cwd] = process.argv.slice(2);
const { createTool } = await import(dist + "/core/tools/index.js");
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const { tool: name, args: raw } = JSON.parse(line);
  const tool = createTool(name, cwd);
  let args = raw;
  if (tool.prepareArguments) args = tool.prepareArguments(args);
  let out;
  try {
    const r = await tool.execute("call", args, undefined, undefined);
    // Since 1.x a tool reports a failed command by returning isError
    // (with its details) instead of throwing.
    out = { content: r.content, details: r.details, isError: r.isError === true };
  } catch (e) {
    // agent-loop's createErrorToolResult
    out = { content: [{ type: "text", text: e instanceof Error ? e.message : String(e) }], details: {}, isError: true };
  }
  await new Promise((done) => process.stdout.write(JSON.stringify(out) + "\n", done));
}
process.exit(0);
