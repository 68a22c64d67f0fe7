import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseOptions, UsageError } from './options';
import { resolveVariants } from './variants';

describe('parseOptions', () => {
  it('reads files, repeated policies and models, and defaults the rest', () => {
    const options = parseOptions(
      ['a.jsonl', '--policy', 'opal', '--policy=klaude', 'b.jsonl', '--summarizer-model', 'm1'],
      {},
    );
    expect(options).toMatchObject({
      files: ['a.jsonl', 'b.jsonl'],
      policies: ['opal', 'klaude'],
      summarizerModels: ['m1'],
      window: 32_000,
      concurrency: 4,
      outDir: 'replay-report',
      usage: 'rescale',
      remote: null,
      provider: null,
      placement: {
        database: expect.stringMatching(/^compactor_replay_\d{14}_[0-9a-f]{4}$/),
        queuePrefix: expect.stringMatching(/^\{compactor-replay-\d{14}-[0-9a-f]{4}\}$/),
        perRun: { database: true, queuePrefix: true },
      },
    });
  });

  it('takes the embedded database and queue prefix from the options, else the environment', () => {
    const env = { REPLAY_DATABASE: 'replay_env', REPLAY_QUEUE_PREFIX: '{replay-env}' };
    expect(parseOptions(['a'], env).placement).toEqual({
      database: 'replay_env',
      queuePrefix: '{replay-env}',
      perRun: { database: false, queuePrefix: false },
    });
    expect(
      parseOptions(['a', '--database', 'replay_mine', '--queue-prefix', '{mine}'], env).placement,
    ).toEqual({
      database: 'replay_mine',
      queuePrefix: '{mine}',
      perRun: { database: false, queuePrefix: false },
    });
  });

  it('connects to a running Compactor with --url and --key, and sees a provider in the environment', () => {
    const options = parseOptions(['a', '--url', 'http://h:3000/', '--key', 'k'], {
      OPENAI_API_KEY: 'sk',
      LLM_SUMMARIZER_MODEL: 'gpt-x',
    });
    expect(options.remote).toEqual({ url: 'http://h:3000', key: 'k' });
    expect(options.provider).toEqual({ baseUrl: null, model: 'gpt-x' });
  });

  it.each([
    [[], 'name at least one transcript file'],
    [['a', '--window', 'big'], '--window must be an integer from 1000 to 10000000, got big'],
    [['a', '--bogus'], 'unknown option --bogus'],
    [['a', '--usage', 'keep'], '--usage must be rescale or drop, got keep'],
    [['a', '--key', 'k'], '--key goes with --url'],
    [['a', '--out'], '--out needs a value'],
    [
      ['a', '--database', 'compactor'],
      '--database (REPLAY_DATABASE): compactor is the database DATABASE_URL names; this one is dropped and recreated, choose another',
    ],
    [
      ['a', '--database', 'template1'],
      "--database (REPLAY_DATABASE): template1 is the server's own database, choose another",
    ],
    [
      ['a', '--url', 'http://h:3000', '--database', 'x'],
      "--database and --queue-prefix name the embedded Compactor's: not with --url",
    ],
  ])('%j → %s', (argv, message) => {
    expect(() => parseOptions(argv, {})).toThrow(new UsageError(message));
  });

  it('reads the agent model and the two latencies', () => {
    expect(parseOptions(['a'], {})).toMatchObject({ model: null, callLatencyMs: 0, summarizerLatencyMs: 0 });
    expect(
      parseOptions(
        ['a', '--model', 'claude-sonnet-4-5', '--call-latency', '250', '--summarizer-latency=2000'],
        {},
      ),
    ).toMatchObject({ model: 'claude-sonnet-4-5', callLatencyMs: 250, summarizerLatencyMs: 2000 });
  });

  it.each([
    [
      ['a', '--model', 'bad model'],
      {},
      '--model must be a model id (letters, digits, . : / @ _ -), got bad model',
    ],
    [['a', '--call-latency', '-1'], {}, '--call-latency must be an integer from 0 to 600000, got -1'],
    [
      ['a', '--summarizer-latency', '10'],
      { OPENAI_API_KEY: 'sk' },
      '--summarizer-latency sets the embedded LLM stub: not with --url or a provider',
    ],
    [
      ['a', '--summarizer-latency', '10', '--url', 'http://h:1'],
      {},
      '--summarizer-latency sets the embedded LLM stub: not with --url or a provider',
    ],
  ])('%j with %j → %s', (argv, env, message) => {
    expect(() => parseOptions(argv, env)).toThrow(new UsageError(message));
  });
});

describe('resolveVariants', () => {
  it('crosses policies with models and labels them', () => {
    const variants = resolveVariants(['opencode', 'topic'], ['a', 'b']);
    expect(variants.map((v) => v.label)).toEqual(['opencode · a', 'opencode · b', 'topic · a', 'topic · b']);
    expect(variants[2]).toMatchObject({ policy: { preset: 'topic' }, summarizerModel: 'a' });
  });

  it('reads a policy file and validates it with core', () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-policy-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(
      join(dir, 'tight.json'),
      JSON.stringify({ preset: 'opal', pruning: { protectTokens: 1000 } }),
    );
    writeFileSync(join(dir, 'bad.json'), JSON.stringify({ pruning: { protect: 1 } }));
    expect(resolveVariants([join(dir, 'tight.json')], [])).toEqual([
      {
        label: 'tight.json',
        policyLabel: 'tight.json',
        policy: { preset: 'opal', pruning: { protectTokens: 1000 } },
        summarizerModel: null,
      },
    ]);
    expect(() => resolveVariants([join(dir, 'bad.json')], [])).toThrow(/--policy bad.json: .*protect/s);
    expect(() => resolveVariants(['nope'], [])).toThrow(
      '--policy nope: not a preset (default, opencode, opal, klaude, topic) nor a .json file',
    );
  });

  it('is the default policy when none is given', () => {
    expect(resolveVariants([], [])).toEqual([
      { label: 'default', policyLabel: 'default', policy: {}, summarizerModel: null },
    ]);
  });
});
