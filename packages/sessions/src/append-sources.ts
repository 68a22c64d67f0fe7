import { finishesTurn, mediaFamilyOf, usagePeaks, type UsagePeaks } from '@compactor/core';
import { AppendMessagesBody } from '@compactor/contract';
import { prepareMessages, type NewMessage, type SerializedBatch } from '@compactor/db';
import { ENCODING_NAMES, type EncodingName } from '@compactor/tokenizer';
import type { z } from 'zod';
import { InvalidInput, UnparsableBody } from './errors';
import type { SessionResources } from './resources';
import type { AppendBodyThread } from './large-bodies/append-body-thread';
import { KeyedIdTaken, withKeyedIds } from './keyed-message-ids';
import { refusingMedia } from './media-refusal';

/** A batch counted for one model, ready for `appendCounted`. */
export interface PreparedAppend {
  batch: NewMessage[] | SerializedBatch;
  /** Per message, whether it ends an assistant turn. */
  turnEnds: boolean[];
  /** The largest usage the batch reports, checked against the session's window before writing. */
  usagePeaks: UsagePeaks;
}

/** Where an append's batch comes from: counted for a model, again if the session's model changed. */
export interface AppendSource {
  /** The batch counted for `modelId`, possibly serialised already. */
  prepare(modelId: string): Promise<PreparedAppend>;
  /** The batch's messages counted for `modelId`: what decides a serialised batch the statement could not. */
  messages(modelId: string): Promise<NewMessage[]>;
}

/**
 * A body the transport parsed and validated: counted on the event loop, in slices. With
 * `keyedIdPrefix` (an `Idempotency-Key`'s, `keyedIdPrefix`) messages without an id get one from it.
 */
export function parsedBody(
  resources: SessionResources,
  messages: z.infer<typeof AppendMessagesBody>['messages'],
  keyedIdPrefix?: string,
): AppendSource {
  const keyed = keyedIds(messages, keyedIdPrefix);
  const count = (modelId: string) =>
    refusingMedia(
      prepareMessages(keyed, resources.tokenizerFor(modelId), resources.clock(), {
        mediaFamily: mediaFamilyOf(modelId),
      }),
    );
  return {
    prepare: async (modelId) => parsedBatch(await count(modelId)),
    messages: count,
  };
}

/**
 * A large body left unparsed: parsed, validated, counted and serialised by the worker thread. The
 * event loop touches its text only for a batch the one statement cannot decide (a re-post, a call
 * stored unfinished: it parses the body itself then), or when the session's counter is not a
 * known encoding (a test's).
 */
export function unparsedBody(
  resources: SessionResources,
  thread: AppendBodyThread,
  body: Uint8Array[],
  keyedIdPrefix?: string,
): AppendSource {
  let segments = body;
  const now = resources.clock();
  const onTheEventLoop = (modelId: string) => {
    const text = Buffer.concat(segments).toString('utf8');
    const { messages } = AppendMessagesBody.parse(JSON.parse(text.replace(/^\uFEFF/, '')));
    return refusingMedia(
      prepareMessages(keyedIds(messages, keyedIdPrefix), resources.tokenizerFor(modelId), now, {
        mediaFamily: mediaFamilyOf(modelId),
      }),
    );
  };
  return {
    prepare: async (modelId) => {
      const encoding = encodingOf(resources.tokenizerFor(modelId));
      if (!encoding) return parsedBatch(await onTheEventLoop(modelId));
      const answer = await thread.prepare(segments, encoding, now, keyedIdPrefix, mediaFamilyOf(modelId));
      segments = [answer.bytes];
      const { outcome } = answer;
      switch (outcome.kind) {
        case 'invalid-json':
          throw new UnparsableBody();
        case 'invalid':
          throw InvalidInput.atPointers(
            'body',
            outcome.issues.map((issue) => ({
              instancePath: `/${issue.path.join('/')}`,
              message: issue.message,
            })),
          );
        case 'undecidable':
          return parsedBatch(await onTheEventLoop(modelId));
        case 'serialized':
          return { batch: outcome.batch, turnEnds: outcome.turnEnds, usagePeaks: outcome.usagePeaks };
      }
    },
    messages: onTheEventLoop,
  };
}

/** {@link withKeyedIds}, its refusal as the validator's. */
function keyedIds<Message extends { id?: string | undefined }>(
  messages: Message[],
  prefix: string | undefined,
): Message[] {
  try {
    return withKeyedIds(messages, prefix);
  } catch (error) {
    if (!(error instanceof KeyedIdTaken)) throw error;
    throw InvalidInput.ofIssues([{ path: `body.messages.${error.index}.id`, message: error.message }]);
  }
}

function parsedBatch(batch: NewMessage[]): PreparedAppend {
  return {
    batch,
    turnEnds: batch.map((m) => finishesTurn(m.role, m.finish)),
    usagePeaks: usagePeaks(batch.map((m) => m.usage)),
  };
}

/** The encoding of a tokenizer of @compactor/tokenizer; undefined for any other counter. */
function encodingOf(counter: object): EncodingName | undefined {
  const encoding = (counter as { encoding?: unknown }).encoding;
  return ENCODING_NAMES.includes(encoding as EncodingName) ? (encoding as EncodingName) : undefined;
}
