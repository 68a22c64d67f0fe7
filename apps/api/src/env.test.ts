import { describe, expect, it } from 'vitest';
import { EnvError, parseApiKeys, parseEnv } from './env';

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
