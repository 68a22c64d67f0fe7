/**
 * How the fit step (fit.ts) cuts a kept tool call's arguments: to about a token cap, as the store
 * counts them (canonical JSON), while the call still says what it acted on. A clamped `Edit`
 * keeps its `file_path` and a clamped `Bash` its `command` whenever they are short: the model
 * reading the context, and the ledger a later compaction reads from the same view, then still
 * know which file was edited and which command ran.
 */
import { excerptText, formatCount, type ExcerptMarker } from './excerpt';
import { PATH_LIST_ARGUMENTS, SINGLE_PATH_ARGUMENTS } from './file-ops';

/** The key a clamped tool input is shown under: `{ "_clamped": "<excerpt of the arguments>" }`. */
export const CLAMPED_INPUT_KEY = '_clamped';

/** The smallest excerpt worth keeping before a part is reduced to its marker alone. */
export const MIN_EXCERPT_TOKENS = 64;

/** String arguments longer than this are what a clamp cuts; shorter ones (a path, a command) stay. */
const LONG_ARGUMENT_CHARS = 200;

/** Arguments that name what a call acted on: its paths and its command line. */
const IDENTIFYING_ARGUMENTS: ReadonlySet<string> = new Set([
  ...SINGLE_PATH_ARGUMENTS,
  ...PATH_LIST_ARGUMENTS,
  'command',
  'cmd',
]);

/** Longest identifying argument kept whole (serialised); a longer one is clamped like any other. */
export const MAX_IDENTIFYING_ARGUMENT_CHARS = 400;
/** Most characters (serialised) a clamp keeps of one call's identifying arguments together. */
export const MAX_IDENTIFYING_CHARS = 600;

/** What {@link clampInput} cuts: a tool call's arguments and their text. */
export interface InputToClamp {
  /** The arguments as stored. */
  input: unknown;
  /** The same, serialised (what the marker's sizes describe). */
  content: string;
}

export interface ClampInputOptions {
  cap: number;
  callId: string;
  /** Tokens of a text, and of arguments as the store counts them. */
  countText: (text: string) => number;
  countInput: (input: unknown) => number;
  marker: ExcerptMarker;
  /** Keep the short identifying arguments whole; false only when nothing else can still fit. */
  keepIdentifying: boolean;
}

function isShortIdentifying(value: unknown): boolean {
  const shortString = (v: unknown) => typeof v === 'string' && v.length <= MAX_IDENTIFYING_ARGUMENT_CHARS;
  if (typeof value === 'string') return shortString(value) && value.trim() !== '';
  return (
    Array.isArray(value) &&
    value.every((item) => typeof item === 'string') &&
    JSON.stringify(value).length <= MAX_IDENTIFYING_ARGUMENT_CHARS
  );
}

/** The names of the identifying arguments kept whole, in their order, within {@link MAX_IDENTIFYING_CHARS}. */
function identifyingKeys(entries: ReadonlyArray<[string, unknown]>): Set<string> {
  const kept = new Set<string>();
  let chars = 0;
  for (const [key, value] of entries) {
    if (!IDENTIFYING_ARGUMENTS.has(key) || !isShortIdentifying(value)) continue;
    const size = JSON.stringify(value).length;
    if (chars + size > MAX_IDENTIFYING_CHARS) continue;
    kept.add(key);
    chars += size;
  }
  return kept;
}

/**
 * Arguments cut to about `cap` tokens. In an object the identifying arguments stay whole (see
 * {@link ClampInputOptions.keepIdentifying}); the long string values are excerpted in place and
 * the other keys kept (the `path` of a huge `write` still names its file); when no value is long,
 * the rest of the arguments become `"_clamped": "<excerpt>"` beside the identifying ones. Anything
 * else becomes `{ "_clamped": "<excerpt>" }`. Excerpts are counted as they serialise, escapes
 * included. Arguments with nothing to cut come back unchanged.
 */
export function clampInput(arg: InputToClamp, options: ClampInputOptions): unknown {
  const { input } = arg;
  const { cap, countInput, marker } = options;
  const serialised = (text: string) => options.countText(JSON.stringify(text));
  const isObject = typeof input === 'object' && input !== null && !Array.isArray(input);
  const entries = isObject ? Object.entries(input as Record<string, unknown>) : [];
  const identifying = options.keepIdentifying ? identifyingKeys(entries) : new Set<string>();
  const long = entries.filter(
    ([key, value]) =>
      !identifying.has(key) && typeof value === 'string' && value.length > LONG_ARGUMENT_CHARS,
  );
  if (long.length === 0) {
    const kept = Object.fromEntries(entries.filter(([key]) => identifying.has(key)));
    const rest = entries.filter(([key]) => !identifying.has(key));
    if (identifying.size > 0 && rest.length === 0) return input;
    const content = identifying.size === 0 ? arg.content : JSON.stringify(Object.fromEntries(rest));
    const wrapped = (text: string) => ({ ...kept, [CLAMPED_INPUT_KEY]: text });
    const excerpt = excerptText(content, cap, {
      textTokens: countInput(wrapped(content)),
      count: (text) => countInput(wrapped(text)),
      marker,
    });
    return wrapped(excerpt.text);
  }
  const skeleton = Object.fromEntries(
    entries.map(([key, value]) => [key, long.some(([k]) => k === key) ? '' : value]),
  );
  // Shared among the long values by their lengths, halved until the whole fits.
  const total = long.reduce((sum, [, value]) => sum + (value as string).length, 0);
  let room = cap - countInput(skeleton);
  for (let round = 0; round < 6; round++) {
    const clamped: Record<string, unknown> = { ...skeleton };
    for (const [key, value] of long) {
      const text = value as string;
      const share = Math.floor((Math.max(0, room) * text.length) / total);
      const valueMarker: ExcerptMarker = (omitted) =>
        `[... argument "${key}" clamped to fit the context window: ${formatCount(omitted)} of ${formatCount(text.length)} characters left out; call ${options.callId}]`;
      clamped[key] = excerptText(text, share < MIN_EXCERPT_TOKENS ? 0 : share, {
        textTokens: serialised(text),
        count: serialised,
        marker: valueMarker,
      }).text;
    }
    if (countInput(clamped) <= cap || room <= 0) return clamped;
    room = Math.floor(room / 2);
  }
  return Object.fromEntries(
    entries.map(([key, value]) => [
      key,
      long.some(([k]) => k === key) ? marker((value as string).length) : value,
    ]),
  );
}
