/**
 * Which tool calls are tasks: long-lived work a call starts and whose result arrives later (a
 * sub-agent, a background shell, a spawned agent). A task must stay visible after the compaction
 * that covers its call, so the session keeps a registry of them (see `record.ts`).
 *
 * The policy's `tasks.tools` lists tool names, each optionally with an input field that must be
 * truthy (`bash[run_in_background]`: a Bash call is a task only when it runs in the background).
 * Names match case- and separator-insensitively (`spawn_agent` = `spawnAgent` = `Spawn-Agent`).
 * A client marks any other call a task by listing its call id in the message's
 * `metadata.taskCallIds`.
 */
import type { Message, ToolPart } from '../model';

/**
 * The default task tools, by agent family. Claude Code: `Task` (its sub-agent tool, earlier
 * `dispatch_agent`), `Agent` (its newer name), `Bash` with `run_in_background`. Codex:
 * `spawn_agent`. OpenCode: `task`, and its plugins' `background_task`, `delegate_task`,
 * `call_omo_agent`. Generic spawn-like names: `spawn`, `subagent`, `run_subagent`,
 * `launch_agent`. Tools that only read or stop a task (`BashOutput`, `KillShell`, `TaskOutput`,
 * Codex's `wait` / `send_input` / `close_agent`) are not tasks: their results come back at once.
 */
export const DEFAULT_TASK_TOOLS: readonly string[] = [
  'Task',
  'Agent',
  'dispatch_agent',
  'Bash[run_in_background]',
  'spawn_agent',
  'background_task',
  'delegate_task',
  'call_omo_agent',
  'spawn',
  'subagent',
  'run_subagent',
  'launch_agent',
];

/** The message metadata key a client lists its own task call ids under. */
export const TASK_CALL_IDS_METADATA_KEY = 'taskCallIds';

/** One parsed `tasks.tools` entry. */
export interface TaskToolRule {
  /** The normalised tool name. */
  name: string;
  /** The input field that must be truthy, or null for "every call". */
  when: string | null;
}

const RULE = /^([A-Za-z0-9_.:-]{1,64})(?:\[([A-Za-z0-9_.-]{1,64})\])?$/;

/** A tool name as compared: lower case, without `_`, `-`, `.` and `:`. */
export function normalToolName(name: string): string {
  return name.toLowerCase().replace(/[_.:-]/g, '');
}

/** Parses `tasks.tools` entries; an entry that is not `name` or `name[field]` is ignored. */
export function parseTaskTools(tools: readonly string[]): TaskToolRule[] {
  const rules: TaskToolRule[] = [];
  for (const entry of tools) {
    const match = RULE.exec(entry.trim());
    if (match) rules.push({ name: normalToolName(match[1]!), when: match[2] ?? null });
  }
  return rules;
}

function truthyField(input: unknown, field: string): boolean {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return false;
  const value = (input as Record<string, unknown>)[field];
  return value === true || value === 'true' || value === 1;
}

/** Whether a call to `tool` with `input` is a task under `rules`. */
export function isTaskTool(rules: readonly TaskToolRule[], tool: string, input: unknown): boolean {
  const name = normalToolName(tool);
  return rules.some((rule) => rule.name === name && (rule.when === null || truthyField(input, rule.when)));
}

/** The call ids a message's metadata marks as tasks (strings only, at most 1,000). */
export function markedTaskCallIds(metadata: Record<string, unknown> | null | undefined): Set<string> {
  const listed = metadata?.[TASK_CALL_IDS_METADATA_KEY];
  if (!Array.isArray(listed)) return new Set();
  return new Set(listed.slice(0, 1000).filter((id): id is string => typeof id === 'string'));
}

/** The tool parts of `message` that are tasks: by the rules or by the client's mark. */
export function taskPartsOf(
  message: Pick<Message, 'role' | 'parts' | 'metadata'>,
  rules: readonly TaskToolRule[],
): ToolPart[] {
  if (message.role !== 'assistant') return [];
  const marked = markedTaskCallIds(message.metadata);
  return message.parts.filter(
    (part): part is ToolPart =>
      part.type === 'tool' && (marked.has(part.callId) || isTaskTool(rules, part.tool, part.input)),
  );
}

/** The task rules of a session's policy: its `tasks.tools`, or {@link DEFAULT_TASK_TOOLS}. */
export function taskToolRules(policy: { tasks?: { tools: readonly string[] } | undefined }): TaskToolRule[] {
  return parseTaskTools(policy.tasks?.tools ?? DEFAULT_TASK_TOOLS);
}
