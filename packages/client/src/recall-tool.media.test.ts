/**
 * The recall tool asks for an image by the media id its marker names: the tool offers `mediaId`,
 * a call with one becomes a media request (alone, and only a media id's form), and an id no stored
 * part holds is answered in the tool message for the model to read.
 */
import { describe, expect, it } from 'vitest';
import { RECALL_TOOL, type RecallResponse } from '@compactor/contract';
import { CompactorApiError } from './errors.js';
import {
  executeRecallToolCall,
  INVALID_RECALL_ARGUMENTS,
  mediaNotFoundText,
  recallQueryOf,
  type RecallRequest,
} from './recall-tool.js';

const MEDIA_ID = '9f2c4e1b7a3d5c60';
const call = (args: unknown) => ({
  id: 'call_m',
  function: { name: 'recall', arguments: JSON.stringify(args) },
});

describe('the recall tool asks for an image by media id', () => {
  it('is offered with mediaId, and turns a mediaId call into a media request', () => {
    expect(RECALL_TOOL.function.description).toContain('mediaId');
    expect(RECALL_TOOL.function.parameters).toMatchObject({
      properties: { mediaId: { type: 'string', pattern: '^[0-9a-f]{16,64}$' } },
    });
    expect(recallQueryOf(JSON.stringify({ mediaId: MEDIA_ID }))).toEqual({ mediaId: MEDIA_ID });
    expect(recallQueryOf(JSON.stringify({ mediaId: MEDIA_ID, callId: 'c1' }))).toBeNull();
    expect(recallQueryOf(JSON.stringify({ mediaId: MEDIA_ID, limit: 2 }))).toBeNull();
    expect(recallQueryOf(JSON.stringify({ mediaId: 'NOT-HEX' }))).toBeNull();
    expect(recallQueryOf(JSON.stringify({ mediaId: 'abc' }))).toBeNull();
  });

  it('answers the media, an unknown media id in the text, and other failures by throwing', async () => {
    const asked: RecallRequest[] = [];
    const media: RecallResponse = {
      kind: 'media',
      mediaId: `${MEDIA_ID}${'0'.repeat(48)}`,
      messageId: 'm_3',
      seq: 3,
      callId: 'toolu_1',
      part: { type: 'file', mime: 'image/png', filename: null, url: 'data:image/png;base64,AAAA' },
      bytes: 3,
      width: 1,
      height: 1,
      tokens: 85,
    };
    const found = await executeRecallToolCall(
      async (query) => {
        asked.push(query);
        return media;
      },
      call({ mediaId: MEDIA_ID }),
    );
    expect(asked).toEqual([{ mediaId: MEDIA_ID }]);
    expect(found).toEqual({
      role: 'tool',
      tool_call_id: 'call_m',
      content: `media ${MEDIA_ID}: image/png, 3 bytes, message m_3`,
    });

    const missing = await executeRecallToolCall(
      async () => {
        throw new CompactorApiError(404, 'not_found', 'media not found', null, 'GET recall');
      },
      call({ mediaId: MEDIA_ID }),
    );
    expect(missing.content).toBe(mediaNotFoundText(MEDIA_ID));
    expect(missing.content).toContain(MEDIA_ID);

    const refused = await executeRecallToolCall(
      async () => {
        throw new CompactorApiError(400, 'validation_error', 'bad', null, 'GET recall');
      },
      call({ mediaId: MEDIA_ID }),
    );
    expect(refused.content).toBe(INVALID_RECALL_ARGUMENTS);

    const failing = executeRecallToolCall(
      async () => {
        throw new CompactorApiError(503, 'unavailable', 'down', null, 'GET recall');
      },
      call({ mediaId: MEDIA_ID }),
    );
    await expect(failing).rejects.toMatchObject({ status: 503 });
  });
});
