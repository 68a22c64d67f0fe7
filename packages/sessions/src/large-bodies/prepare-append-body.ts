import { AppendMessagesBody } from '@compactor/contract';
import { prepareMessages, serializeBatch, type SerializedBatch } from '@compactor/db';
import { getTokenizer, type EncodingName } from '@compactor/tokenizer';
import { finishesTurn, MediaRejected, usagePeaks, type MediaFamily, type UsagePeaks } from '@compactor/core';
import { KeyedIdTaken, withKeyedIds } from '../keyed-message-ids';

/** What {@link prepareAppendBody} made of an append's body. */
export type PreparedAppendBody =
  /** Not JSON, or JSON with a `__proto__` key: what Fastify's own parser refuses. */
  | { kind: 'invalid-json' }
  /** JSON the append's schema refuses, with zod's issues (what the validator refuses). */
  | { kind: 'invalid'; issues: Array<{ path: Array<string | number>; message: string }> }
  /** A batch the append's one statement cannot decide: the caller prepares it itself. */
  | { kind: 'undecidable' }
  | {
      kind: 'serialized';
      batch: SerializedBatch;
      /** Per message, whether it ends an assistant turn (see `finishesTurn`). */
      turnEnds: boolean[];
      /** The largest usage the batch reports (core `usagePeaks`), checked before it is written. */
      usagePeaks: UsagePeaks;
    };

const BYTE_ORDER_MARK = 0xfeff;
/** `"__proto__"` with any of its letters escaped, as secure-json-parse (Fastify's parser) looks for it. */
const PROTO_KEY =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"/;

/**
 * The whole of an append's CPU work on its body, for a worker thread: decode, parse as Fastify
 * does (a leading BOM skipped, a `__proto__` key refused), validate with the append's schema,
 * give messages without an id the ids of `keyedIdPrefix` (an `Idempotency-Key`'s), count with
 * `encoding`, hash, and serialise the rows. For a 31 MiB body that is 1–2 s of work of
 * which no step can be sliced (JSON.parse alone holds a thread for 120–180 ms).
 */
export function prepareAppendBody(
  bytes: Uint8Array,
  encoding: EncodingName,
  now: Date,
  keyedIdPrefix?: string,
  mediaFamily: MediaFamily = 'any',
): Promise<PreparedAppendBody> | PreparedAppendBody {
  const parsed = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  if (parsed === undefined) return { kind: 'invalid-json' };
  const result = AppendMessagesBody.safeParse(parsed);
  if (!result.success) {
    return {
      kind: 'invalid',
      issues: result.error.issues.map((issue) => ({
        path: issue.path.map((key) => (typeof key === 'number' ? key : String(key))),
        message: issue.message,
      })),
    };
  }
  let messages = result.data.messages;
  try {
    messages = withKeyedIds(messages, keyedIdPrefix);
  } catch (error) {
    if (!(error instanceof KeyedIdTaken)) throw error;
    return { kind: 'invalid', issues: [{ path: ['messages', error.index, 'id'], message: error.message }] };
  }
  return countAndSerialize(messages, encoding, now, mediaFamily);
}

async function countAndSerialize(
  messages: Parameters<typeof prepareMessages>[0],
  encoding: EncodingName,
  now: Date,
  mediaFamily: MediaFamily,
): Promise<PreparedAppendBody> {
  const tokenizer = getTokenizer(encoding);
  // A thread of its own: counting in one go is faster than in slices, and holds up no request.
  let prepared: Awaited<ReturnType<typeof prepareMessages>>;
  try {
    prepared = await prepareMessages(messages, { count: async (text) => tokenizer.countSync(text) }, now, {
      mediaFamily,
    });
  } catch (error) {
    // Media the header check refuses: the validator's answer, at the part's path.
    if (!(error instanceof MediaRejected)) throw error;
    return { kind: 'invalid', issues: [{ path: error.path, message: error.message }] };
  }
  const batch = serializeBatch(prepared);
  if (!batch) return { kind: 'undecidable' };
  return {
    kind: 'serialized',
    batch,
    turnEnds: prepared.map((m) => finishesTurn(m.role, m.finish)),
    usagePeaks: usagePeaks(prepared.map((m) => m.usage)),
  };
}

/** JSON.parse as Fastify's default parser answers it, or undefined where that parser refuses. */
function parseJson(text: string): unknown {
  const json = text.charCodeAt(0) === BYTE_ORDER_MARK ? text.slice(1) : text;
  if (json.length === 0) return undefined;
  try {
    if (!PROTO_KEY.test(json)) return JSON.parse(json);
    return JSON.parse(json, (key, value: unknown) => {
      if (key === '__proto__') throw new SyntaxError('forbidden prototype property');
      return value;
    });
  } catch {
    return undefined;
  }
}
