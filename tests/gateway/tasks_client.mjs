// The official TypeScript MCP client (@modelcontextprotocol/client) with the official Tasks
// requester (@modelcontextprotocol/ext-tasks, 2025-11-25 "v1" tasks), against a hub endpoint.
// Usage: node tasks_client.mjs URL TOKEN TOOL ARGUMENTS_JSON [cancel]
// Prints one JSON line: how the call ran (immediate or task), its task id, the outcome, the list.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionEndpointId,
  createTaskSessionFromClient,
} from "@modelcontextprotocol/ext-tasks/client";

const [url, token, tool, argumentsJson, mode] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-tasks-client", version: "1.0.0" });
await client.connect(transport);
const session = createTaskSessionFromClient(client, {
  endpointId: await createTaskSessionEndpointId("mcphub-tests", url),
});
const report = { capabilities: client.getServerCapabilities()?.tasks ?? null };
try {
  const execution = await session.callTool(tool, JSON.parse(argumentsJson), {
    task: { preference: "require", retentionMs: 600000 },
  });
  report.kind = execution.kind;
  report.taskId = execution.handle?.taskId ?? null;
  if (mode === "cancel") {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await execution.cancel();
  }
  const { outcome, lastTask } = await execution.settle();
  report.outcome = {
    status: outcome.status,
    result: outcome.result ?? null,
    error: outcome.error ? String(outcome.error.message ?? outcome.error) : null,
  };
  report.lastTask = lastTask ? { taskId: lastTask.taskId, status: lastTask.status } : null;
  const page = await session.listTasks();
  report.listed = page.tasks.map((task) => ({ taskId: task.taskId, status: task.status }));
} finally {
  await session.close();
  await client.close();
}
console.log(JSON.stringify(report));
