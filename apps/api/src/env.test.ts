import { describe, expect, it } from 'vitest';
import {
  dropInSettings,
  EnvError,
  openStartRefusal,
  parseApiKeys,
  parseEnv,
  tenantLimitSettings,
} from './env';
import { TENANT_LIMIT_DEFAULTS } from '@compactor/sessions';

describe('parseEnv', () => {
  it('applies the documented defaults', () => {
    expect(parseEnv({})).toMatchObject({
      PORT: 3000,
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/compactor',
      REDIS_URL: 'redis://127.0.0.1:6379',
      API_KEYS: '',
      MIGRATE_ON_START: true,
      TOKENIZER_ENCODING: 'auto',
      QUEUE_PREFIX: '{compactor}',
    });
  });

  it('caps each tenant by default, generously, with the same numbers the server defaults to', () => {
    const env = parseEnv({});
    expect(env).toMatchObject({
      TENANT_MAX_EVENT_STREAMS: 100,
      TENANT_MAX_ACTIVE_COMPACTIONS: 20,
      TENANT_SESSION_CREATE_RATE: 600,
    });
    expect(tenantLimitSettings(env)).toEqual(TENANT_LIMIT_DEFAULTS);
  });

  it('takes 0 as "no limit" for the tenant caps, and refuses negative or fractional ones', () => {
    const off = {
      TENANT_MAX_EVENT_STREAMS: '0',
      TENANT_MAX_ACTIVE_COMPACTIONS: '0',
      TENANT_SESSION_CREATE_RATE: '0',
    };
    expect(tenantLimitSettings(parseEnv(off))).toEqual({
      maxEventStreams: 0,
      maxActiveCompactions: 0,
      sessionCreatesPerMinute: 0,
    });
    expect(() => parseEnv({ TENANT_MAX_EVENT_STREAMS: '-1' })).toThrow(/TENANT_MAX_EVENT_STREAMS/);
    expect(() => parseEnv({ TENANT_MAX_ACTIVE_COMPACTIONS: '2.5' })).toThrow(/TENANT_MAX_ACTIVE_COMPACTIONS/);
    expect(() => parseEnv({ TENANT_SESSION_CREATE_RATE: 'lots' })).toThrow(/TENANT_SESSION_CREATE_RATE/);
  });

  it('coerces and validates values', () => {
    expect(parseEnv({ PORT: '8080', MIGRATE_ON_START: 'false' })).toMatchObject({
      PORT: 8080,
      MIGRATE_ON_START: false,
    });
  });

  it('names every bad variable in one error', () => {
    expect(() => parseEnv({ PORT: 'eighty', DATABASE_URL: 'nope' })).toThrow(EnvError);
    expect(() => parseEnv({ PORT: 'eighty', DATABASE_URL: 'nope' })).toThrow(
      /PORT[\s\S]*DATABASE_URL|DATABASE_URL[\s\S]*PORT/,
    );
  });
});

describe('drop-in upstreams', () => {
  it('has none by default (the routes answer 503), waits 10 s for a compaction, and takes no client key', () => {
    expect(dropInSettings(parseEnv({}))).toEqual({
      openai: null,
      anthropic: null,
      tenantUpstreams: new Map(),
      passClientKey: false,
      compactionWaitMs: 10_000,
      upstreamIdleMs: 60_000,
    });
    expect(dropInSettings(parseEnv({ UPSTREAM_OPENAI_BASE_URL: '' })).openai).toBeNull();
  });

  it('reads each upstream with its key, the client-key switch and the wait', () => {
    const env = parseEnv({
      UPSTREAM_OPENAI_BASE_URL: 'http://127.0.0.1:4010/v1',
      UPSTREAM_OPENAI_API_KEY: 'sk-local',
      UPSTREAM_ANTHROPIC_BASE_URL: 'https://api.anthropic.com',
      DROPIN_PASS_CLIENT_KEY: 'true',
      DROPIN_COMPACTION_WAIT_MS: '2500',
      DROPIN_UPSTREAM_IDLE_MS: '15000',
    });
    expect(dropInSettings(env)).toEqual({
      openai: { baseURL: 'http://127.0.0.1:4010/v1', apiKey: 'sk-local' },
      anthropic: { baseURL: 'https://api.anthropic.com', apiKey: '' },
      tenantUpstreams: new Map(),
      passClientKey: true,
      compactionWaitMs: 2500,
      upstreamIdleMs: 15_000,
    });
  });

  it('refuses a base URL that is no URL and a negative wait', () => {
    expect(() => parseEnv({ UPSTREAM_OPENAI_BASE_URL: 'localhost:4010' })).toThrow(
      /UPSTREAM_OPENAI_BASE_URL/,
    );
    expect(() => parseEnv({ DROPIN_COMPACTION_WAIT_MS: '-1' })).toThrow(/DROPIN_COMPACTION_WAIT_MS/);
    expect(() => parseEnv({ DROPIN_UPSTREAM_IDLE_MS: '1.5' })).toThrow(/DROPIN_UPSTREAM_IDLE_MS/);
  });
});

