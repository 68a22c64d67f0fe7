/**
 * Bounded fuzz suite for the HTTP API (issue 9), through `useTestApi()` (real Postgres and Redis).
 * For every route but the event stream:
 *   1. never a 5xx (and every 4xx is the `{ error: { code, message } }` body);
 *   2. a 4xx on a write route writes nothing (`api.counts()` unchanged);
 *   3. a 2xx round-trips what was sent where a read shows it.
 * The harness that sends and checks is test-support/fuzz-harness.ts. Generators
 * (test-support/fuzz.ts, fuzz-bodies.ts) mix valid bodies with mutated fields, hostile strings
 * (NUL, lone surrogates, astral, NBSP), numbers around 2^31-1, out-of-range dates, JSON 100 and
 * 10,000 deep, 10,000 wide, ids of 199/200/201/1000 characters, wrong content types and non-JSON
 * bodies. Bodies 100,000 wide and deep are two fixed cases, in extreme-bodies.test.ts.
 *
 * The seed is fixed (CI is deterministic); fast-check prints seed and path on a failure.
 * A longer run: `FUZZ_RUNS=20 npx vitest run apps/api/src/fuzz.test.ts` (runs × 20), and
 * `FUZZ_SEED=<n>` for another sequence.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApi } from './test-support/api';
import {
  FUZZ_RUNS as RUNS,
  fuzzHarness,
  fuzzParams as params,
  isOk as ok,
  type Method,
} from './test-support/fuzz-harness';
import {
  asJson,
  asSent,
  freshId,
  hostileId,
  hostileNumber,
  hostileString,
  pathSegment,
  validCount,
} from './test-support/fuzz';
import {
  appendBody,
  FINISH,
  key,
  mutated,
  nonEmptyText,
  onTheWire,
  SESSION_PATHS,
  shown,
  target,
  text,
  textPart,
  toolPart,
  validSessionBody,
  validUsage,
} from './test-support/fuzz-bodies';
import { newSession } from './test-support/helpers';

// FUZZ_RUNS=10 creates sessions faster than the default rate allows one tenant (the rate has
// its own test, sessions.rate.test.ts): here every create reaches the route's own checks.
const api = useTestApi({ server: { tenantLimits: { sessionCreatesPerMinute: 0 } } });

/** What a fuzzed body holds: anything, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- fuzzed bodies have no static shape
type Loose = any;

const { stats, send, check, inGroup, report } = fuzzHarness(api);

describe(
  'fuzz: the HTTP API never answers 5xx, rejects without writing, and stores what it accepts',
  { timeout: 120_000 * RUNS },
  () => {
    const base = { session: 'fz-base', compaction: '' };

    beforeAll(async () => {
      await newSession(api, base.session, { metadata: { seed: 1 } });
      const compaction = await api.request({
        method: 'POST',
        url: `/v1/sessions/${base.session}/compactions`,
      });
      expect(compaction.statusCode, compaction.body).toBe(202);
      base.compaction = compaction.json().id;
    });

    afterAll(report);

    it('POST /v1/sessions, read back with GET /v1/sessions/:id', async () => {
      inGroup('POST /v1/sessions, read back with GET /v1/sessions/:id');
      await fc.assert(
        fc.asyncProperty(
          onTheWire(mutated(validSessionBody, SESSION_PATHS)),
          key,
          async ({ body, wire }, k) => {
            const response = await check({ method: 'POST', url: '/v1/sessions', wire, key: k });
            if (!ok(response) || body === undefined) return;
            const sent = asSent(body) as Record<string, Loose>;
            const created = response.json();
            if (sent.id !== undefined) expect(created.id).toBe(sent.id);
            const read = await check({
              method: 'GET',
              url: `/v1/sessions/${pathSegment(created.id, false)}`,
              key: k,
            });
            expect(read.statusCode).toBe(200);
            const session = read.json();
            expect(session.id).toBe(created.id);
            expect(session.model.id).toBe(sent.model.id);
            for (const field of ['provider', 'contextWindow', 'maxOutputTokens', 'inputLimit'])
              if (sent.model[field] !== undefined) expect(session.model[field]).toEqual(sent.model[field]);
            expect(session.metadata).toEqual(sent.metadata ?? {});
            expect(session.policy).toEqual(sent.policy ?? {});
          },
        ),
        params(200),
      );
    });

    it('GET, PATCH and DELETE /v1/sessions/:id', async () => {
      inGroup('GET, PATCH and DELETE /v1/sessions/:id');
      const patchBody = mutated(
        fc.record(
          {
            model: fc.record({ contextWindow: validCount, id: nonEmptyText }, { requiredKeys: [] }),
            policy: fc.constantFrom({}, { auto: true }, { pruning: { protectTokens: 20_000 } }),
            metadata: fc.dictionary(
              fc.string({ maxLength: 4 }),
              fc.oneof(fc.constant(null), fc.jsonValue({ maxDepth: 2 })),
            ),
          },
          { requiredKeys: [] },
        ),
        [['model'], ['model', 'contextWindow'], ['model', 'id'], ['policy'], ['metadata'], ['metadata', 'k']],
      );
      await fc.assert(
        fc.asyncProperty(
          target(() => base.session),
          fc.constantFrom<Method>('GET', 'PATCH', 'PATCH', 'DELETE'),
          onTheWire(patchBody),
          key,
          async (t, method, { body, wire }, k) => {
            let { id, segment } = t;
            if (method === 'DELETE' && id === base.session) {
              // Never delete the shared session: delete one made for it.
              id = `fz-del-${stats.cases}`;
              segment = id;
              await newSession(api, id);
            }
            const current =
              method === 'PATCH'
                ? await send({ method: 'GET', url: `/v1/sessions/${segment}`, key: k })
                : undefined;
            const before = current && ok(current) ? current.json() : undefined;
            const response = await check({
              method,
              url: `/v1/sessions/${segment}`,
              ...(method === 'PATCH' ? { wire } : {}),
              key: k,
            });
            if (!ok(response)) return;
            const read = await send({ method: 'GET', url: `/v1/sessions/${segment}`, key: k });
            if (method === 'DELETE') {
              expect(response.statusCode).toBe(204);
              expect(read.statusCode).toBe(404);
              return;
            }
            expect(read.statusCode).toBe(200);
            expect(read.json().id).toBe(id);
            if (method === 'PATCH' && body !== undefined && before) {
              const sent = asSent(body) as Record<string, Loose>;
              const expected = { ...before.metadata };
              for (const [name, value] of Object.entries(sent.metadata ?? {})) {
                if (value === null) delete expected[name];
                else expected[name] = value;
              }
              const after = read.json();
              expect(after.metadata).toEqual(expected);
              if (sent.model?.id !== undefined) expect(after.model.id).toBe(sent.model.id);
              if (sent.model?.contextWindow !== undefined)
                expect(after.model.contextWindow).toBe(sent.model.contextWindow);
            }
          },
        ),
        params(200),
      );
    });

    it('POST /v1/sessions/:id/messages, read back with GET /v1/sessions/:id/messages', async () => {
      inGroup('POST /v1/sessions/:id/messages, read back with GET /v1/sessions/:id/messages');
      const session = 'fz-msg';
      await newSession(api, session);
      await fc.assert(
        fc.asyncProperty(
          target(() => session),
          onTheWire(appendBody),
          key,
          async ({ segment }, { body, wire }, k) => {
            const response = await check({
              method: 'POST',
              url: `/v1/sessions/${segment}/messages`,
              wire,
              key: k,
            });
            if (!ok(response) || body === undefined) return;
            expect(response.statusCode).toBe(201);
            const sent = (asSent(body) as { messages: Record<string, Loose>[] }).messages;
            const results = response.json().messages as { id: string; seq: number }[];
            expect(results).toHaveLength(sent.length);
            const first = Math.min(...results.map((r) => r.seq));
            const last = Math.max(...results.map((r) => r.seq));
            const page = await check({
              method: 'GET',
              url: `/v1/sessions/${segment}/messages?afterSeq=${first - 1}&limit=${Math.min(1000, last - first + 1)}`,
              key: k,
            });
            const bySeq = new Map((page.json().messages as Record<string, Loose>[]).map((m) => [m.seq, m]));
            results.forEach((result, i) => {
              const stored = bySeq.get(result.seq);
              expect(stored, `seq ${result.seq}`).toBeDefined();
              const message = sent[i]!;
              if (message.id !== undefined) expect(stored!.id).toBe(message.id);
              expect(result.id).toBe(stored!.id);
              expect(shown(stored!)).toEqual(shown({ ...message, metadata: message.metadata ?? {} }));
              if (message.finish !== undefined) expect(stored!.finish).toBe(message.finish);
              if (message.createdAt !== undefined)
                expect(Math.abs(Date.parse(stored!.createdAt) - Date.parse(message.createdAt))).toBeLessThan(
                  1,
                );
            });
          },
        ),
        params(250),
      );
    });

    it('PATCH /v1/sessions/:id/messages/:messageId', async () => {
      inGroup('PATCH /v1/sessions/:id/messages/:messageId');
      const session = 'fz-patch';
      await newSession(api, session);
      const patchBody = mutated(
        fc.record(
          {
            finish: fc.option(fc.constantFrom(...FINISH)),
            usage: fc.option(validUsage),
            error: fc.option(fc.oneof(text, fc.record({ message: text, code: text }))),
            parts: fc.array(fc.oneof(textPart, toolPart), { maxLength: 3 }),
          },
          { requiredKeys: [] },
        ),
        [
          ['finish'],
          ['usage'],
          ['usage', 'input'],
          ['usage', 'output'],
          ['error'],
          ['parts'],
          ['parts', 0],
          ['parts', 0, 'text'],
          ['parts', 0, 'input'],
          ['parts', 0, 'status'],
        ],
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: hostileId('fz-pm') }),
          fc.boolean(),
          onTheWire(patchBody),
          key,
          async (messageId, raw, { body, wire }, k) => {
            let id = messageId;
            if (id === null) {
              id = `fz-pm-${stats.cases}`;
              const created = await send({
                method: 'POST',
                url: `/v1/sessions/${session}/messages`,
                wire: asJson({
                  messages: [
                    {
                      id,
                      role: 'assistant',
                      parts: [
                        { type: 'tool', callId: `c-${id}`, tool: 'read', status: 'pending', input: {} },
                      ],
                    },
                  ],
                }),
              });
              expect(created.statusCode, created.body).toBe(201);
            }
            const url = `/v1/sessions/${session}/messages/${pathSegment(id, raw)}`;
            const response = await check({ method: 'PATCH', url, wire, key: k });
            if (!ok(response) || body === undefined) return;
            const sent = asSent(body) as Record<string, Loose>;
            const page = await send({
              method: 'GET',
              url: `/v1/sessions/${session}/messages?afterSeq=${response.json().seq - 1}&limit=1`,
            });
            const stored = page.json().messages[0];
            expect(stored.id).toBe(id);
            if (sent.finish !== undefined) expect(stored.finish).toBe(sent.finish);
            if (sent.usage !== undefined)
              expect(stored.usage).toEqual(
                sent.usage && { reasoning: 0, cacheRead: 0, cacheWrite: 0, ...sent.usage },
              );
            for (const part of sent.parts ?? []) {
              if (part.type === 'text')
                expect(stored.parts).toContainEqual(
                  expect.objectContaining({ type: 'text', text: part.text }),
                );
            }
          },
        ),
        params(150),
      );
    });

    it('GET history, context and compaction lists with hostile queries', async () => {
      inGroup('GET history, context and compaction lists with hostile queries');
      const query = fc
        .array(
          fc.tuple(
            fc.constantFrom('afterSeq', 'limit', 'format', 'before', 'x', 'limit[]', ''),
            fc.oneof(
              hostileNumber,
              hostileString,
              hostileId('fz-q'),
              fc.constantFrom('native', 'openai', 'NATIVE', '1', '20', '100', '101', '1000', '1001'),
            ),
          ),
          { maxLength: 3 },
        )
        .map((pairs) =>
          pairs
            .map(
              ([name, value]) =>
                `${name}=${encodeURIComponent(String(value).replace(/[\uD800-\uDFFF]/g, '\uFFFD'))}`,
            )
            .join('&'),
        );
      await fc.assert(
        fc.asyncProperty(
          target(() => base.session),
          fc.constantFrom('messages', 'context', 'compactions'),
          query,
          fc.boolean(),
          key,
          async ({ segment }, route, q, withBefore, k) => {
            const extra = route === 'compactions' && withBefore ? `&before=${base.compaction}` : '';
            const response = await check({
              method: 'GET',
              url: `/v1/sessions/${segment}/${route}?${q}${extra}`,
              key: k,
            });
            if (!ok(response)) return;
            const page = response.json();
            const limit = Number(new URLSearchParams(q).get('limit') ?? (route === 'compactions' ? 20 : 100));
            if (route === 'messages') expect(page.messages.length).toBeLessThanOrEqual(limit);
            if (route === 'compactions') expect(page.compactions.length).toBeLessThanOrEqual(limit);
          },
        ),
        params(250),
      );
    });

    it('GET /v1/compactions/:id', async () => {
      inGroup('GET /v1/compactions/:id');
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.constant(null), hostileId('fz-c')),
          fc.boolean(),
          key,
          async (id, raw, k) => {
            const compaction = id ?? base.compaction;
            const response = await check({
              method: 'GET',
              url: `/v1/compactions/${pathSegment(compaction, raw)}`,
              key: k,
            });
            if (ok(response))
              expect(response.json()).toMatchObject({ id: compaction, sessionId: base.session });
          },
        ),
        params(100),
      );
    });

    it('POST compactions, prune and overflow', async () => {
      inGroup('POST compactions, prune and overflow');
      const compactionBody = mutated(
        fc.record(
          {
            keepRecentTokens: fc.integer({ min: 1, max: 100_000 }),
            instructions: text,
            strategy: fc.constantFrom('summarize', 'truncate', 'topic'),
          },
          { requiredKeys: [] },
        ),
        [['keepRecentTokens'], ['instructions'], ['strategy']],
      );
      const overflowBody = mutated(
        fc.record(
          {
            error: fc.option(
              fc.oneof(
                text,
                fc.constantFrom(
                  'prompt is too long: 210000 tokens > 200000 maximum',
                  'context_length_exceeded',
                ),
              ),
            ),
            status: fc.option(fc.constantFrom(100, 400, 413, 500, 599)),
            body: fc.option(text),
            usage: fc.option(validUsage),
            finish: fc.option(fc.constantFrom(...FINISH)),
          },
          { requiredKeys: [] },
        ),
        [['error'], ['status'], ['body'], ['usage'], ['usage', 'input'], ['finish']],
      );
      const idempotencyKey = fc.option(
        fc.oneof(
          freshId('idem'),
          fc.constantFrom('', ' ', 'k'.repeat(200), 'k'.repeat(201), '\u00A0', 'é', 'same-key'),
        ),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            { weight: 2, arbitrary: fc.constant('fresh') },
            { weight: 1, arbitrary: target(() => base.session).map((t) => t.segment) },
          ),
          fc.constantFrom('compactions', 'prune', 'overflow'),
          onTheWire(compactionBody),
          onTheWire(overflowBody),
          idempotencyKey,
          key,
          async (where, route, compaction, overflow, idem, k) => {
            let segment = where;
            if (where === 'fresh') {
              segment = `fz-cmp-${stats.cases}`;
              await newSession(api, segment);
            }
            const { body, wire } = route === 'overflow' ? overflow : compaction; // prune: the compaction body
            const headers: Record<string, string> =
              route === 'compactions' && idem !== null ? { 'idempotency-key': idem } : {};
            const before = await api.counts();
            const response = await check({
              method: 'POST',
              url: `/v1/sessions/${segment}/${route}`,
              wire,
              headers,
              key: k,
            });
            if (!ok(response)) return;
            if (route === 'prune') {
              expect(response.statusCode).toBe(202);
              expect(response.json().jobId).toEqual(expect.any(String));
              return;
            }
            if (route === 'overflow') {
              const result = response.json();
              if (!result.overflow) expect(await api.counts()).toEqual(before);
              if (result.compaction) {
                const read = await check({
                  method: 'GET',
                  url: `/v1/compactions/${result.compaction.id}`,
                  key: k,
                });
                expect(read.statusCode).toBe(200);
              }
              return;
            }
            const created = response.json();
            const read = await check({ method: 'GET', url: `/v1/compactions/${created.id}`, key: k });
            expect(read.statusCode).toBe(200);
            expect(read.json()).toMatchObject({
              id: created.id,
              strategy: created.strategy,
              keepRecentTokens: created.keepRecentTokens,
            });
            if (response.statusCode === 202 && body !== undefined) {
              const sent = (asSent(body) ?? {}) as Record<string, Loose>;
              if (sent.strategy !== undefined) expect(created.strategy).toBe(sent.strategy);
              expect(created.keepRecentTokens).toBe(sent.keepRecentTokens ?? null);
              expect(created.reason).toBe('manual');
            }
          },
        ),
        params(200),
      );
    });
  },
);
