import { describe, expect, it } from 'vitest';
import { EnvError, parseApiKeys, parseEnv, tenantLimitSettings } from './env';
import { TENANT_LIMIT_DEFAULTS } from './services/tenant-limits';

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