describe('METRICS_PORT', () => {
  it('is unset by default and when empty, a port when set, and never PORT itself', () => {
    expect(parseEnv({}).METRICS_PORT).toBeUndefined();
    expect(parseEnv({ METRICS_PORT: '' }).METRICS_PORT).toBeUndefined();
    expect(parseEnv({ METRICS_PORT: '9100' }).METRICS_PORT).toBe(9100);
    expect(() => parseEnv({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(
      /METRICS_PORT must differ from PORT/,
    );
    expect(() => parseEnv({ METRICS_PORT: '65536' })).toThrow(/METRICS_PORT/);
  });
});

describe('TRUST_PROXY', () => {
  it('trusts no proxy by default, and takes true, false or a list of addresses and CIDR ranges', () => {
    expect(parseEnv({}).TRUST_PROXY).toBe(false);
    expect(parseEnv({ TRUST_PROXY: '' }).TRUST_PROXY).toBe(false);
    expect(parseEnv({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(parseEnv({ TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    expect(parseEnv({ TRUST_PROXY: ' 10.0.0.0/8, 127.0.0.1,::1 ' }).TRUST_PROXY).toBe(
      '10.0.0.0/8,127.0.0.1,::1',
    );
    expect(parseEnv({ TRUST_PROXY: 'fd00::/8' }).TRUST_PROXY).toBe('fd00::/8');
  });

  it('refuses anything else, naming the variable', () => {
    for (const TRUST_PROXY of ['yes please', '10.0.0.0/8,proxy.internal', '2', '10.0.0.1;rm'])
      expect(() => parseEnv({ TRUST_PROXY }), TRUST_PROXY).toThrow(/TRUST_PROXY/);
  });
});

describe('ADMIN_TOKEN', () => {
  const production = { NODE_ENV: 'production' };
  const random = 'f3a9c1d07b2e4a6890c5d1e2f3a4b5c6';

  it("refuses the manifests' placeholders and short tokens in production, naming the variable", () => {
    for (const ADMIN_TOKEN of [
      'change-me-to-16-or-more-characters',
      'change-me-to-32-or-more-random-characters',
      'replace_me_with_a_real_admin_token_now',
      'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
      'a-sixteen-chars!',
      random.slice(0, 31),
    ]) {
      expect(() => parseEnv({ ...production, ADMIN_TOKEN }), ADMIN_TOKEN).toThrow(/ADMIN_TOKEN/);
    }
  });

  it('takes a random token of 32 characters or more in production', () => {
    expect(parseEnv({ ...production, ADMIN_TOKEN: random }).ADMIN_TOKEN).toBe(random);
    expect(parseEnv(production).ADMIN_TOKEN).toBeUndefined();
  });

  it('keeps the 16-character floor elsewhere (development, tests, the demo)', () => {
    expect(parseEnv({ ADMIN_TOKEN: 'a-sixteen-chars!' }).ADMIN_TOKEN).toBe('a-sixteen-chars!');
    expect(() => parseEnv({ ADMIN_TOKEN: 'short' })).toThrow(/at least 16/);
  });
});

describe('openStartRefusal', () => {
  const production = { NODE_ENV: 'production' };

  it('refuses production with no key anywhere, naming API_KEYS and ALLOW_UNAUTHENTICATED', () => {
    for (const API_KEYS of [undefined, '', ' , ']) {
      const refusal = openStartRefusal(parseEnv({ ...production, API_KEYS }), false);
      expect(refusal).toMatch(/API_KEYS/);
      expect(refusal).toMatch(/ALLOW_UNAUTHENTICATED=true/);
    }
  });

  it('lets production start with keys in API_KEYS or the keys table, or open when allowed on purpose', () => {
    expect(openStartRefusal(parseEnv({ ...production, API_KEYS: 'acme:k1' }), false)).toBeNull();
    expect(openStartRefusal(parseEnv(production), true)).toBeNull();
    expect(openStartRefusal(parseEnv({ ...production, ALLOW_UNAUTHENTICATED: 'true' }), false)).toBeNull();
    expect(
      openStartRefusal(parseEnv({ ...production, ALLOW_UNAUTHENTICATED: 'false' }), false),
    ).not.toBeNull();
    expect(() => parseEnv({ ALLOW_UNAUTHENTICATED: 'sure' })).toThrow(/ALLOW_UNAUTHENTICATED/);
  });

  it('leaves development, tests and an unset NODE_ENV open as before', () => {
    for (const NODE_ENV of [undefined, 'development', 'test']) {
      expect(openStartRefusal(parseEnv({ NODE_ENV }), false)).toBeNull();
    }
  });
});

describe('parseApiKeys', () => {
  it('maps keys to tenants', () => {
    expect([...parseApiKeys('acme:k1, globex:k2 ,acme:k3')]).toEqual([
      ['k1', 'acme'],
      ['k2', 'globex'],
      ['k3', 'acme'],
    ]);
    expect(parseApiKeys('').size).toBe(0);
  });

  it.each(['nokey', ':k', 'tenant:'])('rejects %s', (value) => {
    expect(() => parseApiKeys(value)).toThrow(EnvError);
  });
});
